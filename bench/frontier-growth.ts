/**
 * The LMDB frontier as it grows from 10k to 10M queued URLs (issue 47's capacity plan): at each
 * checkpoint the enqueue rate of the last stretch, a take of 1,000 URLs (10 per queue, delay 0)
 * plus their done (median of TAKES), the frontier database's bytes per queued URL and the
 * process's RSS.
 *
 * The 10M URLs are synthesized from real shapes: the hosts of the ~1.74M real URLs (package
 * repositories and ../shared/data), each also under `wN.` subdomains up to HOSTS hosts, chosen
 * with a Zipf(1) law over their ranks (a few hosts hold much of a crawl, as on the web); the path
 * of a real URL picked at random, with a unique suffix. Generated batch by batch from a seeded
 * generator: the same URLs on every run, never all in memory.
 *
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/frontier-growth.js [maxUrls]
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { open } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { mulberry32 } from '../src/cli/commands/demo.js';
import { BENCH_DIR, packageReposDataset, readUrls } from './data.js';

const MAX = Number(process.argv[2] ?? 10_000_000);
const CHECKPOINTS = [10_000, 100_000, 1_000_000, 10_000_000].filter((n) => n <= MAX);
const BATCH = 10_000;
const HOSTS = 100_000;
const TAKES = 5;
const SHARED = resolve(BENCH_DIR, '..', '..', 'shared', 'data');

interface Shapes {
  readonly hosts: string[];
  /** Zipf(1) cumulative weights over host ranks. */
  readonly cumulative: Float64Array;
  readonly paths: string[];
}

function shapes(): Shapes {
  const urls = [
    ...readUrls(packageReposDataset().path),
    ...['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'].flatMap((file) => readUrls(join(SHARED, file))),
  ];
  const counts = new Map<string, number>();
  const paths: string[] = [];
  for (const url of urls) {
    try {
      const parsed = new URL(url);
      counts.set(parsed.host, (counts.get(parsed.host) ?? 0) + 1);
      paths.push(`${parsed.pathname}${parsed.search}`);
    } catch {
      // A line the URL parser refuses has no shape to lend.
    }
  }
  const real = [...counts].sort((a, b) => b[1] - a[1]).map(([host]) => host);
  const hosts = [...real];
  for (let i = 0; hosts.length < HOSTS; i++) hosts.push(`w${Math.floor(i / real.length)}.${real[i % real.length]}`);
  const cumulative = new Float64Array(HOSTS);
  let sum = 0;
  for (let r = 0; r < HOSTS; r++) cumulative[r] = sum += 1 / (r + 1);
  for (let r = 0; r < HOSTS; r++) cumulative[r]! /= sum;
  return { hosts, cumulative, paths };
}

function hostRank(cumulative: Float64Array, u: number): number {
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function batch(s: Shapes, rand: () => number, from: number, count: number): string[] {
  return Array.from(
    { length: count },
    (_, i) =>
      `https://${s.hosts[hostRank(s.cumulative, rand())]}${s.paths[Math.floor(rand() * s.paths.length)]}${(from + i).toString(36)}`,
  );
}

function frontierBytes(dir: string): number {
  const root = open({ path: dir, readOnly: true, maxDbs: 8 });
  try {
    const stats = root.openDB({ name: 'queue', encoding: 'binary', keyEncoding: 'binary' }).getStats() as {
      treeBranchPageCount: number;
      treeLeafPageCount: number;
      overflowPages: number;
      pageSize: number;
    };
    return (stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages) * stats.pageSize;
  } finally {
    void root.close();
  }
}

if (!existsSync(join(SHARED, 'crawl-sitelist-15k.txt'))) {
  console.log(`frontier growth bench skipped: ${SHARED} is absent (its hosts and paths are part of the shapes)`);
} else {
  const s = shapes();
  const rand = mulberry32(47);
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-bench-growth-'));
  console.log(
    `synthesized URLs: ${HOSTS.toLocaleString('en')} hosts (Zipf 1), ${s.paths.length.toLocaleString('en')} real paths; batches of ${BATCH.toLocaleString('en')}\n`,
  );
  console.log(
    '| queued | enqueue URLs/s (last stretch) | take 1,000 + done, median ms | frontier bytes per queued URL | average URL bytes | RSS MB |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|');
  try {
    let queued = 0;
    let urlBytes = 0;
    for (const checkpoint of CHECKPOINTS) {
      const store = await SeenStore.open(dir);
      let line: { perSec: number; median: number; held: number };
      try {
        const scope = store.scope('g', { capacityUrls: 2 * MAX, fprTarget: 0.01 });
        const frontier = scope.frontier();
        await frontier.configure({ delayMs: 0, maxInFlightPerQueue: 0 });
        const stretch = checkpoint - queued;
        const started = process.hrtime.bigint();
        while (queued < checkpoint) {
          const urls = batch(s, rand, queued, Math.min(BATCH, checkpoint - queued));
          for (const url of urls) urlBytes += url.length;
          const added = (await scope.enqueue(urls)).filter(Boolean).length;
          queued += urls.length;
          if (added < urls.length * 0.98)
            throw new Error(`only ${added} of ${urls.length} queued (false positives past the filter's capacity?)`);
        }
        const perSec = stretch / (Number(process.hrtime.bigint() - started) / 1e9);
        const times: number[] = [];
        for (let t = 0; t < TAKES; t++) {
          const at = process.hrtime.bigint();
          const taken = await frontier.take(1_000, { perQueue: 10, leaseMs: 600_000 });
          await frontier.done(taken.map((entry) => entry.id));
          times.push(Number(process.hrtime.bigint() - at) / 1e6);
        }
        const stats = await frontier.stats();
        line = {
          perSec,
          median: times.sort((a, b) => a - b)[Math.floor(TAKES / 2)]!,
          held: stats.pending + stats.leased,
        };
      } finally {
        await store.close();
      }
      const bytes = frontierBytes(dir) / line.held;
      console.log(
        `| ${checkpoint.toLocaleString('en')} | ${Math.round(line.perSec).toLocaleString('en')} | ${line.median.toFixed(1)} | ${bytes.toFixed(0)} | ${(urlBytes / queued).toFixed(1)} | ${Math.round(process.memoryUsage().rss / 1e6)} |`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
