/**
 * What the Redis frontier costs (docs/frontier.md "On Redis"): bytes of Redis memory per queued
 * URL (MEMORY USAGE, SAMPLES 0, of every key of every queue partition, and of the inboxes, which
 * are empty once moved), waiting and leased, with and without a small payload, and enqueue
 * (add, inbox and the move into the queues) and take rates (per-host queues, no delay, 1,000 per
 * take and at most 1,000 of a queue), on a local cluster of 3 masters without replicas
 * (appendonly yes, appendfsync always), in one process; then the real lists' enqueue and take
 * again on a cluster of 3 masters with a replica each, where the move from the inboxes waits for a
 * replica to hold what it queued before it deletes the inbox entries (WAIT 1: docs/redis.md,
 * "Durability").
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/redis-frontier.js
 * The URLs: the shared lists (../shared/data, about 50k real crawl URLs) and 100k generated
 * crawl-like ones (the real lists hold fewer than 100k).
 */
import { SeenStore } from '../src/index.js';
import { QUEUE_STATE_KEYS } from '../src/store/redis/keys.js';
import { HAVE_SHARED_DATA, sharedUrls } from '../test/helpers/data.js';
import { generatedUrls } from '../test/helpers/generated-urls.js';
import { redisMissing, startRedisCluster, type RedisCluster } from '../test/helpers/redis-cluster.js';

const BATCH = 10_000;
const TAKE = 1_000;

function memory(cluster: RedisCluster, key: string): number {
  return Number(cluster.cli(cluster.nodes[0]!.port, '-c', 'MEMORY', 'USAGE', key, 'SAMPLES', '0') || 0);
}

/** The same URLs through addIfAbsent alone (no frontier): what an enqueue adds to an add. */
async function baseline(cluster: RedisCluster, name: string, urls: readonly string[]): Promise<void> {
  const store = await SeenStore.open(cluster.location(), { onWarning: () => {} });
  try {
    const scope = store.scope('m', { capacityUrls: urls.length * 2, fprTarget: 1e-6 });
    const started = process.hrtime.bigint();
    for (let i = 0; i < urls.length; i += BATCH) await scope.addIfAbsent(urls.slice(i, i + BATCH));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`${name}, addIfAbsent alone: ${Math.round(urls.length / seconds)} URLs/s`);
  } finally {
    await store.close();
  }
}

async function measure(cluster: RedisCluster, name: string, urls: readonly string[], data: boolean): Promise<void> {
  const location = cluster.location();
  const prefix = new URL(location).searchParams.get('prefix')!;
  const store = await SeenStore.open(location, { onWarning: () => {} });
  try {
    const scope = store.scope('m', { capacityUrls: urls.length * 2, fprTarget: 1e-6 });
    const frontier = scope.frontier();
    await frontier.configure({ delayMs: 0 });
    let started = process.hrtime.bigint();
    for (let i = 0; i < urls.length; i += BATCH) {
      const part = urls.slice(i, i + BATCH);
      await scope.enqueue(part, data ? { data: part.map((_, j) => ({ label: 'detail', depth: (i + j) % 7 })) } : {});
    }
    await frontier.stats();
    const enqueueSec = Number(process.hrtime.bigint() - started) / 1e9;
    // Every queue partition's keys, and every inbox (the scope's queues key says how many).
    const inboxes = Number(cluster.cli(cluster.nodes[0]!.port, '-c', 'GET', `{${prefix}/m}:queues`) || 1);
    const partitions = Number(
      cluster.cli(cluster.nodes[0]!.port, '-c', 'HGET', `{${prefix}/m}:frontier`, 'partitions'),
    );
    const keys = [
      ...Array.from({ length: inboxes }, (_, p) => `{${prefix}/m/${p}}:in`),
      ...Array.from({ length: partitions }, (_, i) =>
        QUEUE_STATE_KEYS.map((name) => `{${prefix}/m/q${i}}:${name}`),
      ).flat(),
    ];
    const used = (): number => keys.reduce((sum, key) => sum + memory(cluster, key), 0);
    const waiting = used();
    started = process.hrtime.bigint();
    let taken = 0;
    for (;;) {
      const got = await frontier.take(TAKE, { leaseMs: 600_000, perQueue: TAKE });
      if (got.length === 0) break;
      taken += got.length;
    }
    const takeSec = Number(process.hrtime.bigint() - started) / 1e9;
    const leased = used();
    const urlBytes = urls.reduce((sum, url) => sum + Buffer.byteLength(url), 0) / urls.length;
    console.log(
      `${name}${data ? ' + data' : ''}: ${urls.length} URLs (mean ${urlBytes.toFixed(1)} bytes), waiting ${(waiting / urls.length).toFixed(1)} B/URL, ` +
        `leased ${(leased / taken).toFixed(1)} B/URL (${partitions} queue partitions, ${inboxes} inboxes); enqueue ${Math.round(urls.length / enqueueSec)} URLs/s, take ${Math.round(taken / takeSec)} URLs/s (${TAKE} per take)`,
    );
  } finally {
    await store.close();
  }
}

const missing = redisMissing();
if (missing !== undefined) {
  console.log(`redis frontier bench skipped: ${missing}`);
} else {
  const real = [...sharedUrls('crawl-sitelist-15k.txt'), ...sharedUrls('crawl-benign-35k.txt')];
  const distinct = [...new Set(real)];
  const name = HAVE_SHARED_DATA ? 'shared lists (real)' : 'shared lists (generated stand-ins)';
  const bare = await startRedisCluster({ masters: 3, replicas: 0 });
  try {
    await baseline(bare, name, distinct);
    await measure(bare, name, distinct, false);
    await measure(bare, name, distinct, true);
    await measure(bare, 'generated', generatedUrls(100_000, 7), false);
  } finally {
    await bare.stop();
  }
  const replicated = await startRedisCluster({ masters: 3, replicas: 1 });
  try {
    await baseline(replicated, `${name}, a replica per master`, distinct);
    await measure(replicated, `${name}, a replica per master`, distinct, false);
  } finally {
    await replicated.stop();
  }
}
