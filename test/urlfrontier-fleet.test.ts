import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { SeenStore } from '../src/index.js';
import { URLFRONTIER_PROTO_PATH } from '../src/urlfrontier/proto.js';
import { NODE_TTL_MS } from '../src/urlfrontier/node-presence.js';
import { redisMissing, startRedisCluster, until } from './helpers/redis-cluster.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';
import { FrontierClient } from './helpers/urlfrontier.js';

const exec = promisify(execFile);

const NEEDS: string | undefined =
  redisMissing() ??
  (spawnSync('/usr/bin/python3', ['-c', 'import grpc, google.protobuf']).status === 0 &&
  spawnSync('protoc', ['--version']).status === 0
    ? undefined
    : 'needs Debian python3-grpcio, python3-protobuf and protobuf-compiler (CI installs them)');

/** The politeness crawl: HOSTS hosts of PAGES pages, a delay of DELAY_S per host, leases long enough to outlive the phase. */
const HOSTS = 8;
const PAGES = 3;
const DELAY_S = 1;
const POLITE_LEASE_S = 120;
/** The kill crawl: no delay, short leases, so that a dead node's URLs come back soon. */
const KILL_HOSTS = 20;
const KILL_PAGES = 3;
const KILL_LEASE_S = 3;

/**
 * Python grpcio clients of the fleet, by subcommand; messages compiled from the shipped .proto by
 * protoc at test time. Each prints JSON on stdout (`crawl` a line per URL as it arrives).
 */
