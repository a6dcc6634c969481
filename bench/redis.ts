/**
 * The Redis row of `npm run bench` (issue 19): seenstore's Redis backend against what crawler
 * operators run today on Redis, on the same data and the same local cluster (3 masters, no
 * replicas, appendonly yes + appendfsync always), in one run:
 *
 * - seenstore: Scope.addIfAbsent in batches of 10,000 (one FCALL per partition the batch touches,
 *   all at once), measured after a first, cold run of the process on a scope of its own (reported
 *   apart: JIT compilation); then the same URLs again (all seen), a run with two batches in flight (as
 *   filter-new keeps them: the client hashes one batch while Redis decides the other), and a run
 *   with the masters not fsyncing (appendfsync no: fsync's share of the time, not a durable setting);
 * - bitmap Bloom: per URL one `BITFIELD key SET u1 P 1` × k on one of 64 bitmaps (the URL's
 *   positions by seenstore's own classic arithmetic, same m and k), pipelined per batch: new when
 *   any old bit was 0 (the scrapy-redis Bloom pattern, made atomic per URL);
 * - SADD: an exact set, 64 keys, pipelined per batch.
 *
 * Prints URLs/s, the client's and Redis's CPU per URL, Redis memory, and the issue's targets.
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/redis.js [--quick]
 */
import { createCluster, RESP_TYPES } from 'redis';
import { SeenStore } from '../src/index.js';
import { EpochHasher } from '../src/filters/epoch-hasher.js';
import { PositionPlan } from '../src/filters/positions.js';
import { sizeForFpr } from '../src/filters/sizing.js';
import { freshSeedHex } from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';
import { redisMissing, startRedisCluster, type RedisCluster } from '../test/helpers/redis-cluster.js';
import { readUrls, sharedDataset } from './data.js';
import { recordTargets } from './targets.js';

const BATCH = 10_000;
const FPR = 0.01;
const KEYS = 64;

interface Row {
  readonly contender: string;
  readonly urlsPerSec: number;
  readonly fresh: number;
  readonly clientCpuUsPerUrl: number;
  readonly redisCpuUsPerUrl: number;
  readonly redisBytes: number;
}

function redisCpu(cluster: RedisCluster): number {
  return cluster.masters().reduce((sum, port) => {
    const info = cluster.cli(port, 'INFO', 'cpu');
    return sum + Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)![1]);
  }, 0);
}

function usedMemory(cluster: RedisCluster): number {
  return cluster
    .masters()
    .reduce((sum, port) => sum + Number(/used_memory:(\d+)/.exec(cluster.cli(port, 'INFO', 'memory'))![1]), 0);
}

async function measure(
  name: string,
  cluster: RedisCluster,
  urls: readonly string[],
  run: () => Promise<number>,
): Promise<Row> {
  const memory = usedMemory(cluster);
  const redis0 = redisCpu(cluster);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const fresh = await run();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return {
    contender: name,
    urlsPerSec: urls.length / seconds,
    fresh,
    clientCpuUsPerUrl: (cpu.user + cpu.system) / urls.length,
    redisCpuUsPerUrl: ((redisCpu(cluster) - redis0) * 1e6) / urls.length,
    redisBytes: usedMemory(cluster) - memory,
  };
}

