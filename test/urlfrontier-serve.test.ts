import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { URLFRONTIER_PROTO_PATH } from '../src/urlfrontier/proto.js';
import { sharedUrls } from './helpers/data.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';
import { discovered, FrontierClient, type Ack } from './helpers/urlfrontier.js';

const exec = promisify(execFile);

const NEEDS_GRPCIO: string | false =
  spawnSync('/usr/bin/python3', ['-c', 'import grpc, google.protobuf']).status === 0 &&
  spawnSync('protoc', ['--version']).status === 0
    ? false
    : 'needs Debian python3-grpcio, python3-protobuf and protobuf-compiler (CI installs them)';

/** `seenstore serve --urlfrontier-port 0` over `store`, and the port it logged. */
async function serveFrontier(
  store: string,
  args: readonly string[] = [],
): Promise<{ server: RunningServer; port: number }> {
  const server = await startServer(store, ['--urlfrontier-port', '0', ...args]);
  const line = server.log.find((entry) => entry.includes('"event":"urlfrontier"'));
  assert.ok(line !== undefined, `no urlfrontier line in the log: ${server.log.join('\n')}`);
  return { server, port: (JSON.parse(line) as { port: number }).port };
}

/**
 * A grpcio program that knows nothing of seenstore: messages compiled from the shipped .proto by
 * protoc at test time, calls made by method path, as a client without generated stubs does. It
 * walks URLFrontier's own tests' behaviours and prints what it saw as JSON. Revisit dates lie in
 * the past, so nothing waits on the clock.
 */
const GRPCIO_PROGRAM = String.raw`
import json, sys, time
import grpc
import urlfrontier_pb2 as pb

channel = grpc.insecure_channel("127.0.0.1:" + sys.argv[1])
def unary(name, request, reply):
    return channel.unary_unary("/urlfrontier.URLFrontier/" + name, request_serializer=request.SerializeToString, response_deserializer=reply.FromString)(request)
def put(items):
    call = channel.stream_stream("/urlfrontier.URLFrontier/PutURLs", request_serializer=pb.URLItem.SerializeToString, response_deserializer=pb.AckMessage.FromString)
    return [(a.ID, pb.AckMessage.Status.Name(a.status)) for a in call(iter(items))]
def get(**params):
    call = channel.unary_stream("/urlfrontier.URLFrontier/GetURLs", request_serializer=pb.GetParams.SerializeToString, response_deserializer=pb.URLInfo.FromString)
    return [(i.url, i.key, i.crawlID) for i in call(pb.GetParams(**params))]
def disc(url, crawl="", id=""):
    return pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=url, crawlID=crawl)), ID=id)
def known(url, date, crawl=""):
    return pb.URLItem(known=pb.KnownURLItem(info=pb.URLInfo(url=url, crawlID=crawl), refetchable_from_date=date))

out = {}
unary("SetDelay", pb.QueueDelayParams(key="", delay_requestable=0), pb.Empty)
out["acks"] = put([disc("http://a.com/1"), disc("http://a.com/1", id="dup"), disc("http://a.com/2"), disc("http://b.com/1")])
out["count"] = unary("CountURLs", pb.CountUrlParams(), pb.Long).value
out["queues"] = list(unary("ListQueues", pb.Pagination(include_inactive=True), pb.QueueList).values)
out["first"] = sorted(get(max_urls_per_queue=1, delay_requestable=60))
out["again"] = get(delay_requestable=60, max_urls_per_queue=1, key="b.com")
out["done"] = put([known("http://a.com/1", 0), known("http://a.com/2", 0)])
now = int(time.time())
put([known("http://c.com/later", now - 100), known("http://c.com/sooner", now - 200)])
out["revisit"] = [get(max_urls_per_queue=1, key="c.com")[0][0], get(max_urls_per_queue=1, key="c.com")[0][0]]
out["never"] = get(key="a.com")
put([disc("http://a.com/1", crawl="other"), disc("http://z.com/1", crawl="other")])
out["crawls"] = sorted(unary("ListCrawls", pb.Local(), pb.StringList).values)
out["other"] = sorted(get(crawlID="other"))
out["stats"] = unary("GetStats", pb.QueueWithinCrawlParams(crawlID="other"), pb.Stats).inProcess
put([disc("http://z.com/2", crawl="other"), disc("http://z.com/3", crawl="other")])
out["deleteQueue"] = unary("DeleteQueue", pb.QueueWithinCrawlParams(key="z.com", crawlID="other"), pb.Long).value
out["deleteCrawl"] = unary("DeleteCrawl", pb.DeleteCrawlMessage(value="other"), pb.Long).value
out["crawlsAfter"] = sorted(unary("ListCrawls", pb.Local(), pb.StringList).values)
s = unary("GetStats", pb.QueueWithinCrawlParams(crawlID="nosuch"), pb.Stats)
out["unknown"] = [s.size, s.inProcess, dict(s.counts), s.crawlID]
out["deleteUnknown"] = unary("DeleteCrawl", pb.DeleteCrawlMessage(value="nosuch"), pb.Long).value
def discovered(batches):
    call = channel.stream_stream("/urlfrontier.URLFrontier/PutDiscovered", request_serializer=pb.DiscoveredBatch.SerializeToString, response_deserializer=pb.BatchAck.FromString)
    return [(a.ID, [pb.AckMessage.Status.Name(s) for s in a.statuses]) for a in call(iter(batches))]
out["putDiscovered"] = discovered([
    pb.DiscoveredBatch(ID="probe"),
    pb.DiscoveredBatch(ID="b1", items=[pb.URLInfo(url="http://d.com/1", crawlID="pd"), pb.URLInfo(url="http://d.com/1", crawlID="pd"), pb.URLInfo(url="", crawlID="pd"), pb.URLInfo(url="http://e.com/1", crawlID="pd")]),
    pb.DiscoveredBatch(ID="b2", items=[pb.URLInfo(url="http://e.com/1", crawlID="pd"), pb.URLInfo(url="http://e.com/Two", crawlID="pd")]),
])
lister = channel.unary_stream("/urlfrontier.URLFrontier/ListURLs", request_serializer=pb.ListUrlParams.SerializeToString, response_deserializer=pb.URLItem.FromString)
items = list(lister(pb.ListUrlParams(crawlID="pd")))
out["listed"] = sorted([i.discovered.info.url for i in items])
out["created"] = [abs(i.creation_date - time.time()) < 600 for i in items]
out["listFiltered"] = [i.discovered.info.url for i in lister(pb.ListUrlParams(crawlID="pd", filter="two", ignoreCase=True))]
out["countFiltered"] = unary("CountURLs", pb.CountUrlParams(crawlID="pd", filter="e.com"), pb.Long).value
out["purged"] = [unary("PurgeURLs", pb.PurgeUrlParams(crawlID="pd", days=1), pb.Long).value, unary("PurgeURLs", pb.PurgeUrlParams(crawlID="pd", key="d.com", days=0), pb.Long).value]
unary("SetLogLevel", pb.LogLevelParams(package="crawlercommons.urlfrontier", level=pb.LogLevelParams.DEBUG), pb.Empty)
print(json.dumps(out))
`;