const PROGRAM = String.raw`
import json, sys, threading, time
import grpc
import urlfrontier_pb2 as pb

def channel(port):
    return grpc.insecure_channel("127.0.0.1:" + str(port))
def unary(ch, name, request, reply):
    return ch.unary_unary("/urlfrontier.URLFrontier/" + name, request_serializer=request.SerializeToString, response_deserializer=reply.FromString)(request)
def put(ch, items):
    call = ch.stream_stream("/urlfrontier.URLFrontier/PutURLs", request_serializer=pb.URLItem.SerializeToString, response_deserializer=pb.AckMessage.FromString)
    return [(a.ID, pb.AckMessage.Status.Name(a.status)) for a in call(iter(items))]
def discovered(ch, batches):
    call = ch.stream_stream("/urlfrontier.URLFrontier/PutDiscovered", request_serializer=pb.DiscoveredBatch.SerializeToString, response_deserializer=pb.BatchAck.FromString)
    return [[pb.AckMessage.Status.Name(s) for s in a.statuses] for a in call(iter(batches))]
def get(ch, **params):
    call = ch.unary_stream("/urlfrontier.URLFrontier/GetURLs", request_serializer=pb.GetParams.SerializeToString, response_deserializer=pb.URLInfo.FromString)
    return call(pb.GetParams(**params))
def disc(url, crawl):
    return pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=url, crawlID=crawl)))
def done(url, crawl):
    return pb.URLItem(known=pb.KnownURLItem(info=pb.URLInfo(url=url, crawlID=crawl), refetchable_from_date=0))
def count(ch, crawl):
    return unary(ch, "CountURLs", pb.CountUrlParams(crawlID=crawl), pb.Long).value

cmd, ports, args = sys.argv[1], [int(p) for p in sys.argv[2].split(",")], json.loads(sys.argv[3])
chans = [channel(p) for p in ports]
out = {}
if cmd == "nodes":
    out = [sorted(unary(ch, "ListNodes", pb.Empty(), pb.StringList).values) for ch in chans]
elif cmd == "active":
    # SetActive on node 0 with local as asked; then each node's own state, and node 2's view of the cluster.
    unary(chans[0], "SetActive", pb.Active(state=args["state"], local=args["local"]), pb.Empty)
    out["own"] = [unary(ch, "GetActive", pb.Local(local=True), pb.Boolean).state for ch in chans]
    out["cluster"] = unary(chans[2], "GetActive", pb.Local(local=False), pb.Boolean).state
elif cmd == "put":
    # Node 0 puts the first half, node 1 the whole list as PutDiscovered, node 2 the second half
    # and the first URL again: each URL is new exactly once, whichever node saw it first.
    crawl, urls = args["crawl"], args["urls"]
    half = len(urls) // 2
    unary(chans[0], "SetDelay", pb.QueueDelayParams(key="", delay_requestable=args["delay"], crawlID=crawl), pb.Empty)
    out["put0"] = put(chans[0], [disc(u, crawl) for u in urls[:half]])
    out["disc1"] = discovered(chans[1], [pb.DiscoveredBatch(ID="b", items=[pb.URLInfo(url=u, crawlID=crawl) for u in urls])])
    out["put2"] = put(chans[2], [disc(u, crawl) for u in urls[half:] + urls[:1]])
    out["counts"] = [count(ch, crawl) for ch in chans]
elif cmd == "take":
    # One taker per node, all at once, a queue per call (so that every node gets some), until every URL was handed out once.
    crawl, total = args["crawl"], args["total"]
    taken, lock = [], threading.Lock()
    deadline = time.time() + args["seconds"]
    def taker(i):
        while time.time() < deadline:
            with lock:
                if len(taken) >= total: return
            for info in get(chans[i], crawlID=crawl, max_queues=1, max_urls_per_queue=1, delay_requestable=args["lease"]):
                with lock: taken.append([info.url, i])
            time.sleep(0.02)
    threads = [threading.Thread(target=taker, args=(i,)) for i in range(len(chans))]
    for t in threads: t.start()
    for t in threads: t.join()
    out = taken
elif cmd == "crawl":
    # A crawler bound to one node: prints each URL it is handed, never reports one; dies with the node.
    crawl = args["crawl"]
    try:
        while True:
            for info in get(chans[0], crawlID=crawl, max_queues=2, max_urls_per_queue=1, delay_requestable=args["lease"]):
                print(json.dumps(info.url), flush=True)
            time.sleep(0.05)
    except grpc.RpcError as e:
        print(json.dumps({"error": e.code().name}), flush=True)
    sys.exit(0)
elif cmd == "work":
    # A crawler on one node: takes, reports each URL done through the same node, until the crawl is empty.
    crawl = args["crawl"]
    done_urls, acks = [], []
    deadline = time.time() + args["seconds"]
    while time.time() < deadline:
        urls = [info.url for info in get(chans[0], crawlID=crawl, max_urls_per_queue=1, delay_requestable=args["lease"])]
        if urls:
            acks += put(chans[0], [done(u, crawl) for u in urls])
            done_urls += urls
        elif count(chans[0], crawl) == 0:
            break
        else:
            time.sleep(0.1)
    out = {"done": done_urls, "acks": [s for _, s in acks], "left": count(chans[0], crawl)}
print(json.dumps(out))
`;

interface Node {
  readonly server: RunningServer;
  readonly port: number;
  readonly address: string;
}

/** `seenstore serve --urlfrontier-port 0` over `location`: its URLFrontier port and the address it registered. */
async function startNode(location: string): Promise<Node> {
  const server = await startServer(location, ['--urlfrontier-port', '0']);
  const line = server.log.find((entry) => entry.includes('"event":"urlfrontier"'));
  assert.ok(line !== undefined, `no urlfrontier line in the log: ${server.log.join('\n')}`);
  const { port, node } = JSON.parse(line) as { port: number; node: string };
  return { server, port, address: node };
}

