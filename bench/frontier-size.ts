/**
 * Issue 47's LMDB figures, this build against main before the push work (OLD_COMMIT, store format
 * 7 too) in the same run, alternated: disk per queued URL, `frontier push` through the CLI, and a
 * take of 1,000 URLs plus their done at ~1.7M queued against the same at 100k.
 *
 * The URLs: the ~1.7M real repository URLs of all-the-package-repos with the ~50k of ../shared/data
 * spread among them (one in every 34): 1.74M real URLs. The push runs the real CLI on a file of
 * them (`frontier push FILE`, a scope sized for them, default batches), with a preload that
 * reports the process's CPU time and the bytes it handed to write calls (/proc/self/io wchar:
 * LMDB's pages and meta, the delivery file, the URLs printed) as it exits; disk per URL is the frontier database's pages (branch, leaf,
 * overflow) times the page size over the URLs queued.
 *
 * Take and done run in process on each build's library (delay 0, one queue may hand out 1,000),
 * in a store of the first 100k and in the full one, open side by side, rounds alternated between
 * the two (so a change in the machine's load falls on both): wall time (two durable commits,
 * fsync included), CPU time of this process, and bytes handed to write calls (LMDB's pages), per
 * round. The kernel's own count of bytes written (write_bytes) is left aside: it counts whole
 * page-cache folios, several times the 4 KiB pages LMDB writes.
 *
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/frontier-size.js
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { open } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { BENCH_DIR, frontierBenchUrls } from './data.js';
import { oldBuild } from './old-build.js';
import { median } from './stats.js';
import { recordTargets } from './targets.js';

/** main before the push work of issue 47 (store format 7, location puts unsorted, short batches). */
const OLD_COMMIT = '2f3af99';
const SMALL = 100_000;
const TAKE_URLS = 1_000;
/** Take + done rounds per store size and build, alternated between the sizes. */
const TAKE_ROUNDS = 25;
const ROUNDS = 3;
const SHARED = resolve(BENCH_DIR, '..', '..', 'shared', 'data');
const CLI = resolve(BENCH_DIR, '..', 'dist', 'src', 'cli', 'bin.cjs');
/** Loaded into each push's process: its CPU time and bytes written, as JSON, to $SEENSTORE_BENCH_USAGE at exit. */
const USAGE_PRELOAD = `const fs = require('node:fs');
process.on('exit', () => {
  const cpu = process.cpuUsage();
  let written = NaN;
  try { written = Number(/wchar: (\\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))[1]); } catch {}
  fs.writeFileSync(process.env.SEENSTORE_BENCH_USAGE, JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000, written }));
});
`;

interface Build {
  readonly label: string;
  readonly cli: string;
  readonly library: { open(dir: string): Promise<StoreLike> };
}
interface StoreLike {
  scope(name: string, options: object): { frontier(): FrontierLike };
  close(): Promise<void>;
}
interface FrontierLike {
  configure(change: object): Promise<unknown>;
  take(count: number, options: object): Promise<{ id: string }[]>;
  done(ids: string[]): Promise<number>;
}
/** One take + done round: wall and CPU milliseconds, bytes handed to write calls. */
interface Round {
  readonly ms: number;
  readonly cpuMs: number;
  readonly written: number;
}
interface Figures {
  pushPerSec: number[];
  pushCpuUsPerUrl: number[];
  pushWrittenPerUrl: number[];
  bytesPerUrl: number[];
  small: Round[];
  large: Round[];
}

const quartiles = (values: readonly number[]): string => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `${at(0.25).toFixed(1)}-${at(0.75).toFixed(1)}`;
};

