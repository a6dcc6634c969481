/**
 * The Redis frontier of one build of seenstore, for before/after runs of two builds interleaved
 * (bench/redis-frontier-ab.sh; docs/benchmarks.md "Issue 47 (the Redis part)"): on a fresh local cluster of 3
 * masters (no replicas, AOF fsynced always), enqueues COUNT real URLs in batches of 10,000, each
 * followed by a frontier call (which moves the batch from the inboxes into the queues, as a
 * crawler's next take would), then measures what the waiting URLs occupy, then takes every URL
 * (TAKE per call, at most TAKE of a queue) and finishes them (`done`, TAKE per call). Prints one
 * JSON line: how many URLs the enqueue found new and how many the frontier holds, the mean URL's
 * bytes; per waiting URL, MEMORY USAGE of the frontier's queue partitions (every key of
 * `{PREFIX/SCOPE/qI}`, whatever the layout) and the masters' used_memory grown by the enqueue less
 * the epoch's own keys; URLs per second, the masters' and this process's CPU µs per URL, and the
 * bytes per URL written to the masters' AOFs, of enqueue (add, inbox and move), take and done.
 *
 *   node dist/bench/redis-frontier-ab.js PATH/TO/dist/src/index.js [COUNT] [packages|shared]
 *
 * The URLs: bench's 1.7M package repository URLs (nearly all on github.com: one huge queue), or
 * the shared crawl lists (50,553 URLs of about 3,500 hosts).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { largeUrls, sharedUrls } from '../test/helpers/data.js';
import { startRedisCluster, type RedisCluster } from '../test/helpers/redis-cluster.js';

const BATCH = 10_000;
const TAKE = 1_000;

const [index, countText = '1000000', source = 'packages'] = process.argv.slice(2);
if (index === undefined) {
  process.stderr.write('usage: redis-frontier-ab INDEX_JS [COUNT] [packages|shared]\n');
  process.exit(2);
}
const { SeenStore } = (await import(pathToFileURL(resolve(index)).href)) as typeof import('../src/index.js');
const count = Number(countText);
const urls =
  source === 'shared'
    ? [...new Set([...sharedUrls('crawl-sitelist-15k.txt'), ...sharedUrls('crawl-benign-35k.txt')])].slice(0, count)
    : largeUrls(count).urls;

/** Seconds of CPU all masters spent (INFO cpu: user and system). */
function redisCpuS(cluster: RedisCluster): number {
  return cluster.masters().reduce((sum, port) => {
    const info = cluster.cli(port, 'INFO', 'cpu');
    return sum + Number(/used_cpu_user:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
  }, 0);
}

function usedMemory(cluster: RedisCluster): number {
  return cluster
    .masters()
    .reduce((sum, port) => sum + Number(/used_memory:(\d+)/.exec(cluster.cli(port, 'INFO', 'memory'))![1]), 0);
}

/** used_memory of all masters once it stopped falling (a closed client's buffers are freed by Redis's cron). */
async function settledMemory(cluster: RedisCluster): Promise<number> {
  let last = usedMemory(cluster);
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = usedMemory(cluster);
    if (now >= last) return now;
    last = now;
  }
  return last;
}

/** MEMORY USAGE (every element: SAMPLES 0) of the keys matching `pattern` on every master. */
function keysBytes(cluster: RedisCluster, pattern: string, except?: RegExp): number {
  let bytes = 0;
  for (const port of cluster.masters()) {
    for (const key of cluster.cli(port, '--scan', '--pattern', pattern).split('\n').filter(Boolean)) {
      if (except === undefined || !except.test(key))
        bytes += Number(cluster.cli(port, 'MEMORY', 'USAGE', key, 'SAMPLES', '0') || 0);
    }
  }
  return bytes;
}

/** Bytes the masters' append-only files hold (INFO persistence: aof_current_size). */
function aofBytes(cluster: RedisCluster): number {
  return cluster
    .masters()
    .reduce(
      (sum, port) => sum + Number(/aof_current_size:(\d+)/.exec(cluster.cli(port, 'INFO', 'persistence'))![1]),
      0,
    );
}

