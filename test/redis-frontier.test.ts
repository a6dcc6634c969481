import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SeenStore, type LeasedUrl, type Scope, type ScopeOptions } from '../src/index.js';
import { XxHash } from '../src/hash/xxhash.js';
import { QUEUE_STATE_KEYS } from '../src/store/redis/keys.js';
import { QUEUE_PARTITIONS, queuePartitionOf } from '../src/store/redis/queue-partition.js';
import { runCli } from './helpers/cli.js';
import { ROOT, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { failOver, replicaOf } from './helpers/redis-failover.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';
import { runChild, type ChildOut } from './helpers/child-run.js';
import { tempDir } from './helpers/tmp.js';

/**
 * The frontier on the Redis backend, on a real 3-master, 3-replica cluster (the storage contract's
 * frontier and queue cases run in contract-redis.test.ts): processes enqueueing and taking at once,
 * an enqueuer and a taker killed -9, the politeness gate across processes, reclaim, release with
 * data, bad ids, retried calls, the inbox and old layouts, the CLI, a master killed.
 */
const missing = redisMissing();
const CHILD = join(ROOT, 'dist', 'test', 'helpers', 'redis-frontier-child.js');
const urls = sharedUrls('crawl-benign-35k.txt');
const quiet = { onWarning: () => {} };
const EXACT = { capacityUrls: 100_000, fprTarget: 1e-9, strategy: 'partitioned:1' } as const;

const cluster = missing === undefined ? await startRedisCluster() : (undefined as unknown as RedisCluster);
after(() => cluster?.stop());

/** Runs the child script; resolves with its output lines and whether it was killed -9. */
function child(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildOut> {
  return runChild(CHILD, args, 'redis frontier child', env);
}

/** `took ID<TAB>URL` lines of a taker: id -> URL. */
function tookOf(lines: readonly string[]): Map<string, string> {
  return new Map(
    lines.filter((line) => line.startsWith('took ')).map((line) => line.slice(5).split('\t') as [string, string]),
  );
}

/** The store's key prefix (location `...?prefix=NAME`). */
function prefixOf(location: string): string {
  return new URL(location).searchParams.get('prefix')!;
}

/** Scope `name` of a store whose frontier hands out a queue again at once (the cases here are not about politeness). */
async function noDelay(
  store: SeenStore,
  name: string,
  options: ScopeOptions = EXACT,
  queueKey: 'host' | 'none' = 'host',
): Promise<Scope> {
  const scope = store.scope(name, options);
  await scope.frontier().configure({ delayMs: 0, queueKey });
  return scope;
}

function countBy(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

/** Hosts whose every URL of `queued` is in `finished`: queues left empty. */
function countDoneHosts(finished: readonly string[], queued: readonly string[]): number {
  const hostOf = (url: string) => new URL(url).host;
  return new Set(queued.map(hostOf)).size - new Set(queued.filter((url) => !finished.includes(url)).map(hostOf)).size;
}

/** The last argument of a library function that reads the clock (`timed`): Redis's TIME. */
const REDIS_TIME = '';

/** A command through redis-cli in cluster mode (follows MOVED). */
function redis(...args: string[]): string {
  return cluster.cli(cluster.nodes[0]!.port, '-c', ...args);
}

describe('redis frontier', { skip: missing }, () => {
  test('3 processes enqueue overlapping URLs: each queued once; 2 takers at once never share a lease', async () => {
    const location = cluster.location();
    const dir = tempDir('seenstore-redis-frontier-');
    const all = urls.slice(0, 3_000);
    const setup = await SeenStore.open(location, quiet);
    await noDelay(setup, 'f', { capacityUrls: 100_000, fprTarget: 1e-9 });
    await setup.close();
    // Every URL is offered by 2 of the 3 processes, in orders of their own.
    const inputs = [0, 1, 2].map((p) => {
      const mine = all.filter((_, i) => i % 3 !== p);
      return p === 1 ? mine.reverse() : mine;
    });
    await Promise.all(
      inputs.map((input, p) => {
        const file = join(dir, `in-${p}.txt`);
        writeFileSync(file, `${input.join('\n')}\n`);
        return child([location, 'enqueue', file, '250']);
      }),
    );
    const takers = await Promise.all([
      child([location, 'take', '25', '60000']),
      child([location, 'take', '25', '60000']),
    ]);
    const [a, b] = takers.map((run) => tookOf(run.lines));
    assert.ok(a!.size > 0 && b!.size > 0, 'one taker got nothing: the test shows nothing about sharing');
    assert.deepEqual(
      [...a!.keys()].filter((id) => b!.has(id)),
      [],
      'two takers held one lease',
    );
    const taken = [...a!.values(), ...b!.values()];
    assert.equal(taken.length, all.length, 'a URL was queued twice, or not at all');
    assert.deepEqual(new Set(taken), new Set(all));
    const store = await SeenStore.open(location, quiet);
    try {
      const stats = await store.scope('f').frontier().stats();
      assert.deepEqual({ ...stats, queues: 0 }, { pending: 0, leased: all.length, done: 0, failed: 0, queues: 0 });
      assert.ok(stats.queues > 100, `the URLs went to ${stats.queues} queues, not one per host`);
    } finally {
      await store.close();
    }
  });

  test('an enqueuer killed -9 mid-stream: every acknowledged URL queued once, a URL queued exactly when it is recorded as seen', async () => {
    const location = cluster.location();
    const dir = tempDir('seenstore-redis-frontier-');
    const input = urls.slice(10_000, 30_000);
    const file = join(dir, 'in.txt');
    writeFileSync(file, `${input.join('\n')}\n`);
    const killed = await new Promise<string[]>((resolve, reject) => {
      const proc = spawn(process.execPath, [CHILD, location, 'enqueue', file, '500'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        // Killed at once after its 10th acknowledgement: somewhere in the batches after it.
        if (out.includes('ack 9\n') && proc.exitCode === null) proc.kill('SIGKILL');
      });
      proc.on('error', reject);
      proc.on('close', () => resolve(out.split('\n').filter((line) => line.startsWith('ack '))));
    });
    assert.ok(
      killed.length >= 10 && killed.length < 40,
      `the enqueuer was not killed mid-stream (${killed.length} batches acknowledged)`,
    );
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'f', {});
      const frontier = scope.frontier();
      const queued: string[] = [];
      for (
        let got = await frontier.take(5_000, { leaseMs: 60_000, perQueue: 5_000 });
        got.length > 0;
        got = await frontier.take(5_000, { leaseMs: 60_000, perQueue: 5_000 })
      ) {
        queued.push(...got.map((entry) => entry.url));
      }
      assert.equal(new Set(queued).size, queued.length, 'a URL was queued twice');
      const acknowledged = input.slice(0, killed.length * 500);
      const queuedSet = new Set(queued);
      assert.deepEqual(
        acknowledged.filter((url) => !queuedSet.has(url)),
        [],
        'an acknowledged URL is not queued',
      );
      const seen = await scope.has(input);
      assert.deepEqual(
        input.filter((url, i) => seen[i] !== queuedSet.has(url)),
        [],
        'a URL recorded as seen and not queued, or queued and not seen',
      );
      // A batch is atomic per partition (the child's scope is partitioned, the Redis default), not
      // as a whole: a killed batch may have queued some partitions' URLs. What must hold holds per
      // URL, above: queued exactly when recorded as seen, and every acknowledged one queued.
    } finally {
      await store.close();
    }
  });

  test('a mover killed -9 between queuing an inbox and deleting it: nothing is queued twice', async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'm', EXACT, 'none');
      const some = urls.slice(8_700, 8_800);
      await scope.enqueue(some);
      const inbox = `{${prefixOf(location)}/m/0}:in`;
      assert.equal(redis('XLEN', inbox), '100');
      // The child's first call drains the inbox: killed right after the admit, before the XDEL.
      const dead = await child([location, 'drain', 'm', 'frontier:inbox-admitted']);
      assert.ok(dead.killed, 'the mover was not killed between admit and delete');
      assert.equal(redis('XLEN', inbox), '100', 'the inbox was deleted before the kill');
      const taken = await scope.frontier().take(1_000, { perQueue: 1_000, leaseMs: 60_000 });
      assert.deepEqual(
        taken.map((entry) => entry.url),
        some,
        'an inbox entry was queued twice, lost, or out of order',
      );
      assert.equal(redis('XLEN', inbox), '0');
    } finally {
      await store.close();
    }
  });

  test('rotation and prune leave the frontier alone; a URL found again in a new epoch while still queued stays queued once', async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'f', EXACT);
      const some = urls.slice(8_500, 8_505);
      await scope.enqueue(some);
      await scope.rotate();
      await scope.rotate();
      assert.equal((await scope.prune({ keepLast: 1 })).length, 2);
      assert.deepEqual(await scope.enqueue(some), [true, true, true, true, true]);
      const taken = await scope.frontier().take(20, { leaseMs: 60_000, perQueue: 20 });
      assert.deepEqual(
        taken.map((entry) => `${entry.epoch} ${entry.url}`).sort(),
        some.map((url) => `1 ${url}`).sort(),
      );
      // A counting epoch's add (ss_count_add) enqueues the same way.
      const counting = await noDelay(store, 'counting', { strategy: 'counting', capacityUrls: 10_000 }, 'none');
      assert.deepEqual(await counting.enqueue([...some, some[0]!]), [true, true, true, true, true, false]);
      assert.deepEqual(await counting.enqueue(some), [false, false, false, false, false]);
      assert.deepEqual(
        (await counting.frontier().take(20, { leaseMs: 60_000, perQueue: 20 })).map((entry) => entry.url),
        some,
      );
    } finally {
      await store.close();
    }
  });

  test('a taker killed -9 right after its take: its URLs come back when the lease runs out, with attempts 2', async () => {
    const location = cluster.location();
    const queued = urls.slice(6_000, 6_500);
    // This handle's clock is the machine's when the test sets it, and stands still in between: the
    // test moves it past the dead taker's lease (timed by Redis's TIME, the machine's clock too).
    let nowMs = Date.now();
    const store = await SeenStore.open(location, { ...quiet, clock: () => nowMs });
    try {
      const scope = await noDelay(store, 'f', EXACT, 'none');
      await scope.enqueue(queued);
      const dead = await child([location, 'take', '100', '60000', 'frontier:take-after-commit']);
      assert.ok(dead.killed && tookOf(dead.lines).size === 0, 'the taker was not killed at its take');
      // After the dead taker's take (the queue's last take, by Redis's TIME), within its lease.
      nowMs = Date.now();
      const frontier = scope.frontier();
      assert.deepEqual(await frontier.stats(), { pending: 400, leased: 100, done: 0, failed: 0, queues: 1 });
      // Leased for an hour: still leased when the clock moves past the dead taker's minute.
      const rest = await frontier.take(1_000, { leaseMs: 3_600_000, perQueue: 1_000 });
      assert.deepEqual(
        rest.map((entry) => entry.url),
        queued.slice(100),
        "the dead taker's URLs were handed out under its lease",
      );
      // Past the dead taker's lease end (as the frontier tells) on this handle's clock.
      const status = (await frontier.urlStatus(queued[0]!))!;
      assert.equal(status.state, 'leased');
      nowMs = status.atMs + 1;
      const back = await frontier.take(1_000, { leaseMs: 60_000, perQueue: 1_000 });
      assert.deepEqual(
        back.map((entry) => entry.url),
        queued.slice(0, 100),
      );
      assert.ok(back.every((entry) => entry.attempts === 2));
      assert.equal(await frontier.done([...rest, ...back].map((entry) => entry.id)), 500);
      assert.deepEqual(await frontier.stats(), { pending: 0, leased: 0, done: 500, failed: 0, queues: 0 });
    } finally {
      await store.close();
    }
  });

  test('the gate across processes: 4 takers at once never get one host twice inside its delay', async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = store.scope('g', EXACT);
      await scope.frontier().configure({ delayMs: 3_600_000 });
      const hosts = Array.from({ length: 200 }, (_, i) => `https://h${i}.example`);
      // Three URLs a host, two a take: a host handed out twice would show a third URL.
      await scope.enqueue(hosts.flatMap((host) => [`${host}/1`, `${host}/2`, `${host}/3`]));
      // Started one after another, the takers begin together, once all four have opened the store:
      // else on a loaded machine the first could drain every host before the others connect, and
      // nothing would race (a start time 2 s ahead was not enough on a loaded machine).
      const barrier = `${tempDir('seenstore-barrier-')}:4`;
      const runs = await Promise.all(
        [0, 1, 2, 3].map(() => child([location, 'take', '30', '60000', 'none', '2', 'g'], { CHILD_BARRIER: barrier })),
      );
      const taken = runs.flatMap((run) => [...tookOf(run.lines).values()]);
      const perHost = new Map<string, number>();
      for (const url of taken) perHost.set(new URL(url).host, (perHost.get(new URL(url).host) ?? 0) + 1);
      assert.equal(perHost.size, 200, 'a ready host was not handed out');
      assert.ok(
        [...perHost.values()].every((n) => n === 2),
        'a host was handed out twice inside its delay (or one take split it)',
      );
      assert.ok(
        runs.filter((run) => tookOf(run.lines).size > 0).length >= 2,
        'one taker took everything: the test shows nothing about racing',
      );
    } finally {
      await store.close();
    }
  });

  test('reclaim, release with data (attempts carried, its place kept), stats, bad ids', async () => {
    const location = cluster.location();
    const queued = urls.slice(7_000, 7_010);
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'f', EXACT, 'none');
      await scope.enqueue(queued, { data: queued.map((_, i) => ({ depth: i })) });
      const frontier = scope.frontier();
      const first = await frontier.take(4, { leaseMs: 60_000, owner: 'c1', perQueue: 4 });
      const second = await frontier.take(3, { leaseMs: 60_000, owner: 'c2', perQueue: 3 });
      assert.deepEqual(
        [...first, ...second].map((entry) => entry.url),
        queued.slice(0, 7),
      );
      assert.deepEqual(await frontier.stats(), { pending: 3, leased: 7, done: 0, failed: 0, queues: 1 });
      assert.equal(await frontier.reclaim('c1'), 4);
      assert.deepEqual(await frontier.stats(), { pending: 7, leased: 3, done: 0, failed: 0, queues: 1 });
      assert.equal(await frontier.release([second[0]!.id, second[1]!.id], [{ depth: 4, retries: 1 }, undefined]), 2);
      assert.equal(
        await frontier.release([second[0]!.id], [{ depth: 4, retries: 2 }]),
        0,
        'an entry not leased was released',
      );
      const next = await frontier.take(20, { leaseMs: 60_000, owner: 'c3', perQueue: 20 });
      assert.deepEqual(
        next.map((entry) => [entry.url, entry.attempts, entry.data]),
        [
          [queued[0], 2, { depth: 0 }],
          [queued[1], 2, { depth: 1 }],
          [queued[2], 2, { depth: 2 }],
          [queued[3], 2, { depth: 3 }],
          [queued[4], 2, { depth: 4, retries: 1 }],
          [queued[5], 2, { depth: 5 }],
          [queued[7], 1, { depth: 7 }],
          [queued[8], 1, { depth: 8 }],
          [queued[9], 1, { depth: 9 }],
        ],
      );
      assert.ok(next.every((entry) => /^\d+-\d+$/.test(entry.id)));
      for (const bad of ['x', '1', '0-1-2', '-0-1', '00-1', '0-0', '0-1234567890123456', `${next[0]!.id} `]) {
        await expectCode('USAGE', () => frontier.done([next[0]!.id, bad]));
      }
      assert.deepEqual(
        await frontier.stats(),
        { pending: 0, leased: 10, done: 0, failed: 0, queues: 1 },
        'a call with a bad id changed something',
      );
      // Well-formed ids of nothing (a number not given, a partition the frontier does not have) are skipped.
      const [partition] = next[0]!.id.split('-');
      assert.equal(await frontier.done([`${partition}-999999999`, '40-1', '99999-1']), 0);
      assert.equal(await frontier.done([...next, second[2]!].map((entry) => entry.id)), 10);
      assert.deepEqual(await frontier.stats(), { pending: 0, leased: 0, done: 10, failed: 0, queues: 0 });
    } finally {
      await store.close();
    }
  });

  test('a call repeated with its call id (a retry after a lost reply) gets its first answer: a take leases nothing new', async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'r', EXACT, 'none');
      await scope.enqueue(urls.slice(7_500, 7_510));
      const [partition] = (await scope.frontier().urlStatus(urls[7_500]!))!.id.split('-');
      const tag = `{${prefixOf(location)}/r/q${partition}}`;
      const state = QUEUE_STATE_KEYS.map((name) => `${tag}:${name}`);
      const call = (name: string, id: string, ...args: string[]): string =>
        redis(
          'FCALL',
          name,
          String(state.length + 2),
          ...state,
          `${tag}:a:${id}`,
          `${tag}:a:${id}`,
          '1',
          '0',
          '0',
          '300',
          '',
          ...args,
          REDIS_TIME,
        );
      const taken = call('ss_fq_take', 'take-1', '60000', 'retrier', '', '4');
      assert.equal(call('ss_fq_take', 'take-1', '60000', 'retrier', '', '4'), taken);
      assert.match(taken, new RegExp(urls[7_503]!.replace(/[.?*+^$[\]\\(){}|]/g, '\\$&')));
      assert.deepEqual(await scope.frontier().stats(), { pending: 6, leased: 4, done: 0, failed: 0, queues: 1 });
      const id = taken.split('\n')[0]!;
      assert.equal(call('ss_fq_done', 'done-1', '1', id, '0'), '1');
      assert.equal(call('ss_fq_done', 'done-1', '1', id, '0'), '1', 'a retried done answered otherwise');
      assert.equal(call('ss_fq_done', 'done-2', '1', id, '0'), '0');
      assert.deepEqual(await scope.frontier().stats(), { pending: 6, leased: 3, done: 1, failed: 0, queues: 1 });
    } finally {
      await store.close();
    }
  });

  test('an enqueue too large for one call (URLs and data over 4 MiB) is split, and so are its move and its takes: each URL queued once, with its data, in order', async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'f', EXACT, 'none');
      // 12 MB: three calls' worth of the 4 MiB bound (src/store/redis/call-parts.ts).
      const some = urls.slice(16_000, 16_200);
      const input = [...some, some[0]!, some[199]!];
      const data = input.map((url) => ({ url, pad: 'x'.repeat(61_000) }));
      const answers = await scope.enqueue(input, { data });
      assert.deepEqual(answers, [...some.map(() => true), false, false]);
      // A take replies at most about 4 MiB (lua/queue-take.lua): 68 or so of these 61 KB entries.
      const taken: LeasedUrl[] = [];
      for (let takes = 1; taken.length < some.length; takes++) {
        const part = await scope.frontier().take(2_000, { leaseMs: 60_000, perQueue: 2_000 });
        assert.ok(part.length > 0 && part.length < 100, `take ${takes}: ${part.length} entries`);
        taken.push(...part);
      }
      assert.deepEqual(
        taken.map((entry) => entry.url),
        some,
      );
      assert.ok(
        taken.every(
          (entry) =>
            (entry.data as { url: string }).url === entry.url && (entry.data as { pad: string }).pad.length === 61_000,
        ),
      );
      assert.equal(await scope.frontier().done(taken.map((entry) => entry.id)), some.length);
    } finally {
      await store.close();
    }
  });

  test("the move deletes URLs from the inbox only once a replica of their queue's master has them", async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    const some = urls.slice(17_100, 17_110);
    const hash = await XxHash.load();
    const home = queuePartitionOf(hash, '', QUEUE_PARTITIONS, new Uint32Array(2));
    const replica = replicaOf(cluster, `{${prefixOf(location)}/v/q${home}}:seq`);
    const inboxLength = (): number => Number(redis('XLEN', `{${prefixOf(location)}/v/0}:in`));
    try {
      const scope = await noDelay(store, 'v', EXACT, 'none');
      assert.deepEqual(
        await scope.enqueue(some),
        some.map(() => true),
      );
      assert.equal(inboxLength(), some.length);
      // The replica stops: no WAIT is answered. The move admits the URLs (a take hands them out)
      // but leaves them in the inbox, which the replica has.
      replica.process.kill('SIGSTOP');
      let first: LeasedUrl[];
      try {
        first = await scope.frontier().take(100, { leaseMs: 60_000, perQueue: 100 });
        assert.equal(inboxLength(), some.length, 'deleted from the inbox before a replica had the admission');
      } finally {
        replica.process.kill('SIGCONT');
      }
      assert.deepEqual(
        first.map((entry) => entry.url),
        some,
      );
      // Once the replica confirms, the next move admits nothing twice and empties the inbox.
      const deadline = Date.now() + 30_000;
      while (inboxLength() > 0 && Date.now() < deadline) await scope.frontier().stats();
      assert.equal(inboxLength(), 0);
      assert.deepEqual(await scope.frontier().stats(), {
        pending: 0,
        leased: some.length,
        done: 0,
        failed: 0,
        queues: 1,
      });
    } finally {
      await store.close();
    }
  });

  test('an inbox entry of a newer version is FORMAT_UNSUPPORTED, one seenstore did not write STORE_CORRUPT; a frontier of layout 1 is refused', async () => {
    const location = cluster.location();
    const store = await SeenStore.open(location, quiet);
    try {
      const scope = await noDelay(store, 'f', EXACT);
      const inbox = `{${prefixOf(location)}/f/0}:in`;
      const frontier = scope.frontier();
      const newer = redis(
        'XADD',
        inbox,
        '*',
        'v',
        '3',
        'u',
        'https://newer.example/',
        'k',
        'newer.example',
        'e',
        '1',
        'b',
        'x',
        'n',
        '0',
      );
      await expectCode('FORMAT_UNSUPPORTED', () => frontier.take(10, { leaseMs: 200 }));
      redis('XDEL', inbox, newer);
      redis('XADD', inbox, '*', 'url', 'https://foreign.example/');
      await expectCode('STORE_CORRUPT', () => frontier.take(10, { leaseMs: 200 }));
      // A scope whose frontier is one stream per partition (layout 1): refused, enqueues too, nothing written.
      const old = store.scope('old', EXACT);
      redis('XADD', `{${prefixOf(location)}/old/0}:q`, '*', 'v', '1', 'u', 'https://old.example/', 'e', '1');
      await expectCode('FORMAT_UNSUPPORTED', () => old.frontier().stats());
      await expectCode('FORMAT_UNSUPPORTED', () => old.enqueue(['https://new.example/']));
      assert.deepEqual(await old.has(['https://new.example/']), [false], 'a refused enqueue recorded its URL');
    } finally {
      await store.close();
    }
  });

  test("take of one queue hands out that queue alone, the hostless queue '' included", async () => {
    const store = await SeenStore.open(cluster.location(), quiet);
    try {
      const scope = await noDelay(store, 'h', EXACT);
      // A host in the same queue partition as '' (a take reads a partition's ready queues).
      const hash = await XxHash.load();
      const words = new Uint32Array(2);
      const home = queuePartitionOf(hash, '', QUEUE_PARTITIONS, words);
      const beside = Array.from({ length: 1_000 }, (_, i) => `h${i}.example`).find(
        (key) => queuePartitionOf(hash, key, QUEUE_PARTITIONS, words) === home,
      )!;
      const keys = ['', beside, 'b.example'];
      await scope.enqueue(['https://c.example/hostless', `https://${beside}/1`, 'https://b.example/1'], {
        queues: keys,
      });
      for (const key of keys) {
        const taken = await scope.frontier().take(10, { queue: key, perQueue: 10, leaseMs: 60_000 });
        assert.deepEqual(
          taken.map((entry) => entry.queue),
          [key],
          `a take of queue ${JSON.stringify(key)} handed out others`,
        );
      }
    } finally {
      await store.close();
    }
  });

  test("a partitioned epoch: each host's URLs in one queue of one slot, oldest first, whatever partition found them new", async () => {
    const store = await SeenStore.open(cluster.location(), quiet);
    try {
      const scope = await noDelay(store, 'f', { ...EXACT, strategy: 'partitioned:4' });
      const hosts = ['https://one.example', 'https://two.example', 'https://three.example'];
      const queued = Array.from({ length: 40 }, (_, i) => `${hosts[i % 3]}/${i}`);
      assert.equal((await scope.enqueue(queued)).filter(Boolean).length, 40);
      const frontier = scope.frontier();
      assert.deepEqual(await frontier.stats(), { pending: 40, leased: 0, done: 0, failed: 0, queues: 3 });
      const all: { readonly id: string; readonly url: string; readonly queue: string }[] = [];
      for (let take = 0; take < 20; take++) {
        const got = await frontier.take(7, { leaseMs: 60_000, perQueue: 3 });
        assert.ok(got.length <= 7, 'a take leased more than asked');
        assert.ok(
          [...countBy(got.map((entry) => entry.queue)).values()].every((n) => n <= 3),
          'a take leased more of a queue than perQueue',
        );
        all.push(...got);
      }
      assert.equal(all.length, 40);
      assert.deepEqual(
        new Set(all.map((entry) => entry.url)),
        new Set(queued),
        'a queued URL was not handed out, or one twice',
      );
      for (const host of hosts) {
        const mine = all.filter((entry) => entry.url.startsWith(host));
        assert.equal(
          new Set(mine.map((entry) => entry.id.split('-')[0])).size,
          1,
          `${host}'s URLs are in several partitions`,
        );
        assert.deepEqual(
          mine.map((entry) => entry.url),
          queued.filter((url) => url.startsWith(host)),
          `${host}'s queue not oldest first`,
        );
      }
      assert.equal(await frontier.done(all.map((entry) => entry.id)), 40);
      assert.deepEqual(await frontier.stats(), { pending: 0, leased: 0, done: 40, failed: 0, queues: 0 });
    } finally {
      await store.close();
    }
  });

  test('the CLI: push, take, done, release and stats round trip on Redis', async () => {
    const store = cluster.location();
    const durable = ['--store', store, '--wait-replicas', '1'];
    const setup = await SeenStore.open(store, quiet);
    await noDelay(setup, 'c', {});
    await setup.close();
    const input = `${urls.slice(9_000, 9_050).join('\n')}\n${urls[9_000]}\n`;
    const push = await runCli([...durable, '--scope', 'c', 'frontier', 'push'], input);
    assert.equal(push.code, 0, push.stderr);
    assert.equal(push.stdout.split('\n').filter(Boolean).length, 50);
    const again = await runCli(['--store', store, '--scope', 'c', 'frontier', 'push'], input);
    assert.equal(again.stdout, '', 'a URL was queued twice');
    const take = await runCli([...durable, '--scope', 'c', 'frontier', 'take', '--count', '20']);
    assert.equal(take.code, 0, take.stderr);
    const lines = take.stdout.split('\n').filter(Boolean);
    // One URL of each host (the CLI's perQueue), each host's first.
    const took = lines.map((line) => line.split('\t')[1]!);
    const hosts = new Set(urls.slice(9_000, 9_050).map((url) => new URL(url).host));
    assert.equal(took.length, Math.min(20, hosts.size));
    assert.deepEqual(
      new Set(took.map((url) => new URL(url).host)).size,
      took.length,
      'two URLs of one host in one take',
    );
    assert.ok(
      took.every((url) => url === urls.slice(9_000, 9_050).find((first) => new URL(first).host === new URL(url).host)),
    );
    assert.ok(lines.every((line) => /^\d+-\d+\thttps?:\/\//.test(line)));
    const done = await runCli([...durable, '--scope', 'c', 'frontier', 'done'], lines.slice(0, 10).join('\n'));
    assert.match(done.stderr, /done 10 of 10/);
    const release = await runCli([
      ...durable,
      '--scope',
      'c',
      'frontier',
      'release',
      ...lines.slice(10).map((line) => line.split('\t')[0]!),
    ]);
    assert.match(release.stderr, new RegExp(`released ${took.length - 10} of ${took.length - 10}`));
    const stats = await runCli(['--store', store, '--scope', 'c', '--json', 'frontier', 'stats']);
    assert.deepEqual(JSON.parse(stats.stdout), {
      scope: 'c',
      pending: 40,
      leased: 0,
      done: 10,
      failed: 0,
      queues: hosts.size - countDoneHosts(took.slice(0, 10), urls.slice(9_000, 9_050)),
    });
    const bad = await runCli(['--store', store, '--scope', 'c', 'frontier', 'done', '17']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /seenstore: error USAGE: not a frontier id/);
  });

  // Last: it kills a master of the file's cluster (which recovers: the killed node rejoins as a replica).
  test('kill -9 of the master holding the frontier while a crawler takes and finishes, waitReplicas 1: every URL taken once, every done counted', async () => {
    const location = cluster.location();
    const all = urls.slice(12_000, 15_000);
    const store = await SeenStore.open(location, { ...quiet, waitReplicas: 1 });
    try {
      const scope = await noDelay(store, 'k', EXACT, 'none');
      await scope.enqueue(all);
      const frontier = scope.frontier();
      const [partition] = (await frontier.urlStatus(all[0]!))!.id.split('-');
      const taken: string[] = [];
      let failing: Promise<void> | undefined;
      const take = { leaseMs: 120_000, perQueue: 25 };
      for (let got = await frontier.take(25, take); got.length > 0; got = await frontier.take(25, take)) {
        taken.push(...got.map((entry) => entry.url));
        assert.equal(
          await frontier.done(got.map((entry) => entry.id)),
          got.length,
          'a retried done answered otherwise',
        );
        // The kill happens at once (failOver's first step), with 2,500 URLs still to take.
        if (failing === undefined && taken.length >= 500)
          failing = failOver(cluster, `{${prefixOf(location)}/k/q${partition}}:seq`);
      }
      await failing;
      assert.ok(failing !== undefined);
      assert.equal(new Set(taken).size, taken.length, 'a URL was taken twice');
      assert.deepEqual(new Set(taken), new Set(all), 'a queued URL was lost');
      assert.deepEqual(await frontier.stats(), { pending: 0, leased: 0, done: all.length, failed: 0, queues: 0 });
    } finally {
      await store.close();
    }
  });
});
