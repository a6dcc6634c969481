/**
 * The Redis frontier's queues (issue 28; docs/benchmarks.md "Redis frontier: take and queues"):
 *  1. Balance: how the real hosts of ../shared/data spread over the frontier's queue partitions
 *     (a queue lives wholly in one slot), against URLs spread by their own hash (the epochs' bits).
 *  2. `take` cost against the number of queues: the same 100,000 URLs in 1,000 queues (100 each)
 *     and in 50,000 queues (2 each), no delay, 200 takes of 100 URLs (one per queue), on a local
 *     cluster of 3 masters without replicas (AOF fsynced always), in one process.
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/redis-queues.js
 * With SEENSTORE_LIBRARY=DIR/dist/src/index.js, part 2 runs on that build instead (the frontier
 * before queues, built from an earlier commit: `git archive COMMIT | tar -x -C DIR`, then
 * `npm run build` there), on a cluster of its own: its takes ignore queues, so its rows are the
 * same URLs taken 100 at a time, oldest first.
 */
import type { SeenStore as SeenStoreClass } from '../src/index.js';
import { XxHash } from '../src/hash/xxhash.js';
import { QUEUE_PARTITIONS, queuePartitionOf } from '../src/store/redis/queue-partition.js';
import { queueKeyOf } from '../src/url/queue-key.js';
import { redisMissing, startRedisCluster, type RedisCluster } from '../test/helpers/redis-cluster.js';
import { readUrls, sharedDataset } from './data.js';
import { recordTargets } from './targets.js';

const library = process.env.SEENSTORE_LIBRARY;
const { SeenStore } = (await import(library ?? '../src/index.js')) as { SeenStore: typeof SeenStoreClass };
const TAKES = 200;
const PER_TAKE = 100;
const URLS = 100_000;
const BATCH = 10_000;

function balance(hash: XxHash): void {
  const words = new Uint32Array(2);
  const urls = readUrls(sharedDataset().path);
  const perHost = new Map<string, number>();
  for (const url of urls) {
    const host = queueKeyOf(url, 'host') ?? '';
    perHost.set(host, (perHost.get(host) ?? 0) + 1);
  }
  const top = Math.max(...perHost.values());
  console.log(
    `balance: ${urls.length} URLs, ${perHost.size} hosts, the largest host ${((100 * top) / urls.length).toFixed(1)}% of the URLs`,
  );
  console.log(
    "| partitions | by | max/mean URLs per partition | max/mean queues per partition | largest partition's share of URLs |",
  );
  console.log('|---|---|---|---|---|');
  for (const partitions of [8, QUEUE_PARTITIONS, 128]) {
    const byQueueUrls = new Array<number>(partitions).fill(0);
    const byQueueHosts = new Array<number>(partitions).fill(0);
    for (const [host, n] of perHost) {
      const p = queuePartitionOf(hash, host, partitions, words);
      byQueueUrls[p]! += n;
      byQueueHosts[p]!++;
    }
    const byUrl = new Array<number>(partitions).fill(0);
    for (const url of urls) byUrl[queuePartitionOf(hash, url, partitions, words)]!++;
    const ratio = (counts: number[], total: number) => (Math.max(...counts) / (total / partitions)).toFixed(2);
    const share = (counts: number[]) => `${((100 * Math.max(...counts)) / urls.length).toFixed(1)}%`;
    console.log(
      `| ${partitions} | queue key (host) | ${ratio(byQueueUrls, urls.length)} | ${ratio(byQueueHosts, perHost.size)} | ${share(byQueueUrls)} |`,
    );
    console.log(`| ${partitions} | URL | ${ratio(byUrl, urls.length)} | – | ${share(byUrl)} |`);
  }
}