/** Runs `phase`; its wall seconds, the masters' CPU seconds and this process's, and the bytes it added to the masters' AOFs. */
async function timed(
  cluster: RedisCluster,
  phase: () => Promise<void>,
): Promise<{ wallS: number; redisS: number; clientS: number; aofBytes: number }> {
  const cpu = redisCpuS(cluster);
  const aof = aofBytes(cluster);
  const client = process.cpuUsage();
  const started = process.hrtime.bigint();
  await phase();
  const used = process.cpuUsage(client);
  return {
    wallS: Number(process.hrtime.bigint() - started) / 1e9,
    redisS: redisCpuS(cluster) - cpu,
    clientS: (used.user + used.system) / 1e6,
    aofBytes: aofBytes(cluster) - aof,
  };
}

const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
try {
  const location = cluster.location();
  const prefix = new URL(location).searchParams.get('prefix')!;
  const writer = await SeenStore.open(location, { onWarning: () => {} });
  const writing = writer.scope('m', { capacityUrls: urls.length * 2, fprTarget: 1e-6 });
  await writing.frontier().configure({ delayMs: 0 });
  const epochBefore = keysBytes(cluster, `{${prefix}/m*`, /\/q\d+\}/);
  const memoryBefore = await settledMemory(cluster);
  let found = 0;
  const enqueue = await timed(cluster, async () => {
    for (let i = 0; i < urls.length; i += BATCH) {
      found += (await writing.enqueue(urls.slice(i, i + BATCH))).filter(Boolean).length;
      await writing.frontier().stats();
    }
  });
  // Measured with the writer gone: a client's connections hold buffers as large as its last calls.
  await writer.close();
  const grown =
    (await settledMemory(cluster)) - memoryBefore - (keysBytes(cluster, `{${prefix}/m*`, /\/q\d+\}/) - epochBefore);
  const frontierBytes = keysBytes(cluster, `{${prefix}/m/q*`);
  const store = await SeenStore.open(location, { onWarning: () => {} });
  const frontier = store.scope('m').frontier();
  const queued = (await frontier.stats()).pending;
  const ids: string[] = [];
  const take = await timed(cluster, async () => {
    for (
      let got = await frontier.take(TAKE, { perQueue: TAKE, leaseMs: 3_600_000 });
      got.length > 0;
      got = await frontier.take(TAKE, { perQueue: TAKE, leaseMs: 3_600_000 })
    ) {
      for (const entry of got) ids.push(entry.id);
    }
  });
  let finished = 0;
  const done = await timed(cluster, async () => {
    for (let i = 0; i < ids.length; i += TAKE) finished += await frontier.done(ids.slice(i, i + TAKE));
  });
  await store.close();
  const meanUrlBytes = urls.reduce((sum, url) => sum + Buffer.byteLength(url), 0) / urls.length;
  const per = (n: number, bytes: number): number => Math.round((bytes / n) * 10) / 10;
  process.stdout.write(
    `${JSON.stringify({
      urls: urls.length,
      // The enqueue's new URLs (the filter's false positives are not), and what the frontier holds of them.
      found,
      queued,
      taken: ids.length,
      finished,
      meanUrlBytes: per(1, meanUrlBytes),
      frontierKeysBytesPerUrl: per(queued, frontierBytes),
      usedMemoryBytesPerUrl: per(queued, grown),
      enqueueUrlsPerS: Math.round(urls.length / enqueue.wallS),
      enqueueRedisUsPerUrl: per(urls.length, enqueue.redisS * 1e6),
      enqueueClientUsPerUrl: per(urls.length, enqueue.clientS * 1e6),
      enqueueAofBytesPerUrl: per(urls.length, enqueue.aofBytes),
      takeUrlsPerS: Math.round(ids.length / take.wallS),
      takeRedisUsPerUrl: per(ids.length, take.redisS * 1e6),
      takeClientUsPerUrl: per(ids.length, take.clientS * 1e6),
      takeAofBytesPerUrl: per(ids.length, take.aofBytes),
      doneUrlsPerS: Math.round(finished / done.wallS),
      doneRedisUsPerUrl: per(finished, done.redisS * 1e6),
      doneClientUsPerUrl: per(finished, done.clientS * 1e6),
      doneAofBytesPerUrl: per(finished, done.aofBytes),
    })}\n`,
  );
} finally {
  await cluster.stop();
}
