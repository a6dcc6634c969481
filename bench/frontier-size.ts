/**
 * Issue 47's LMDB figures, this build against the frontier before it (OLD_COMMIT, format 6) in the
 * same run, alternated: disk per queued URL, `frontier push` through the CLI, and a take of 1,000
 * URLs plus their done at 2M queued against the same at 100k.
 *
 * The URLs: the ~1.7M real repository URLs of all-the-package-repos with the ~50k of ../shared/data
 * spread among them (one in every 34): 1.74M real URLs. The push runs the real CLI on a file of
 * them (`frontier push FILE`, a scope sized for them); disk per URL is the frontier database's
 * pages (branch, leaf, overflow) times the page size over the URLs queued. Take and done run in
 * process on each build's library (delay 0, one queue may hand out 1,000), timed together,
 * median of TAKE_ROUNDS, at 100k queued (a store of the first 100k) and at all of them.
 *
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/frontier-size.js
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { open } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { BENCH_DIR, packageReposDataset, readUrls } from './data.js';
import { oldBuild } from './old-build.js';
import { recordTargets } from './targets.js';

/** main before issue 47 (store format 6). */
const OLD_COMMIT = '70f15d1';
const SMALL = 100_000;
const TAKE_URLS = 1_000;
const TAKE_ROUNDS = 15;
const ROUNDS = 2;
const SHARED = resolve(BENCH_DIR, '..', '..', 'shared', 'data');
const CLI = resolve(BENCH_DIR, '..', 'dist', 'src', 'cli', 'bin.cjs');

interface Build {
  readonly label: string;
  readonly cli: string;
  readonly frontierDb: { readonly name: string; readonly keyEncoding?: 'binary' };
  readonly library: { open(dir: string): Promise<StoreLike> };
}
interface StoreLike {
  scope(name: string, options: object): { enqueue(urls: string[]): Promise<unknown>; frontier(): FrontierLike };
  close(): Promise<void>;
}
interface FrontierLike {
  configure(change: object): Promise<unknown>;
  take(count: number, options: object): Promise<{ id: string }[]>;
  done(ids: string[]): Promise<number>;
}

interface Figures {
  pushPerSec: number[];
  bytesPerUrl: number[];
  takeDoneSmallMs: number[];
  takeDoneLargeMs: number[];
}

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The real URLs: the package repositories with the shared lists spread among them. */
function realUrls(): string[] {
  const packages = readUrls(packageReposDataset().path);
  const shared = ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'].flatMap((file) => readUrls(join(SHARED, file)));
  const every = Math.floor(packages.length / shared.length);
  const out: string[] = [];
  packages.forEach((url, i) => {
    out.push(url);
    if (i % every === 0 && i / every < shared.length) out.push(shared[i / every]!);
  });
  return [...new Set(out)];
}

/** `frontier push FILE` of the whole list into a fresh store: URLs queued per second, and the store. */
function push(build: Build, file: string, urls: number): { perSec: number; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-bench-size-'));
  const started = process.hrtime.bigint();
  const run = spawnSync(
    process.execPath,
    [build.cli, '--store', dir, '--scope', 'b', '--quiet', 'frontier', 'push', '--capacity', String(urls * 2), file],
    { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 },
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.status !== 0) throw new Error(`${build.label}: frontier push: ${run.stderr}`);
  return { perSec: urls / seconds, dir };
}

/** The frontier database's bytes over the URLs it holds. */
function bytesPerUrl(build: Build, dir: string, urls: number): number {
  const root = open({ path: dir, readOnly: true, maxDbs: 8 });
  try {
    const stats = root.openDB({ ...build.frontierDb, encoding: 'binary' }).getStats() as {
      treeBranchPageCount: number;
      treeLeafPageCount: number;
      overflowPages: number;
      pageSize: number;
    };
    return ((stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages) * stats.pageSize) / urls;
  } finally {
    void root.close();
  }
}

/** Median ms of a take of TAKE_URLS and their done, in the store at `dir`. */
async function takeDone(build: Build, dir: string): Promise<number> {
  const store = await build.library.open(dir);
  try {
    const frontier = store.scope('b', {}).frontier();
    await frontier.configure({ delayMs: 0, maxInFlightPerQueue: 0 });
    const times: number[] = [];
    for (let round = 0; round < TAKE_ROUNDS; round++) {
      const started = process.hrtime.bigint();
      const taken = await frontier.take(TAKE_URLS, { perQueue: TAKE_URLS, leaseMs: 600_000 });
      const done = await frontier.done(taken.map((entry) => entry.id));
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (taken.length !== TAKE_URLS || done !== TAKE_URLS)
        throw new Error(`${build.label}: took ${taken.length}, done ${done}`);
    }
    return median(times);
  } finally {
    await store.close();
  }
}

