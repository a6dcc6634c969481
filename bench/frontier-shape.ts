/**
 * Issue 47's take + done ratio, size apart from shape. frontier-size.ts compares the 1.74M real
 * URLs against their first 100k; those come from few hosts, so a take of 1,000 there leases from
 * one queue while in the full frontier it spans some hundred. This bench adds a second small
 * frontier of the same shape as the full one: every 17th URL (102k; the same hosts, in about the
 * same proportions). Each frontier is pushed once by this build's CLI (`frontier push`, default
 * batches); each trial then takes fresh copies of the three, and runs ROUNDS rounds of a take of
 * 1,000 (one queue may hand out all) plus their done in each, alternated: wall time (two durable
 * commits), this process's CPU time, and the queues each take leased from.
 *
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/frontier-shape.js
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SeenStore } from '../src/index.js';
import { BENCH_DIR, frontierBenchUrls } from './data.js';
import { median } from './stats.js';

const SHARED = resolve(BENCH_DIR, '..', '..', 'shared', 'data');
const CLI = resolve(BENCH_DIR, '..', 'dist', 'src', 'cli', 'bin.cjs');
const TAKE_URLS = 1_000;
const ROUNDS = 25;
const TRIALS = 3;
/** The same-shape sample: every SAMPLE_EVERY-th URL (1.74M / 17 ≈ 102k). */
const SAMPLE_EVERY = 17;
const PREFIX_URLS = 100_000;

type Name = 'full' | 'prefix' | 'sample';
interface Round {
  readonly ms: number;
  readonly cpuMs: number;
  readonly queues: number;
}

function push(work: string, name: Name, urls: readonly string[]): string {
  const file = join(work, `${name}.txt`);
  writeFileSync(file, `${urls.join('\n')}\n`);
  const dir = join(work, name);
  const args = [CLI, '--store', dir, '--scope', 'b', '--quiet', 'frontier', 'push'];
  const run = spawnSync(process.execPath, [...args, '--capacity', String(urls.length * 2), file], {
    encoding: 'utf8',
    // The URLs it queued go to stdout: not kept (a buffer of 1.74M lines).
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (run.status !== 0) throw new Error(`frontier push of ${name}: ${run.stderr}`);
  return dir;
}

async function trial(pristine: Record<Name, string>, into: Record<Name, Round[]>): Promise<void> {
  const names = Object.keys(pristine) as Name[];
  const copies = Object.fromEntries(
    names.map((name) => {
      const dir = mkdtempSync(join(tmpdir(), `seenstore-bench-shape-${name}-`));
      cpSync(pristine[name], dir, { recursive: true });
      return [name, dir];
    }),
  ) as Record<Name, string>;
  const stores = await Promise.all(names.map((name) => SeenStore.open(copies[name])));
  try {
    const frontiers = stores.map((store) => store.scope('b').frontier());
    for (const frontier of frontiers) await frontier.configure({ delayMs: 0, maxInFlightPerQueue: 0 });
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? names.map((_, i) => i) : names.map((_, i) => names.length - 1 - i);
      for (const i of order) {
        const cpu = process.cpuUsage();
        const started = performance.now();
        const taken = await frontiers[i]!.take(TAKE_URLS, { perQueue: TAKE_URLS, leaseMs: 600_000 });
        const done = await frontiers[i]!.done(taken.map((entry) => entry.id));
        const ms = performance.now() - started;
        const used = process.cpuUsage(cpu);
        if (taken.length !== TAKE_URLS || done !== TAKE_URLS) throw new Error(`${names[i]}: took ${taken.length}`);
        into[names[i]!].push({
          ms,
          cpuMs: (used.user + used.system) / 1000,
          queues: new Set(taken.map((entry) => entry.queue)).size,
        });
      }
    }
  } finally {
    await Promise.all(stores.map((store) => store.close()));
    for (const dir of Object.values(copies)) rmSync(dir, { recursive: true, force: true });
  }
}

if (!existsSync(join(SHARED, 'crawl-sitelist-15k.txt'))) {
  console.log(`frontier shape bench skipped: ${SHARED} is absent (its real URLs are part of the list)`);
} else {
  const urls = frontierBenchUrls();
  const work = mkdtempSync(join(tmpdir(), 'seenstore-bench-shape-'));
  try {
    const lists: Record<Name, readonly string[]> = {
      full: urls,
      prefix: urls.slice(0, PREFIX_URLS),
      sample: urls.filter((_, i) => i % SAMPLE_EVERY === 0),
    };
    const pristine = Object.fromEntries(
      Object.entries(lists).map(([name, list]) => [name, push(work, name as Name, list)]),
    ) as Record<Name, string>;
    const hosts = (list: readonly string[]): number => new Set(list.map((url) => url.split('/')[2])).size;
    console.log(`take ${TAKE_URLS} + done, ${TRIALS} trials of ${ROUNDS} rounds per frontier, alternated\n`);
    console.log('| trial | frontier | URLs | hosts | queues per take | wall ms | CPU ms | full ÷ it, wall | CPU |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
    for (let t = 1; t <= TRIALS; t++) {
      const rounds: Record<Name, Round[]> = { full: [], prefix: [], sample: [] };
      await trial(pristine, rounds);
      const wall = (name: Name): number => median(rounds[name].map((r) => r.ms));
      const cpu = (name: Name): number => median(rounds[name].map((r) => r.cpuMs));
      for (const name of Object.keys(lists) as Name[]) {
        const ratios =
          name === 'full'
            ? '– | –'
            : `${(wall('full') / wall(name)).toFixed(2)}× | ${(cpu('full') / cpu(name)).toFixed(2)}×`;
        const queues = median(rounds[name].map((r) => r.queues));
        const row = [t, name, lists[name].length.toLocaleString('en'), hosts(lists[name]).toLocaleString('en'), queues];
        console.log(`| ${row.join(' | ')} | ${wall(name).toFixed(1)} | ${cpu(name).toFixed(1)} | ${ratios} |`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