describe('a fleet: three serve nodes over one Redis Cluster store', { skip: NEEDS }, () => {
  it("lists its nodes, dedups and is polite across them, and survives a node's kill -9", async () => {
    const dir = tempDir();
    await exec('protoc', [
      `--proto_path=${join(URLFRONTIER_PROTO_PATH, '..')}`,
      `--python_out=${dir}`,
      URLFRONTIER_PROTO_PATH,
    ]);
    writeFileSync(join(dir, 'fleet.py'), PROGRAM);
    const python = async <T>(cmd: string, nodes: readonly Node[], args: object): Promise<T> => {
      const { stdout } = await exec(
        '/usr/bin/python3',
        [join(dir, 'fleet.py'), cmd, nodes.map((n) => n.port).join(','), JSON.stringify(args)],
        { cwd: dir },
      );
      return JSON.parse(stdout) as T;
    };
    const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    after(() => cluster.stop());
    const location = cluster.location();
    // startServer stops each by its pid when the file ends, whatever happened.
    const nodes = await Promise.all([startNode(location), startNode(location), startNode(location)]);
    const addresses = nodes.map((node) => node.address).sort();
    assert.deepEqual(addresses, nodes.map((node) => `127.0.0.1:${node.port}`).sort(), 'each node registers bind:port');
    assert.deepEqual(await python('nodes', nodes, {}), [addresses, addresses, addresses], 'every node lists all three');

    // SetActive's state is a node's own; local: false (proto3's default) sets it on every node, and
    // GetActive with local: false is true only when every node is active.
    type Active = { own: boolean[]; cluster: boolean };
    assert.deepEqual(await python<Active>('active', nodes, { state: false, local: true }), {
      own: [false, true, true],
      cluster: false,
    });
    assert.deepEqual(await python<Active>('active', nodes, { state: true, local: true }), {
      own: [true, true, true],
      cluster: true,
    });
    assert.deepEqual(await python<Active>('active', nodes, { state: false, local: false }), {
      own: [false, false, false],
      cluster: false,
    });
    assert.deepEqual(await python<Active>('active', nodes, { state: true, local: false }), {
      own: [true, true, true],
      cluster: true,
    });

    // Puts through different nodes dedup globally.
    const urls = Array.from(
      { length: HOSTS * PAGES },
      (_, i) => `http://h${i % HOSTS}.example/${Math.floor(i / HOSTS)}`,
    );
    const half = urls.length / 2;
    const put = await python<{ put0: string[][]; disc1: string[][]; put2: string[][]; counts: number[] }>(
      'put',
      nodes,
      { crawl: 'fleet', urls, delay: DELAY_S },
    );
    assert.ok(
      [...put.put0, ...put.put2].every(([, status]) => status === 'OK'),
      'PutURLs acks every item OK (a seen URL too)',
    );
    assert.deepEqual(
      put.disc1,
      [urls.map((_, i) => (i < half ? 'SKIPPED' : 'OK'))],
      'PutDiscovered through node 1: new exactly where node 0 had not put it',
    );
    assert.deepEqual(
      put.counts,
      [urls.length, urls.length, urls.length],
      'each URL queued once, whichever nodes it came through',
    );

    // Politeness across nodes: one taker per node at once; judged by the take times the store
    // keeps (a lease ends POLITE_LEASE_S after its take, by Redis's one clock).
    const taken = await python<[string, number][]>('take', nodes, {
      crawl: 'fleet',
      total: urls.length,
      lease: POLITE_LEASE_S,
      seconds: 20,
    });
    assert.deepEqual(
      taken.map(([url]) => url).sort(),
      [...urls].sort(),
      'every URL handed out exactly once over the three nodes',
    );
    assert.equal(new Set(taken.map(([, node]) => node)).size, 3, 'every node handed out URLs');
    const store = await SeenStore.open(location);
    const takenAtMs = new Map<string, number[]>();
    try {
      const frontier = store.scope('fleet').frontier();
      for (const [url] of taken) {
        const status = await frontier.urlStatus(url);
        assert.equal(status?.state, 'leased', url);
        const host = new URL(url).host;
        takenAtMs.set(host, [...(takenAtMs.get(host) ?? []), status!.atMs - POLITE_LEASE_S * 1000]);
      }
    } finally {
      await store.close();
    }
    for (const [host, times] of takenAtMs) {
      const sorted = times.sort((a, b) => a - b);
      const gapsMs = sorted.slice(1).map((t, i) => t - sorted[i]!);
      assert.ok(
        gapsMs.every((gap) => gap >= DELAY_S * 1000),
        `${host} handed out twice within its delay: gaps ${gapsMs.join(', ')} ms`,
      );
    }

    // kill -9 of node 2 while its crawler is mid-GetURLs.
    const killUrls = Array.from(
      { length: KILL_HOSTS * KILL_PAGES },
      (_, i) => `http://k${i % KILL_HOSTS}.example/${Math.floor(i / KILL_HOSTS)}`,
    );
    const killPut = await python<{ counts: number[] }>('put', nodes, { crawl: 'kill', urls: killUrls, delay: 0 });
    assert.deepEqual(killPut.counts, [killUrls.length, killUrls.length, killUrls.length]);
    const victim = nodes[2]!;
    const crawler = spawn(
      '/usr/bin/python3',
      [join(dir, 'fleet.py'), 'crawl', String(victim.port), JSON.stringify({ crawl: 'kill', lease: KILL_LEASE_S })],
      { cwd: dir },
    );
    after(() => {
      if (crawler.exitCode === null) crawler.kill('SIGKILL');
    });
    const handedByVictim: string[] = [];
    let crawlerEnd: unknown;
    let pending = '';
    crawler.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const value = JSON.parse(line) as string | { error: string };
        if (typeof value === 'string') handedByVictim.push(value);
        else crawlerEnd = value;
      }
    });
    const crawlerExit = new Promise((resolve) => crawler.once('exit', resolve));
    await until(() => handedByVictim.length >= 10, 'the victim to hand out 10 URLs', 15_000);
    await victim.server.stop('SIGKILL');
    const killedAtMs = Date.now();
    await crawlerExit;
    assert.deepEqual(crawlerEnd, { error: 'UNAVAILABLE' }, 'the crawler on the killed node lost it mid-GetURLs');
    assert.ok(handedByVictim.length < killUrls.length, 'the victim had not handed out everything');

    // The other two keep serving and finish the crawl: the victim's URLs come back after their lease.
    const survivors = nodes.slice(0, 2);
    // Polled with grpc-js from this process: a Python process per poll would load the machine.
    const watcher = new FrontierClient(survivors[0]!.port);
    after(() => watcher.close());
    const dropped = until(
      async () => (await watcher.call<{ values: string[] }>('ListNodes')).values.length === 2,
      'ListNodes to drop the killed node',
      NODE_TTL_MS + 10_000,
    ).then(() => Date.now() - killedAtMs);
    const work = await Promise.all(
      survivors.map((node) =>
        python<{ done: string[]; acks: string[]; left: number }>('work', [node], {
          crawl: 'kill',
          lease: KILL_LEASE_S,
          seconds: 30,
        }),
      ),
    );
    const finished = work.flatMap((w) => w.done);
    assert.ok(
      work.every((w) => w.acks.every((status) => status === 'OK')),
      'every done report acked OK',
    );
    assert.deepEqual(
      [...new Set(finished)].sort(),
      [...killUrls].sort(),
      'every acknowledged URL was handed out and finished through the survivors',
    );
    assert.ok(
      handedByVictim.every((url) => finished.includes(url)),
      'the URLs leased through the killed node came back',
    );
    assert.deepEqual(
      work.map((w) => w.left),
      [0, 0],
    );
    const droppedAfterMs = await dropped;
    assert.ok(droppedAfterMs <= NODE_TTL_MS + 5_000, `dropped ${droppedAfterMs} ms after the kill`);
    const survivorAddresses = survivors.map((node) => node.address).sort();
    assert.deepEqual(await python('nodes', survivors, {}), [survivorAddresses, survivorAddresses]);

    // A graceful stop leaves the list at once.
    assert.deepEqual(await nodes[1]!.server.stop(), { code: 0, signal: null });
    assert.deepEqual(await python('nodes', [nodes[0]!], {}), [[nodes[0]!.address]]);
    await nodes[0]!.server.stop();
  });
});