async function measure(
  build: Build,
  files: { all: string; small: string },
  counts: { all: number; small: number },
  into: Figures,
): Promise<void> {
  const large = push(build, files.all, counts.all);
  const small = push(build, files.small, counts.small);
  try {
    into.pushPerSec.push(large.perSec);
    into.bytesPerUrl.push(bytesPerUrl(build, large.dir, counts.all));
    into.takeDoneSmallMs.push(await takeDone(build, small.dir));
    into.takeDoneLargeMs.push(await takeDone(build, large.dir));
  } finally {
    for (const dir of [large.dir, small.dir]) rmSync(dir, { recursive: true, force: true });
  }
}

if (!existsSync(join(SHARED, 'crawl-sitelist-15k.txt'))) {
  console.log(`frontier size bench skipped: ${SHARED} is absent (its real URLs are part of the list)`);
} else {
  const urls = realUrls();
  const work = mkdtempSync(join(tmpdir(), 'seenstore-bench-size-old-'));
  try {
    const all = join(work, 'all.txt');
    const small = join(work, 'small.txt');
    writeFileSync(all, `${urls.join('\n')}\n`);
    writeFileSync(small, `${urls.slice(0, SMALL).join('\n')}\n`);
    const average = urls.reduce((n, url) => n + Buffer.byteLength(url), 0) / urls.length;
    const old = await oldBuild<{ SeenStore: Build['library'] }>(OLD_COMMIT, join(work, 'old'));
    const builds: [Build, Figures][] = [
      [
        {
          label: 'format 7 (this build)',
          cli: CLI,
          frontierDb: { name: 'queue', keyEncoding: 'binary' },
          library: SeenStore as unknown as Build['library'],
        },
        { pushPerSec: [], bytesPerUrl: [], takeDoneSmallMs: [], takeDoneLargeMs: [] },
      ],
      [
        {
          label: `format 6 (${OLD_COMMIT})`,
          cli: old.cli,
          frontierDb: { name: 'frontier' },
          library: old.module.SeenStore,
        },
        { pushPerSec: [], bytesPerUrl: [], takeDoneSmallMs: [], takeDoneLargeMs: [] },
      ],
    ];
    // Alternated, so that a change in the machine's load falls on both.
    for (let round = 0; round < ROUNDS; round++)
      for (const [build, figures] of round % 2 === 0 ? builds : [...builds].reverse())
        await measure(build, { all, small }, { all: urls.length, small: SMALL }, figures);
    console.log(
      `${urls.length.toLocaleString('en')} real URLs (average ${average.toFixed(1)} bytes); ${ROUNDS} rounds, alternated; take + done: median of ${TAKE_ROUNDS}\n`,
    );
    console.log(
      `| frontier | disk per queued URL | \`frontier push\` (CLI) | take ${TAKE_URLS} + done at ${(SMALL / 1000).toFixed(0)}k | the same at ${(urls.length / 1e6).toFixed(2)}M | ratio |`,
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const [build, f] of builds) {
      const ratio = median(f.takeDoneLargeMs) / median(f.takeDoneSmallMs);
      console.log(
        `| ${build.label} | ${median(f.bytesPerUrl).toFixed(0)} B (${(median(f.bytesPerUrl) / average).toFixed(2)}× the URL) | ${Math.round(median(f.pushPerSec)).toLocaleString('en')} URLs/s | ${median(f.takeDoneSmallMs).toFixed(1)} ms | ${median(f.takeDoneLargeMs).toFixed(1)} ms | ${ratio.toFixed(2)}× |`,
      );
    }
    const [mine] = builds[0]!.slice(1) as [Figures];
    const bytes = median(mine.bytesPerUrl);
    const pushRate = median(mine.pushPerSec);
    const ratio = median(mine.takeDoneLargeMs) / median(mine.takeDoneSmallMs);
    recordTargets('frontier-size', [
      {
        issue: 47,
        order: 1,
        figure: 'LMDB disk per queued URL',
        measured: `${bytes.toFixed(0)} B (${(bytes / average).toFixed(2)}× a ${average.toFixed(0)}-byte URL)`,
        target: '≤ 2× the URL',
        met: bytes <= 2 * average,
      },
      {
        issue: 47,
        order: 2,
        figure: '`frontier push` through the CLI',
        measured: `${Math.round(pushRate).toLocaleString('en')} URLs/s`,
        target: '≥ 100,000 URLs/s',
        met: pushRate >= 100_000,
      },
      {
        issue: 47,
        order: 3,
        figure: `take ${TAKE_URLS} + done at ${(urls.length / 1e6).toFixed(2)}M ÷ at 100k`,
        measured: `${ratio.toFixed(2)}×`,
        target: '≤ 1.5×',
        met: ratio <= 1.5,
      },
    ]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
