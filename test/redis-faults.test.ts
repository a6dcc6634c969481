import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { collectCli, spawnCli, type CliResult } from './helpers/cli.js';
import { expectCode } from './helpers/errors.js';
import {
  masterOf,
  redisMissing,
  startRedisCluster,
  until,
  type RedisCluster,
  type RedisNode,
} from './helpers/redis-cluster.js';
import { clusterSettled, replicaOf, roleOf, silentListener, whilePaused } from './helpers/redis-faults.js';
import { replyText } from './helpers/resp.js';

/**
 * Issue 32, Redis under faults: every call ends within its deadline (`timeout-ms=` in the
 * location, the `unavailableAfterMs` option) — a paused node, a silent TCP listener, a failed
 * cluster, a start during a failover; a replica wait without replicas; out of memory; a demoted
 * master and an `UNBLOCKED` WAIT under `--wait-replicas 1`; a take answered after its lease. The
 * deadlines here are 2–20 s; a CLI run is killed after KILL_MS so that a hang fails the test
 * instead of holding it. Paused nodes are resumed in a finally (whilePaused).
 */
const missing = redisMissing();
const quiet = { onWarning: () => {} };
const KILL_MS = 40_000;
/** Slack over a deadline for process start, the last attempt and closing, on a loaded 2-core machine. */
const SLACK_MS = 4_000;
const LEASE_MS = 1_500;

async function timedCli(args: readonly string[], input: string): Promise<CliResult & { ms: number }> {
  const started = Date.now();
  const child = spawnCli(args);
  const killer = setTimeout(() => child.kill('SIGKILL'), KILL_MS);
  child.stdin!.end(input);
  try {
    const result = await collectCli(child);
    return { ...result, ms: Date.now() - started };
  } finally {
    clearTimeout(killer);
  }
}

/** A node's clock (TIME) in ms. */
async function redisTimeMs(port: number): Promise<number> {
  const [seconds, micros] = (await replyText(port, 'TIME')).split(',').map(Number);
  return seconds! * 1000 + Math.floor(micros! / 1000);
}

function withTimeout(location: string, ms: number): string {
  return `${location}${location.includes('?') ? '&' : '/?'}timeout-ms=${ms}`;
}

const single =
  missing === undefined ? await startRedisCluster({ cluster: false }) : (undefined as unknown as RedisCluster);
after(() => single?.stop());
// The cluster's tests kill nodes: it is this file's own.
const cluster = missing === undefined ? await startRedisCluster() : (undefined as unknown as RedisCluster);
after(() => cluster?.stop());