describe('URLFrontier through `seenstore serve` with Python grpcio', { skip: NEEDS_GRPCIO }, () => {
  it("serves an unmodified grpcio client through URLFrontier's behaviours", async () => {
    const dir = tempDir();
    await exec('protoc', [
      `--proto_path=${join(URLFRONTIER_PROTO_PATH, '..')}`,
      `--python_out=${dir}`,
      URLFRONTIER_PROTO_PATH,
    ]);
    writeFileSync(join(dir, 'program.py'), GRPCIO_PROGRAM);
    // A directory store: its calls go through serve's store thread, as in production.
    const { server, port } = await serveFrontier(join(dir, 'store'), ['--metrics-port', '0']);
    const metricsPort = (
      JSON.parse(server.log.find((line) => line.includes('"event":"start"'))!) as { metrics_port: number }
    ).metrics_port;
    let stdout: string;
    try {
      ({ stdout } = await exec('/usr/bin/python3', [join(dir, 'program.py'), String(port)], { cwd: dir }));
    } catch (error) {
      await server.stop();
      throw error;
    }
    const out = JSON.parse(stdout) as Record<string, unknown>;
    assert.deepEqual(out.acks, [
      ['http://a.com/1', 'OK'],
      ['dup', 'OK'],
      ['http://a.com/2', 'OK'],
      ['http://b.com/1', 'OK'],
    ]);
    assert.equal(out.count, 3, 'the duplicate is acked but queued once');
    assert.deepEqual(out.queues, ['a.com', 'b.com']);
    assert.deepEqual(out.first, [
      ['http://a.com/1', 'a.com', 'DEFAULT'],
      ['http://b.com/1', 'b.com', 'DEFAULT'],
    ]);
    assert.deepEqual(out.again, [], 'b.com/1 is in process: not handed out again within delay_requestable');
    assert.deepEqual(out.done, [
      ['http://a.com/1', 'OK'],
      ['http://a.com/2', 'OK'],
    ]);
    assert.deepEqual(out.revisit, ['http://c.com/sooner', 'http://c.com/later']);
    assert.deepEqual(out.never, [], 'known without a date: never returned');
    assert.deepEqual(out.crawls, ['DEFAULT', 'other']);
    assert.deepEqual(out.other, [
      ['http://a.com/1', 'a.com', 'other'],
      ['http://z.com/1', 'z.com', 'other'],
    ]);
    assert.equal(out.stats, 2);
    assert.equal(out.deleteQueue, 3);
    assert.equal(out.deleteCrawl, 1);
    assert.deepEqual(out.crawlsAfter, ['DEFAULT'], 'a deleted crawl is not listed');
    assert.deepEqual(out.unknown, [0, 0, { completed: 0 }, 'nosuch'], 'an unknown crawl: zeros');
    assert.equal(out.deleteUnknown, 0);
    assert.deepEqual(out.putDiscovered, [
      ['probe', []],
      ['b1', ['OK', 'SKIPPED', 'SKIPPED', 'OK']],
      ['b2', ['SKIPPED', 'OK']],
    ]);
    assert.deepEqual(out.listed, ['http://d.com/1', 'http://e.com/1', 'http://e.com/Two']);
    assert.deepEqual(out.created, [true, true, true]);
    assert.deepEqual(out.listFiltered, ['http://e.com/Two']);
    assert.equal(out.countFiltered, 2);
    assert.deepEqual(out.purged, [0, 1], 'nothing a day old; with 0 days, what was stored before now');
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    assert.match(metrics, /^seenstore_urlfrontier_calls_total\{rpc="PutDiscovered"\} 1$/m);
    assert.match(metrics, /^seenstore_urlfrontier_urls_in_total\{rpc="PutDiscovered",status="OK"\} 3$/m);
    assert.match(metrics, /^seenstore_urlfrontier_urls_out_total\{rpc="ListURLs"\} 4$/m);
    await server.stop();
    assert.ok(
      server.log.some((line) => line.includes('"method":"SetLogLevel","level":"debug"')),
      'SetLogLevel is logged',
    );
  });
});

