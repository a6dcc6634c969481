/**
 * The durable-commit benchmark (issue 29, part 1), part of `npm run bench`: what one durable add
 * costs now that it is one journal append + fdatasync, against Redis 7 with `appendfsync always`
 * and against the bare append + fdatasync of the same bytes. Rows (medians of RUNS runs):
 *
 *   serve: 64 connections of single BF.ADD ÷ Redis SADD (redis-benchmark), adds/s
 *   one client, one durable add at a time: seenstore p50 latency ÷ Redis SADD p50
 *   durable commit of a 48-URL batch ÷ append + fdatasync of its bytes, p50 (interleaved rounds)
 *   durable addIfAbsent ÷ JS Set, one thread (bench/contender.ts on the same URLs)
 *
 *   node dist/bench/journal.js [--quick] [--runs N] [--before CHECKOUT]
 *
 * With --before, every seenstore figure is also taken on another checkout's build (the commit
 * path before the journal file), run by run interleaved with this one's. Prints a table, then one
 * JSON line (the last line of stdout).
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR, cliOf } from './data.js';
import { recordTargets } from './targets.js';
import { CLI, redisBenchmark, startRedis, startSeenstore } from './servers.js';
import { generatedUrls } from '../test/helpers/generated-urls.js';
import { median } from './stats.js';

const ROOT = resolve(BENCH_DIR, '..');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const runsAt = args.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : quick ? 1 : 3;
const beforeAt = args.indexOf('--before');
const BEFORE = beforeAt >= 0 ? resolve(args[beforeAt + 1]!) : undefined;

const MANY_CONNECTIONS = 64;
const MANY_REQUESTS = quick ? 20_000 : 100_000;
const ONE_CLIENT_REQUESTS = quick ? 2_000 : 10_000;
const BATCH_URLS = 48;
const URL_BYTES = 40;
const PROBE_ROUNDS = quick ? 200 : 400;
const SET_URLS = quick ? 200_000 : 1_000_000;

function progress(text: string): void {
  process.stderr.write(`bench journal: ${text}\n`);
}

/** One build of seenstore: this checkout, or --before's. */
interface Build {
  readonly name: string;
  readonly root: string;
}

/**
 * `probe INDEX_JS`: PROBE_ROUNDS rounds, each a durable addIfAbsentUtf8 of 48 new URLs, then an
 * append of the same number of bytes to a plain file and its fdatasync (interleaved, so both meet
 * the same disk). Prints the p50 of each in ms as JSON.
 */