describe('redis under faults: a single node', { skip: missing }, () => {
  test('a paused node: has exits STORE_UNAVAILABLE (16) within its deadline, at open and mid-stream', async () => {
    const location = single.location();
    const store = await SeenStore.open(location, { ...quiet, unavailableAfterMs: 2_000 });
    try {
      await store.scope('s').add(['http://a.example/1']);
      await whilePaused(single.nodes, async () => {
        const run = await timedCli(['--store', withTimeout(location, 2_000), 'has', '--count'], 'http://a.example/1\n');
        assert.equal(run.code, 16, `${run.stderr} (after ${run.ms} ms)`);
        assert.match(run.stderr, /STORE_UNAVAILABLE/);
        assert.ok(run.ms < 2_000 + SLACK_MS, `${run.ms} ms`);
        // An open handle whose node stops answering: the call ends at the deadline, and so does close.
        const started = Date.now();
        await expectCode('STORE_UNAVAILABLE', () => store.scope('s').add(['http://a.example/2']));
        assert.ok(Date.now() - started < 2_000 + SLACK_MS, `${Date.now() - started} ms`);
      });
      // Resumed: the same handle works again.
      assert.deepEqual(await store.scope('s').has(['http://a.example/1']), [true]);
    } finally {
      const closing = Date.now();
      await store.close();
      assert.ok(Date.now() - closing < SLACK_MS);
    }
  });

  test('a TCP listener that never answers: STORE_UNAVAILABLE within the deadline (CLI and library)', async () => {
    const silent = await silentListener();
    try {
      const location = `redis://127.0.0.1:${silent.port}`;
      const run = await timedCli(['--store', withTimeout(location, 2_000), 'filter-new'], 'http://a.example/1\n');
      assert.equal(run.code, 16, `${run.stderr} (after ${run.ms} ms)`);
      assert.ok(run.ms < 2_000 + SLACK_MS, `${run.ms} ms`);
      const started = Date.now();
      await expectCode('STORE_UNAVAILABLE', () => SeenStore.open(location, { ...quiet, unavailableAfterMs: 1_500 }));
      assert.ok(Date.now() - started < 1_500 + SLACK_MS, `${Date.now() - started} ms`);
    } finally {
      await silent.close();
    }
  });

  test('a replica wait on a node without replicas ends at the deadline, saying the batch may be recorded', async () => {
    const store = await SeenStore.open(single.location(), { ...quiet, waitReplicas: 1, unavailableAfterMs: 2_000 });
    try {
      const started = Date.now();
      const error = await expectCode('STORE_UNAVAILABLE', () => store.scope('s').add(['http://a.example/w']));
      const ms = Date.now() - started;
      assert.ok(ms >= 2_000 && ms < 2_000 + SLACK_MS, `${ms} ms`);
      assert.match(error.message, /not acknowledged.*may read as seen/);
    } finally {
      await store.close();
    }
  });

  test('out of memory (maxmemory, noeviction): writers get STORE_FULL (9), read-only commands still work', async () => {
    const location = single.location();
    const port = single.nodes[0]!.port;
    const store = await SeenStore.open(location, quiet);
    try {
      await store.scope('s').add(['http://oom.example/1']);
    } finally {
      await store.close();
    }
    single.cli(port, 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    single.cli(port, 'CONFIG', 'SET', 'maxmemory', '1');
    try {
      const has = await timedCli(
        ['--store', withTimeout(location, 3_000), '--scope', 's', 'has', '--count'],
        'http://oom.example/1\nhttp://oom.example/2\n',
      );
      assert.equal(has.code, 0, has.stderr);
      assert.match(has.stdout, /seen 1\nunseen 1/);
      const stats = await timedCli(['--store', withTimeout(location, 3_000), '--scope', 's', 'stats'], '');
      assert.equal(stats.code, 0, stats.stderr);
      const writer = await timedCli(
        ['--store', withTimeout(location, 3_000), '--scope', 's', 'filter-new'],
        'http://oom.example/3\n',
      );
      assert.equal(writer.code, 9, writer.stderr);
      assert.match(writer.stderr, /STORE_FULL/);
    } finally {
      single.cli(port, 'CONFIG', 'SET', 'maxmemory', '0');
    }
  });

  test('timeout-ms= out of range is USAGE', async () => {
    await expectCode('USAGE', () => SeenStore.open('redis://127.0.0.1:1/?timeout-ms=5', quiet));
    await expectCode('USAGE', () => SeenStore.open('redis://127.0.0.1:1/?timeout-ms=abc', quiet));
  });
});

/**
 * A fresh store on the cluster with scope `s` of the classic strategy (one partition: its epoch
 * and frontier inbox in the slot of `{PREFIX/s/0}`) holding one URL; its location and that slot's master.
 */
async function classicScope(): Promise<{ location: string; master: RedisNode }> {
  const location = cluster.location();
  const prefix = /prefix=([^&]+)/.exec(location)![1]!;
  const seed = await SeenStore.open(location, quiet);
  await seed.scope('s', { strategy: 'classic' }).add(['http://seed.example/']);
  await seed.close();
  const master = masterOf(cluster, `{${prefix}/s/0}:in`);
  return { location: seededAt(location, master), master };
}

/**
 * The location with `node` as the one node it lists. A test's location lists the cluster's first
 * node, which failovers of earlier tests may have made the very replica a test pauses: a process
 * started then could reach no node at all, and would end at its deadline instead of doing its work.
 */
function seededAt(location: string, node: RedisNode): string {
  return location.replace(/^redis:\/\/127\.0\.0\.1:\d+/, `redis://127.0.0.1:${node.port}`);
}

describe('redis under faults: a cluster', { skip: missing }, () => {
  test('a paused master: writers go on once its replica took over, within the deadline', async () => {
    const location = cluster.location();
    const prefix = /prefix=([^&]+)/.exec(location)![1]!;
    const store = await SeenStore.open(location, { ...quiet, unavailableAfterMs: 15_000 });
    let victim: RedisNode | undefined;
    try {
      const scope = store.scope('s', { strategy: 'classic' });
      await scope.add(['http://a.example/0']);
      victim = masterOf(cluster, `{${prefix}/s}:scope`);
      const replica = replicaOf(cluster, victim.port)!;
      await whilePaused([victim], async () => {
        const added = await scope.addIfAbsent(['http://a.example/1', 'http://a.example/0']);
        assert.deepEqual(added, [true, false]);
        await until(async () => (await roleOf(replica)) === 'master', 'the replica promoted');
      });
    } finally {
      await store.close();
    }
    // The resumed master rejoins as a replica; the next tests read the cluster's layout.
    if (victim !== undefined)
      await until(
        async () => (await roleOf(victim!)) === 'slave' && (await clusterSettled(cluster)),
        'the old master rejoined as a replica',
      );
  });

  test('a master demoted (CLUSTER FAILOVER) under --wait-replicas 1 writers: both exit 0, every URL printed exactly once', async () => {
    const { location, master } = await classicScope();
    const replica = replicaOf(cluster, master.port)!;
    const urls = Array.from({ length: 20_000 }, (_, i) => `http://d${i % 97}.example/p/${i}`);
    // The writers read stdin, fed a little at a time until the failover is over: they are mid-stream through it.
    const inputs = [urls, [...urls].reverse()];
    const writers = inputs.map(() => {
      const child = spawnCli([
        '--store',
        withTimeout(location, 20_000),
        '--scope',
        's',
        '--wait-replicas',
        '1',
        'filter-new',
        '--batch-size',
        '50',
        '--batch-delay-ms',
        '5',
      ]);
      const writer = { child, result: collectCli(child), printing: false };
      child.stdout!.once('data', () => (writer.printing = true));
      return writer;
    });
    let fed = 0;
    const feed = (upTo: number): void => {
      for (const [i, writer] of writers.entries())
        writer.child.stdin!.write(`${inputs[i]!.slice(fed, upTo).join('\n')}\n`);
      fed = upTo;
    };
    let failedOver = false;
    const feeding = (async () => {
      while (!failedOver && fed < urls.length - 200) {
        feed(fed + 100);
        await sleep(20);
      }
    })();
    // Once both writers have answered a batch (their stores open, their first writes done), they are mid-stream.
    await until(() => writers.every((writer) => writer.printing), 'both writers printing new URLs');
    cluster.cli(replica.port, 'CLUSTER', 'FAILOVER');
    await until(
      async () => (await roleOf(replica)) === 'master' && (await roleOf(master)) === 'slave',
      'the replica promoted, the master demoted',
    );
    failedOver = true;
    await feeding;
    feed(urls.length);
    for (const writer of writers) writer.child.stdin!.end();
    const results = await Promise.all(writers.map((w) => w.result));
    for (const result of results) assert.equal(result.code, 0, result.stderr);
    const lines = results.flatMap((result) => result.stdout.split('\n').filter((line) => line !== ''));
    assert.equal(lines.length, urls.length, 'every URL printed once in all');
    assert.equal(new Set(lines).size, urls.length, 'no URL printed twice');
  });

  test('a WAIT answered -UNBLOCKED (as a demoted master answers it) is retried: the writer exits 0, every URL printed once', async () => {
    const { location, master } = await classicScope();
    const replica = replicaOf(cluster, master.port)!;
    const urls = Array.from({ length: 300 }, (_, i) => `http://u${i % 7}.example/p/${i}`);
    const child = spawnCli([
      '--store',
      withTimeout(location, 20_000),
      '--scope',
      's',
      '--wait-replicas',
      '1',
      'filter-new',
      '--batch-size',
      '100',
      '--batch-delay-ms',
      '5',
    ]);
    const result = collectCli(child);
    const waiting = (): string[] =>
      cluster
        .cli(master.port, 'CLIENT', 'LIST')
        .split('\n')
        .filter((line) => / cmd=wait /.test(line))
        .map((line) => /^id=(\d+)/.exec(line)![1]!);
    await whilePaused([replica], async () => {
      child.stdin!.write(`${urls.join('\n')}\n`);
      await until(() => waiting().length > 0, 'a WAIT blocked on the master');
      // CLIENT UNBLOCK ... ERROR answers a blocked WAIT -UNBLOCKED, as a master turning replica does.
      for (const id of waiting()) cluster.cli(master.port, 'CLIENT', 'UNBLOCK', id, 'ERROR');
    });
    child.stdin!.end();
    const { code, stdout, stderr } = await result;
    assert.equal(code, 0, stderr);
    const lines = stdout.split('\n').filter((line) => line !== '');
    assert.deepEqual([...lines].sort(), [...urls].sort());
  });

  test('a take answered after its lease (a stalled replica, --wait-replicas 1) hands out nothing: two takers never hold one URL', async () => {
    await until(() => clusterSettled(cluster), 'every node agreeing on the masters');
    const location = cluster.location();
    const prefix = /prefix=([^&]+)/.exec(location)![1]!;
    const store = await SeenStore.open(location, quiet);
    const urls = Array.from({ length: 5 }, (_, i) => `http://lease.example/${i}`);
    let partition: string;
    try {
      // One queue, handed out again at once: the CLI's take leases its first URL.
      const scope = store.scope('s', { strategy: 'classic' });
      await scope.frontier().configure({ queueKey: 'none', delayMs: 0 });
      await scope.enqueue(urls);
      [partition] = (await scope.frontier().urlStatus(urls[0]!))!.id.split('-') as [string];
    } finally {
      await store.close();
    }
    const leases = `{${prefix}/s/q${partition}}:leases`;
    const streamMaster = masterOf(cluster, leases);
    const replica = replicaOf(cluster, streamMaster.port)!;
    // The lease ends the partition's leases set holds: they change when a take has run in Redis.
    const leaseEnds = (): number[] =>
      cluster
        .cli(streamMaster.port, 'ZRANGE', leases, '0', '-1', 'WITHSCORES')
        .split('\n')
        .filter((_, i) => i % 2 === 1)
        .map(Number);
    const take = (): Promise<CliResult & { ms: number }> =>
      timedCli(
        [
          '--store',
          withTimeout(seededAt(location, streamMaster), 20_000),
          '--scope',
          's',
          '--wait-replicas',
          '1',
          'frontier',
          'take',
          '--count',
          '5',
          '--lease-ms',
          String(LEASE_MS),
        ],
        '',
      );
    const [first, second] = await whilePaused([replica], async () => {
      const one = take();
      await until(() => leaseEnds().length === 1, 'the first take run in Redis');
      const firstEnds = Math.max(...leaseEnds());
      // The first take's leases run out by the clock that times them (the CLI's calls pass none:
      // Redis's TIME), then a second taker comes.
      await until(
        async () => (await redisTimeMs(streamMaster.port)) > firstEnds,
        "the first take's leases to end by Redis's clock",
      );
      const two = take();
      await until(() => Math.min(...leaseEnds()) > firstEnds, 'the second take run in Redis');
      return [one, two];
    }).then((runs) => Promise.all(runs));
    assert.equal(first!.code, 0, first!.stderr);
    assert.equal(second!.code, 0, second!.stderr);
    const held = (run: CliResult): string[] =>
      run.stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split('\t')[1]!);
    // The first take's answer came after its lease had run out: it must hand out nothing.
    assert.deepEqual(held(first!), [], `the first take handed out URLs whose lease had run out: ${first!.stdout}`);
    for (const url of held(second!)) assert.ok(urls.includes(url));
  });

  test('a process started during a failover succeeds once it is over; a failed cluster ends at the deadline', async () => {
    const location = cluster.location();
    const seed = await SeenStore.open(location, quiet);
    await seed.scope('s').add(['http://a.example/1']);
    await seed.close();
    const victim = cluster.nodes.find((node) => node !== cluster.nodes[0] && cluster.masters().includes(node.port))!;
    const replica = replicaOf(cluster, victim.port)!;
    await cluster.kill(victim);
    const during = await timedCli(
      ['--store', withTimeout(location, 12_000), '--scope', 's', 'has', '--count'],
      'http://a.example/1\nhttp://a.example/2\n',
    );
    assert.equal(during.code, 0, during.stderr);
    assert.match(during.stdout, /seen 1\nunseen 1/);
    // Now the promoted replica dies too: its slots have no node. Readers and writers end at the deadline.
    await cluster.kill(replica);
    await until(
      async () => (await replyText(cluster.nodes[0]!.port, 'CLUSTER', 'INFO')).includes('cluster_state:fail'),
      'cluster_state:fail',
    );
    for (const command of [['has', '--count'], ['filter-new']]) {
      const run = await timedCli(
        ['--store', withTimeout(location, 3_000), '--scope', 's', ...command],
        'http://a.example/1\nhttp://b.example/2\nhttp://c.example/3\n',
      );
      assert.equal(run.code, 16, `${command[0]}: ${run.stderr} (after ${run.ms} ms)`);
      assert.ok(run.ms < 3_000 * 2 + SLACK_MS, `${command[0]}: ${run.ms} ms`);
    }
  });
});