async function main(): Promise<void> {
  const missing = redisMissing();
  if (missing !== undefined) {
    process.stdout.write(`redis bench skipped: ${missing}\n`);
    return;
  }
  const urls = readUrls(sharedDataset().path);
  const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
  try {
    const rows: Row[] = [];
    const { mBits, k } = sizeForFpr(urls.length, FPR);
    // seenstore: its first slice is sized for half the target (docs/epochs.md), as every epoch is.
    let filterBits = 0;
    let epochBytes = 0;
    const store = await SeenStore.open(cluster.location(), { onWarning: () => {} });
    const addAll = async (scopeName: string, inFlight = 1): Promise<number> => {
      const scope = store.scope(scopeName, { capacityUrls: urls.length, fprTarget: FPR });
      let fresh = 0;
      const pending: Promise<void>[] = [];
      for (let at = 0; at < urls.length; at += BATCH) {
        if (pending.length === inFlight) await pending.shift();
        pending.push(
          scope
            .addIfAbsent(urls.slice(at, at + BATCH))
            .then((answers) => void (fresh += answers.filter(Boolean).length)),
        );
      }
      await Promise.all(pending);
      return fresh;
    };
    // The scopes exist before the clock starts (the epoch's record; its partitions are created by the first adds).
    await store.scope('bench', { capacityUrls: urls.length, fprTarget: FPR }).create();
    await store.scope('no-fsync', { capacityUrls: urls.length, fprTarget: FPR }).create();
    await store.scope('in-flight', { capacityUrls: urls.length, fprTarget: FPR }).create();
    await store.scope('cold', { capacityUrls: urls.length, fprTarget: FPR }).create();
    // The first run of the process is measured apart: its code is still being compiled (V8's
    // optimising tiers run on other threads, counted in the client's CPU). A crawl adds for hours,
    // so the target rows are the runs after it, each on a scope of its own (Redis does the same work).
    const cold = await measure('seenstore, the first run of the process (cold)', cluster, urls, () => addAll('cold'));
    rows.push(await measure('seenstore redis backend', cluster, urls, () => addAll('bench')));
    const bench = store.scope('bench');
    filterBits = (await bench.epoch(1)).sliceDetails.reduce((sum, slice) => sum + slice.mBits, 0);
    // MEMORY USAGE of the epoch's keys (used_memory also moves with the function library's Lua
    // VM, loaded at open, and with client buffers).
    epochBytes = (await bench.stats()).epochs[0]!.bytesOnDisk;
    rows.push(await measure('seenstore, the same URLs again (all seen)', cluster, urls, () => addAll('bench')));
    rows.push(await measure('seenstore, two batches in flight', cluster, urls, () => addAll('in-flight', 2)));
    // fsync's share: the same adds with the masters not fsyncing their AOF (not a durable setting).
    for (const port of cluster.masters()) cluster.cli(port, 'CONFIG', 'SET', 'appendfsync', 'no');
    rows.push(await measure('seenstore, appendfsync no (fsync share only)', cluster, urls, () => addAll('no-fsync')));
    for (const port of cluster.masters()) cluster.cli(port, 'CONFIG', 'SET', 'appendfsync', 'always');
    await store.close();
    const client = createCluster({
      rootNodes: [{ socket: { host: '127.0.0.1', port: cluster.nodes[0]!.port } }],
    }).withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
    client.on('error', () => {});
    await client.connect();
    const hash = await XxHash.load();
    const slice = { layout: 'classic', mBits: Math.ceil(mBits / KEYS / 512) * 512, k, seeds: [freshSeedHex()] };
    const hasher = new EpochHasher(hash, 'url', [slice]);
    const plan = new PositionPlan([slice], 'xxh64-km-v2');
    rows.push(
      await measure('bitmap Bloom, k BITFIELD SET per URL', cluster, urls, async () => {
        let fresh = 0;
        const words = new Uint32Array(BATCH * hasher.stride);
        const positions = Buffer.alloc(BATCH * plan.perKey * 4);
        for (let at = 0; at < urls.length; at += BATCH) {
          const part = urls.slice(at, at + BATCH);
          hasher.hash(part, words);
          plan.writeU32(words, hasher.stride, part.length, positions, (p) => p);
          const replies = await Promise.all(
            part.map((_, i) => {
              const key = `{bloom:${words[i * hasher.stride]! % KEYS}}`;
              const args = ['BITFIELD', key];
              for (let j = 0; j < k; j++) args.push('SET', 'u1', String(positions.readUInt32LE((i * k + j) * 4)), '1');
              return client.sendCommand(key, false, args) as Promise<number[]>;
            }),
          );
          for (const old of replies) if (old.some((bit) => Number(bit) === 0)) fresh++;
        }
        return fresh;
      }),
    );
    rows.push(
      await measure('exact set, SADD per URL', cluster, urls, async () => {
        let fresh = 0;
        for (let at = 0; at < urls.length; at += BATCH) {
          const part = urls.slice(at, at + BATCH);
          const replies = await Promise.all(
            part.map(
              (url) =>
                client.sendCommand(`{set:${hashOf(url) % KEYS}}`, false, [
                  'SADD',
                  `{set:${hashOf(url) % KEYS}}`,
                  url,
                ]) as Promise<number>,
            ),
          );
          for (const added of replies) fresh += Number(added);
        }
        return fresh;
      }),
    );
    await client.close();
    const ours = rows[0]!;
    const seen = rows[1]!;
    const overlapped = rows[2]!;
    const bitmap = rows.find((row) => row.contender.startsWith('bitmap'))!;
    let text = `\nRedis (issue 19): ${urls.length.toLocaleString('en-US')} URLs, 3 local masters, appendonly yes, appendfsync always, batches of ${BATCH}\n\n`;
    text +=
      '| contender | URLs/s | new | client CPU µs/URL | Redis CPU µs/URL | used_memory change, bytes |\n|---|---|---|---|---|---|\n';
    for (const row of [cold, ...rows])
      text += `| ${row.contender} | ${Math.round(row.urlsPerSec).toLocaleString('en-US')} | ${row.fresh} | ${row.clientCpuUsPerUrl.toFixed(2)} | ${row.redisCpuUsPerUrl.toFixed(2)} | ${row.redisBytes.toLocaleString('en-US')} |\n`;
    const targets = [
      ['add-if-absent URLs/s from one process', Math.round(ours.urlsPerSec), '>= 250,000', ours.urlsPerSec >= 250_000],
      [
        'the same, two batches in flight',
        Math.round(overlapped.urlsPerSec),
        '>= 250,000',
        overlapped.urlsPerSec >= 250_000,
      ],
      ['Redis CPU per new URL, µs (issue 29)', ours.redisCpuUsPerUrl.toFixed(2), '<= 3', ours.redisCpuUsPerUrl <= 3],
      ['Redis CPU per already-seen URL, µs', seen.redisCpuUsPerUrl.toFixed(2), '-', true],
      [
        'vs the per-URL bitmap Bloom',
        `${(ours.urlsPerSec / bitmap.urlsPerSec).toFixed(2)}x`,
        '>= 4x',
        ours.urlsPerSec >= 4 * bitmap.urlsPerSec,
      ],
      [
        'Redis memory (MEMORY USAGE of the epoch) / filter bits',
        `${(epochBytes / (filterBits / 8)).toFixed(2)}x`,
        '<= 1.15x',
        epochBytes <= 1.15 * (filterBits / 8),
      ],
    ] as const;
    text += '\n| target | measured | wanted | met |\n|---|---|---|---|\n';
    for (const [what, measured, wanted, met] of targets)
      text += `| ${what} | ${measured} | ${wanted} | ${met ? 'yes' : 'MISSED'} |\n`;
    recordTargets('redis', [
      {
        issue: 29,
        order: 10,
        figure: `Redis backend: Redis CPU per new URL (3 local masters, this bench's epoch of ${urls.length.toLocaleString('en-US')} URLs; larger epochs cost more: docs/benchmarks.md)`,
        measured: `${ours.redisCpuUsPerUrl.toFixed(2)} µs (per seen URL ${seen.redisCpuUsPerUrl.toFixed(2)})`,
        target: '≤ 3 µs',
        met: ours.redisCpuUsPerUrl <= 3,
      },
      {
        issue: 29,
        order: 10.5,
        figure: 'Redis backend: add-if-absent URLs/s from one process on the local cluster',
        measured: `${Math.round(ours.urlsPerSec).toLocaleString('en-US')} one batch at a time; ${Math.round(overlapped.urlsPerSec).toLocaleString('en-US')} with two in flight (the process's first, cold run: ${Math.round(cold.urlsPerSec).toLocaleString('en-US')})`,
        target: '≥ 250,000',
        met: ours.urlsPerSec >= 250_000,
      },
    ]);
    process.stdout.write(text);
  } finally {
    await cluster.stop();
  }
}

/** A cheap string hash to pick a set key (FNV-1a). */
function hashOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

await main();