/** CPU time the cluster's masters have used, in ms (INFO CPU: user and system, summed). */
function redisCpuMs(cluster: RedisCluster): number {
  let ms = 0;
  for (const port of cluster.masters()) {
    const info = cluster.cli(port, 'INFO', 'CPU');
    for (const field of ['used_cpu_user', 'used_cpu_sys'])
      ms += 1000 * Number(new RegExp(`^${field}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  }
  return ms;
}

/** Per-take milliseconds (median and mean) of TAKES takes of PER_TAKE URLs, one per queue, on a frontier of `queues` queues. */
async function takeCost(cluster: RedisCluster, queues: number): Promise<number> {
  const store = await SeenStore.open(cluster.location(), { onWarning: () => {} });
  try {
    const scope = store.scope('t', { capacityUrls: URLS * 2, fprTarget: 1e-6 });
    const frontier = scope.frontier();
    if (library === undefined) await frontier.configure({ delayMs: 0 });
    const perQueue = URLS / queues;
    const urls = Array.from(
      { length: URLS },
      (_, i) => `https://h${i % queues}.example/page/${Math.floor(i / queues)}`,
    );
    let started = process.hrtime.bigint();
    for (let i = 0; i < urls.length; i += BATCH) await scope.enqueue(urls.slice(i, i + BATCH));
    await frontier.stats();
    const enqueueSec = Number(process.hrtime.bigint() - started) / 1e9;
    const times: number[] = [];
    let taken = 0;
    const redisCpuBefore = redisCpuMs(cluster);
    const clientCpuBefore = process.cpuUsage();
    for (let t = 0; t < TAKES; t++) {
      started = process.hrtime.bigint();
      taken += (await frontier.take(PER_TAKE, { leaseMs: 600_000 })).length;
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    const redisCpuPerTake = (redisCpuMs(cluster) - redisCpuBefore) / TAKES;
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const clientCpuPerTake = (clientCpu.user + clientCpu.system) / 1000 / TAKES;
    times.sort((a, b) => a - b);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    console.log(
      `| ${library === undefined ? '' : 'before queues: '}${queues.toLocaleString('en')} hosts × ${perQueue} URLs | ${Math.round(URLS / enqueueSec).toLocaleString('en')} URLs/s | ${times[times.length >> 1]!.toFixed(1)} ms | ${mean.toFixed(1)} ms | ${Math.round((1000 * taken) / times.reduce((a, b) => a + b, 0)).toLocaleString('en')} URLs/s | ${redisCpuPerTake.toFixed(2)} ms | ${clientCpuPerTake.toFixed(2)} ms |`,
    );
    return redisCpuPerTake;
  } finally {
    await store.close();
  }
}

if (library === undefined) balance(await XxHash.load());
const missing = redisMissing();
if (missing !== undefined) {
  console.log(`redis queues bench skipped: ${missing}`);
} else {
  const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
  try {
    console.log(
      `\ntake: ${TAKES} takes of ${PER_TAKE} URLs (one per queue, delay 0), ${URLS.toLocaleString('en')} URLs queued`,
    );
    console.log(
      '| frontier | enqueue (add + inbox + move) | take p50 | take mean | take rate | Redis CPU per take | client CPU per take |',
    );
    console.log('|---|---|---|---|---|---|---|');
    const cpuMs = new Map<number, number[]>([
      [1_000, []],
      [50_000, []],
    ]);
    for (const queues of [1_000, 50_000, 1_000, 50_000]) cpuMs.get(queues)!.push(await takeCost(cluster, queues));
    const mean = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0) / values.length;
    const ratio = mean(cpuMs.get(50_000)!) / mean(cpuMs.get(1_000)!);
    if (library === undefined) {
      recordTargets('redis-queues', [
        {
          issue: 28,
          order: 3,
          figure: '`take` with 50k queues ÷ 1k queues — Redis Cluster (Redis CPU per take)',
          measured: `${ratio.toFixed(2)}× (mean of 2 runs each)`,
          target: '≤ 1.5×',
          met: ratio <= 1.5,
        },
      ]);
    }
  } finally {
    await cluster.stop();
  }
}