/** Bytes this process had handed to write calls (Linux), NaN elsewhere. */
function writtenBytes(): number {
  try {
    return Number(/wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
  } catch {
    return NaN;
  }
}

/** `frontier push FILE` of the whole list into a fresh store: URLs queued per second, its CPU and writes, and the store. */
function push(
  build: Build,
  work: string,
  file: string,
  urls: number,
): { perSec: number; cpuUsPerUrl: number; writtenPerUrl: number; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-bench-size-'));
  const usage = join(work, 'usage.json');
  const started = process.hrtime.bigint();
  const args = [
    '-r',
    join(work, 'usage.cjs'),
    build.cli,
    '--store',
    dir,
    '--scope',
    'b',
    '--quiet',
    'frontier',
    'push',
    '--capacity',
    String(urls * 2),
    file,
  ];
  const run = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
    maxBuffer: 1 << 26,
    env: { ...process.env, SEENSTORE_BENCH_USAGE: usage },
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.status !== 0) throw new Error(`${build.label}: frontier push: ${run.stderr}`);
  const { cpuMs, written } = JSON.parse(readFileSync(usage, 'utf8')) as { cpuMs: number; written: number };
  return { perSec: urls / seconds, cpuUsPerUrl: (cpuMs * 1000) / urls, writtenPerUrl: written / urls, dir };
}

