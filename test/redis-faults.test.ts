import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { collectCli, spawnCli, type CliResult } from './helpers/cli.js';
import { expectCode } from './helpers/errors.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';
import { masterOf, replicaOf, silentListener, until, whilePaused } from './helpers/redis-faults.js';

/**
 * Issue 32: every call to Redis ends within its deadline (`timeout-ms=` in the location, the
 * `unavailableAfterMs` option): a paused node, a silent TCP listener, a failed cluster, a start
 * during a failover. The deadlines here are 2–12 s; a CLI run is killed after KILL_MS so that a
 * hang fails the test instead of holding it.
 */
const missing = redisMissing();
const quiet = { onWarning: () => {} };
const KILL_MS = 40_000;
/** Slack over a deadline for process start, the last attempt and closing, on a loaded 2-core machine. */
const SLACK_MS = 4_000;

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

function withTimeout(location: string, ms: number): string {
  return `${location}${location.includes('?') ? '&' : '/?'}timeout-ms=${ms}`;
}

const single = missing === undefined ? await startRedisCluster({ cluster: false }) : (undefined as unknown as RedisCluster);
after(() => single?.stop());
// The cluster's tests kill nodes: it is this file's own.
const cluster = missing === undefined ? await startRedisCluster() : (undefined as unknown as RedisCluster);
after(() => cluster?.stop());

describe('redis deadlines: a single node', { skip: missing }, () => {
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

  test('timeout-ms= out of range is USAGE', async () => {
    await expectCode('USAGE', () => SeenStore.open('redis://127.0.0.1:1/?timeout-ms=5', quiet));
    await expectCode('USAGE', () => SeenStore.open('redis://127.0.0.1:1/?timeout-ms=abc', quiet));
  });
});

describe('redis deadlines: a cluster', { skip: missing }, () => {
  test('a paused master: writers go on once its replica took over, within the deadline', async () => {
    const location = cluster.location();
    const prefix = /prefix=([^&]+)/.exec(location)![1]!;
    const store = await SeenStore.open(location, { ...quiet, unavailableAfterMs: 15_000 });
    try {
      const scope = store.scope('s', { strategy: 'classic' });
      await scope.add(['http://a.example/0']);
      const victim = masterOf(cluster, `{${prefix}/s}:scope`);
      const replica = replicaOf(cluster, victim.port)!;
      await whilePaused([victim], async () => {
        const added = await scope.addIfAbsent(['http://a.example/1', 'http://a.example/0']);
        assert.deepEqual(added, [true, false]);
        await until(() => /role:master/.test(cluster.cli(replica.port, 'INFO', 'replication')), 'the replica promoted');
      });
    } finally {
      await store.close();
    }
  });

  test('a process started during a failover succeeds once it is over; a failed cluster ends at the deadline', async () => {
    const location = cluster.location();
    const seed = await SeenStore.open(location, quiet);
    await seed.scope('s').add(['http://a.example/1']);
    await seed.close();
    const victim = cluster.nodes.find((node) => node !== cluster.nodes[0] && cluster.masters().includes(node.port))!;
    const replica = replicaOf(cluster, victim.port)!;
    await cluster.kill(victim);
    const during = await timedCli(['--store', withTimeout(location, 12_000), '--scope', 's', 'has', '--count'], 'http://a.example/1\nhttp://a.example/2\n');
    assert.equal(during.code, 0, during.stderr);
    assert.match(during.stdout, /seen 1\nunseen 1/);
    // Now the promoted replica dies too: its slots have no node. Readers and writers end at the deadline.
    await cluster.kill(replica);
    await until(() => cluster.cli(cluster.nodes[0]!.port, 'CLUSTER', 'INFO').includes('cluster_state:fail'), 'cluster_state:fail');
    for (const command of [['has', '--count'], ['filter-new']]) {
      const run = await timedCli(['--store', withTimeout(location, 3_000), '--scope', 's', ...command], 'http://a.example/1\nhttp://b.example/2\nhttp://c.example/3\n');
      assert.equal(run.code, 16, `${command[0]}: ${run.stderr} (after ${run.ms} ms)`);
      assert.ok(run.ms < 3_000 * 2 + SLACK_MS, `${command[0]}: ${run.ms} ms`);
    }
  });
});