async function probe(index: string): Promise<void> {
  const { SeenStore } = (await import(pathToFileURL(index).href)) as typeof import('../src/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'bench-journal-probe-'));
  try {
    const store = await SeenStore.open(join(dir, 'store'));
    const scope = store.scope('probe', { capacityUrls: 1_000_000 });
    const bytes = Buffer.alloc(BATCH_URLS * URL_BYTES);
    const ranges = new Uint32Array(2 * BATCH_URLS);
    const fd = openSync(join(dir, 'append.aof'), 'a');
    const commitMs: number[] = [];
    const appendMs: number[] = [];
    for (let round = 0; round < PROBE_ROUNDS; round++) {
      for (let i = 0; i < BATCH_URLS; i++) {
        bytes.write(`https://probe.example/${round}/${i}/`.padEnd(URL_BYTES, 'x'), i * URL_BYTES);
        ranges[2 * i] = i * URL_BYTES;
        ranges[2 * i + 1] = (i + 1) * URL_BYTES;
      }
      let started = process.hrtime.bigint();
      await scope.addIfAbsentUtf8({ bytes, ranges, count: BATCH_URLS });
      commitMs.push(Number(process.hrtime.bigint() - started) / 1e6);
      started = process.hrtime.bigint();
      writeSync(fd, bytes);
      fdatasyncSync(fd);
      appendMs.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    closeSync(fd);
    await store.close();
    process.stdout.write(`${JSON.stringify({ commitP50Ms: median(commitMs), appendP50Ms: median(appendMs) })}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runNode(script: string, scriptArgs: readonly string[]): string {
  return execFileSync(process.execPath, [script, ...scriptArgs], {
    encoding: 'utf8',
    maxBuffer: 2 ** 26,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

function lastJson<T>(out: string): T {
  return JSON.parse(out.trim().split('\n').pop()!) as T;
}

/** A URL file for the JS Set row: the bench's large data set when prepared, else generated URLs. */
function setUrlsFile(dir: string): string {
  const data = join(BENCH_DIR, '.data');
  const prepared = existsSync(data)
    ? readdirSync(data).find((name) => name.startsWith('package-repos-') && name.endsWith('.usable2.txt'))
    : undefined;
  if (prepared !== undefined) return join(data, prepared);
  const file = join(dir, 'urls.txt');
  writeFileSync(file, `${generatedUrls(SET_URLS, 29).join('\n')}\n`);
  return file;
}

interface BuildFigures {
  manyAddsPerSec: number[];
  oneP50Ms: number[];
  commitP50Ms: number[];
  appendP50Ms: number[];
  durableAddsPerSec: number[];
}

async function main(): Promise<void> {
  if (args[0] === 'probe') return probe(args[1]!);
  const builds: Build[] = [
    { name: 'this', root: ROOT },
    ...(BEFORE === undefined ? [] : [{ name: 'before', root: BEFORE }]),
  ];
  const figures = new Map<string, BuildFigures>(
    builds.map((b) => [
      b.name,
      { manyAddsPerSec: [], oneP50Ms: [], commitP50Ms: [], appendP50Ms: [], durableAddsPerSec: [] },
    ]),
  );
  const redis = { manyAddsPerSec: [] as number[], oneP50Ms: [] as number[], setAddsPerSec: [] as number[] };
  const dir = mkdtempSync(join(tmpdir(), 'bench-journal-'));
  try {
    const urls = setUrlsFile(dir);
    for (let run = 0; run < RUNS; run++) {
      // Alternate which build goes first, so neither always meets the warmer cache.
      const order = run % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        const mine = figures.get(build.name)!;
        const cli = build.root === ROOT ? CLI : cliOf(build.root);
        progress(`run ${run + 1}/${RUNS}: ${build.name} serve`);
        const server = await startSeenstore(cli);
        try {
          mine.manyAddsPerSec.push(
            redisBenchmark(server.port, MANY_CONNECTIONS, MANY_REQUESTS, ['BF.ADD', 'many', '__rand_int__'])
              .requestsPerSec,
          );
          mine.oneP50Ms.push(
            redisBenchmark(server.port, 1, ONE_CLIENT_REQUESTS, ['BF.ADD', 'one', '__rand_int__']).p50Ms,
          );
        } finally {
          await server.stop();
        }
        progress(`run ${run + 1}/${RUNS}: ${build.name} 48-URL commits`);
        const probed = lastJson<{ commitP50Ms: number; appendP50Ms: number }>(
          runNode(join(ROOT, 'dist', 'bench', 'journal.js'), ['probe', join(build.root, 'dist', 'src', 'index.js')]),
        );
        mine.commitP50Ms.push(probed.commitP50Ms);
        mine.appendP50Ms.push(probed.appendP50Ms);
        progress(`run ${run + 1}/${RUNS}: ${build.name} durable addIfAbsent`);
        const contender = join(build.root, 'dist', 'bench', 'contender.js');
        mine.durableAddsPerSec.push(
          lastJson<{ addsPerSec: number }>(
            runNode(existsSync(contender) ? contender : join(ROOT, 'dist', 'bench', 'contender.js'), [
              'seenstore-durable',
              urls,
            ]),
          ).addsPerSec,
        );
      }
      progress(`run ${run + 1}/${RUNS}: redis SADD, JS Set`);
      const server = await startRedis();
      try {
        redis.manyAddsPerSec.push(
          redisBenchmark(server.port, MANY_CONNECTIONS, MANY_REQUESTS, ['SADD', 'many', '__rand_int__']).requestsPerSec,
        );
        redis.oneP50Ms.push(redisBenchmark(server.port, 1, ONE_CLIENT_REQUESTS, ['SADD', 'one', '__rand_int__']).p50Ms);
      } finally {
        await server.stop();
      }
      redis.setAddsPerSec.push(
        lastJson<{ addsPerSec: number }>(runNode(join(ROOT, 'dist', 'bench', 'contender.js'), ['js-set', urls]))
          .addsPerSec,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  report(builds, figures, redis);
}

function report(
  builds: readonly Build[],
  figures: Map<string, BuildFigures>,
  redis: { manyAddsPerSec: number[]; oneP50Ms: number[]; setAddsPerSec: number[] },
): void {
  const fmt = (n: number, digits = 2): string =>
    n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const rows = builds.flatMap((build) => {
    const f = figures.get(build.name)!;
    const many = median(f.manyAddsPerSec) / median(redis.manyAddsPerSec);
    const one = median(f.oneP50Ms) / median(redis.oneP50Ms);
    const commit = median(f.commitP50Ms) / median(f.appendP50Ms);
    const set = median(f.durableAddsPerSec) / median(redis.setAddsPerSec);
    const tag = builds.length > 1 ? ` (${build.name})` : '';
    return [
      {
        what: `serve: 64 connections of single BF.ADD ÷ Redis SADD always${tag}`,
        detail: `${fmt(median(f.manyAddsPerSec), 0)} vs ${fmt(median(redis.manyAddsPerSec), 0)} adds/s`,
        measured: many,
        target: '≥ 1.5×',
        met: many >= 1.5,
      },
      {
        what: `one client, one durable add at a time, p50 ÷ Redis SADD always${tag}`,
        detail: `${fmt(median(f.oneP50Ms), 3)} vs ${fmt(median(redis.oneP50Ms), 3)} ms`,
        measured: one,
        target: '≤ 1.2×',
        met: one <= 1.2,
      },
      {
        what: `durable commit of a 48-URL batch ÷ append + fdatasync of its bytes, p50${tag}`,
        detail: `${fmt(median(f.commitP50Ms), 3)} vs ${fmt(median(f.appendP50Ms), 3)} ms`,
        measured: commit,
        target: '≤ 1.3×',
        met: commit <= 1.3,
      },
      {
        what: `durable addIfAbsent ÷ JS Set, one thread${tag}`,
        detail: `${fmt(median(f.durableAddsPerSec), 0)} vs ${fmt(median(redis.setAddsPerSec), 0)} adds/s`,
        measured: set,
        target: '≥ 3×',
        met: set >= 3,
      },
    ];
  });
  const lines = [
    `durable commit (issue 29 part 1), median of ${RUNS} run(s)`,
    '',
    '| figure | seenstore vs peer | measured | target | met |',
    '|---|---:|---:|---:|---|',
    ...rows.map(
      (row) =>
        `| ${row.what} | ${row.detail} | ${fmt(row.measured)}× | ${row.target} | ${row.met ? 'met' : 'MISSED'} |`,
    ),
  ];
  // The issue's rows 1, 2, 3 and 6; with --before only this build's.
  const order = [1, 2, 3, 6];
  recordTargets(
    'journal',
    rows.slice(0, 4).map((row, i) => ({
      issue: 29,
      order: order[i]!,
      figure: row.what,
      measured: `${fmt(row.measured)}× (${row.detail})`,
      target: row.target,
      met: row.met,
    })),
  );
  process.stdout.write(
    `${lines.join('\n')}\n${JSON.stringify({ text: lines.join('\n'), rows, figures: Object.fromEntries(figures), redis })}\n`,
  );
}

await main();