/** The frontier database's bytes over the URLs it holds. */
function bytesPerUrl(dir: string, urls: number): number {
  const root = open({ path: dir, readOnly: true, maxDbs: 8 });
  try {
    const stats = root.openDB({ name: 'queue', keyEncoding: 'binary', encoding: 'binary' }).getStats() as {
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

async function takeDoneRound(label: string, frontier: FrontierLike): Promise<Round> {
  const written = writtenBytes();
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  const taken = await frontier.take(TAKE_URLS, { perQueue: TAKE_URLS, leaseMs: 600_000 });
  const done = await frontier.done(taken.map((entry) => entry.id));
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const used = process.cpuUsage(cpu);
  if (taken.length !== TAKE_URLS || done !== TAKE_URLS) throw new Error(`${label}: took ${taken.length}, done ${done}`);
  return { ms, cpuMs: (used.user + used.system) / 1000, written: writtenBytes() - written };
}

/** TAKE_ROUNDS rounds in each store, alternated between them. */
async function takeDone(build: Build, dirs: { small: string; large: string }, into: Figures): Promise<void> {
  const small = await build.library.open(dirs.small);
  const large = await build.library.open(dirs.large);
  try {
    const frontiers = { small: small.scope('b', {}).frontier(), large: large.scope('b', {}).frontier() };
    for (const frontier of Object.values(frontiers)) await frontier.configure({ delayMs: 0, maxInFlightPerQueue: 0 });
    for (let round = 0; round < TAKE_ROUNDS; round++) {
      for (const size of round % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const))
        into[size].push(await takeDoneRound(`${build.label} ${size}`, frontiers[size]));
    }
  } finally {
    await small.close();
    await large.close();
  }
}

async function measure(
  build: Build,
  work: string,
  files: { all: string; small: string },
  counts: { all: number; small: number },
  into: Figures,
): Promise<void> {
  const large = push(build, work, files.all, counts.all);
  const small = push(build, work, files.small, counts.small);
  try {
    into.pushPerSec.push(large.perSec);
    into.pushCpuUsPerUrl.push(large.cpuUsPerUrl);
    into.pushWrittenPerUrl.push(large.writtenPerUrl);
    into.bytesPerUrl.push(bytesPerUrl(large.dir, counts.all));
    await takeDone(build, { small: small.dir, large: large.dir }, into);
  } finally {
    for (const dir of [large.dir, small.dir]) rmSync(dir, { recursive: true, force: true });
  }
}

function report(builds: readonly [Build, Figures][], urls: number, average: number): void {
  const large = `${(urls / 1e6).toFixed(2)}M`;
  console.log(
    `${urls.toLocaleString('en')} real URLs (average ${average.toFixed(1)} bytes); ${ROUNDS} rounds, builds alternated; take + done: ${TAKE_ROUNDS} rounds per size, alternated between the sizes\n`,
  );
  console.log(
    '| frontier | disk per queued URL | `frontier push` (CLI), each round | push CPU per URL | push bytes written per URL |',
  );
  console.log('|---|---:|---:|---:|---:|');
  for (const [build, f] of builds) {
    const rates = f.pushPerSec.map((r) => Math.round(r).toLocaleString('en')).join(' / ');
    console.log(
      `| ${build.label} | ${median(f.bytesPerUrl).toFixed(0)} B (${(median(f.bytesPerUrl) / average).toFixed(2)}× the URL) | ${rates} URLs/s | ${median(f.pushCpuUsPerUrl).toFixed(1)} µs | ${Math.round(median(f.pushWrittenPerUrl)).toLocaleString('en')} B |`,
    );
  }
  console.log(
    `\n| frontier | take ${TAKE_URLS} + done at 100k, median (quartiles) | at ${large} | ratio | CPU ms at 100k | at ${large} | ratio | KiB written at 100k | at ${large} |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [build, f] of builds) {
    const ms = (rounds: readonly Round[]): number[] => rounds.map((r) => r.ms);
    const cpu = (rounds: readonly Round[]): number[] => rounds.map((r) => r.cpuMs);
    const kib = (rounds: readonly Round[]): number => median(rounds.map((r) => r.written)) / 1024;
    const cells = [
      `${median(ms(f.small)).toFixed(1)} ms (${quartiles(ms(f.small))})`,
      `${median(ms(f.large)).toFixed(1)} ms (${quartiles(ms(f.large))})`,
      `${(median(ms(f.large)) / median(ms(f.small))).toFixed(2)}×`,
      `${median(cpu(f.small)).toFixed(1)} (${quartiles(cpu(f.small))})`,
      `${median(cpu(f.large)).toFixed(1)} (${quartiles(cpu(f.large))})`,
      `${(median(cpu(f.large)) / median(cpu(f.small))).toFixed(2)}×`,
      `${kib(f.small).toFixed(0)}`,
      `${kib(f.large).toFixed(0)}`,
    ];
    console.log(`| ${build.label} | ${cells.join(' | ')} |`);
  }
}

if (!existsSync(join(SHARED, 'crawl-sitelist-15k.txt'))) {
  console.log(`frontier size bench skipped: ${SHARED} is absent (its real URLs are part of the list)`);
} else {
  const urls = frontierBenchUrls();
  const work = mkdtempSync(join(tmpdir(), 'seenstore-bench-size-old-'));
  try {
    const all = join(work, 'all.txt');
    const small = join(work, 'small.txt');
    writeFileSync(all, `${urls.join('\n')}\n`);
    writeFileSync(small, `${urls.slice(0, SMALL).join('\n')}\n`);
    writeFileSync(join(work, 'usage.cjs'), USAGE_PRELOAD);
    const average = urls.reduce((n, url) => n + Buffer.byteLength(url), 0) / urls.length;
    const old = await oldBuild<{ SeenStore: Build['library'] }>(OLD_COMMIT, join(work, 'old'));
    const empty = (): Figures => ({
      pushPerSec: [],
      pushCpuUsPerUrl: [],
      pushWrittenPerUrl: [],
      bytesPerUrl: [],
      small: [],
      large: [],
    });
    const builds: [Build, Figures][] = [
      [{ label: 'this build', cli: CLI, library: SeenStore as unknown as Build['library'] }, empty()],
      [{ label: `main before (${OLD_COMMIT})`, cli: old.cli, library: old.module.SeenStore }, empty()],
    ];
    // Alternated, so that a change in the machine's load falls on both.
    for (let round = 0; round < ROUNDS; round++)
      for (const [build, figures] of round % 2 === 0 ? builds : [...builds].reverse())
        await measure(build, work, { all, small }, { all: urls.length, small: SMALL }, figures);
    report(builds, urls.length, average);
    const [, mine] = builds[0]!;
    const bytes = median(mine.bytesPerUrl);
    const pushRate = median(mine.pushPerSec);
    const ratio = median(mine.large.map((r) => r.ms)) / median(mine.small.map((r) => r.ms));
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