describe('URLFrontier: kill -9 of serve in the middle of a PutURLs stream', () => {
  it('loses no acknowledged URL, and the leases taken before the kill come back', async () => {
    const store = join(tempDir(), 'store');
    const urls = sharedUrls('crawl-benign-35k.txt').slice(0, 20_000);
    const first = await serveFrontier(store);
    const client = new FrontierClient(first.port);
    // Some URLs are queued and leased for 1 s before the stream that the kill cuts.
    await client.put(urls.slice(0, 500).map((url) => discovered(url)));
    const leased = new Set((await client.get({ delay_requestable: 1 })).map((info) => info.url));
    assert.ok(leased.size > 0);
    const acked = new Set<string>(urls.slice(0, 500));
    const stream = client.putStream();
    const cut = new Promise<void>((resolve) => {
      stream.on('data', (ack: Ack) => {
        acked.add(ack.ID);
        if (acked.size >= 3_000 && first.server.child.exitCode === null) first.server.child.kill('SIGKILL');
      });
      stream.on('error', () => resolve());
      stream.on('end', () => resolve());
    });
    for (const url of urls.slice(500)) stream.write(discovered(url));
    stream.end();
    await cut;
    client.close();
    assert.equal((await first.server.stop()).signal, 'SIGKILL');
    assert.ok(acked.size < urls.length, `the kill came after every ack (${acked.size}): it cut nothing`);

    const second = await serveFrontier(store);
    const again = new FrontierClient(second.port);
    try {
      // The one wait on real time: the spawned server's clock is the machine's, and the leases
      // taken before the kill (1 s) must run out before they are handed out again.
      const handedOut = new Set<string>();
      const deadlineMs = Date.now() + 20_000;
      while ([...acked].some((url) => !handedOut.has(url)) && Date.now() < deadlineMs) {
        for (const info of await again.get({ delay_requestable: 600 })) handedOut.add(info.url);
        await sleep(200);
      }
      const lost = [...acked].filter((url) => !handedOut.has(url));
      assert.deepEqual(lost.slice(0, 5), [], `${lost.length} of ${acked.size} acknowledged URLs were lost`);
      assert.ok(
        [...leased].every((url) => handedOut.has(url)),
        'the leases taken before the kill came back',
      );
    } finally {
      again.close();
      await second.server.stop();
    }
  });
});
