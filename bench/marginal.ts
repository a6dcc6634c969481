/**
 * `filter-new`'s steady-state rate (issue 29, row 4), a step of `npm run bench`: the marginal rate
 * between 1× and 3× a real input of ~3.5M lines (the ~50k URLs of ../shared/data, 70 times over:
 * 50,553 new lines, then duplicates), so that start-up is apart: 2N lines / (t3 − t1). Each run is
 * a fresh store and a whole `seenstore filter-new < FILE > /dev/null` process, timed by GNU time
 * (wall, and user + sys CPU of every thread); medians of RUNS, the two sizes alternating.
 * With --before DIR (a built checkout, npm run build), the same for that build and this one,
 * interleaved, each round alternating which goes first; an A/B run records no target row.
 *
 *   node dist/bench/marginal.js [--runs N] [--before DIR]
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCH_DIR, cliOf } from './data.js';
import { recordTargets } from './targets.js';
import { median } from './stats.js';

const CLI = cliOf(resolve(BENCH_DIR, '..'));
const SHARED = resolve(BENCH_DIR, '..', '..', 'shared', 'data');
const INPUTS = ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'];
const REPEATS = 70;
const TARGET_LINES_PER_S = 5e6;
const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 3;
const beforeAt = args.indexOf('--before');
const BEFORE = beforeAt >= 0 ? resolve(args[beforeAt + 1]!) : undefined;

interface Timing {
  readonly wall: number;
  readonly cpu: number;
}

interface Build {
  readonly name: string;
  readonly cli: string;
  readonly t1: Timing[];
  readonly t3: Timing[];
}

/** One filter-new process of `cli` over `input` into a fresh store: wall and CPU seconds. */
function run(cli: string, work: string, input: string): Timing {
  const store = join(work, 'store');
  rmSync(store, { recursive: true, force: true });
  const timing = join(work, 'time');
  const shell = `/usr/bin/time -f '%e %U %S' -o '${timing}' '${process.execPath}' '${cli}' filter-new --quiet --store '${store}' --capacity 100000 < '${input}' > /dev/null`;
  const result = spawnSync('sh', ['-c', shell], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`filter-new failed: ${result.stderr}`);
  const [wall, user, sys] = readFileSync(timing, 'utf8').trim().split(/\s+/).map(Number);
  return { wall: wall!, cpu: user! + sys! };
}

function main(): void {
  const missing = INPUTS.find((name) => !existsSync(join(SHARED, name)));
  if (missing !== undefined) {
    process.stdout.write(`filter-new marginal rate skipped: ../shared/data/${missing} is not there\n`);
    recordTargets('marginal', [
      {
        issue: 29,
        order: 4,
        figure: '`filter-new` marginal rate',
        measured: `not measured: ../shared/data/${missing} is absent`,
        target: '≥ 5 M lines/s',
        met: undefined,
      },
    ]);
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'seenstore-bench-marginal-'));
  try {
    const base = INPUTS.map((name) => readFileSync(join(SHARED, name), 'utf8')).join('');
    const once = base.repeat(REPEATS);
    const lines = once.split('\n').length - 1;
    const x1 = join(work, 'x1.txt');
    const x3 = join(work, 'x3.txt');
    writeFileSync(x1, once);
    for (let i = 0; i < 3; i++) appendFileSync(x3, once);
    const builds: Build[] = [{ name: 'this', cli: CLI, t1: [], t3: [] }];
    if (BEFORE !== undefined) {
      const cli = cliOf(BEFORE);
      if (!existsSync(cli)) throw new Error(`--before ${BEFORE}: no ${cli} (a checkout built with npm run build)`);
      builds.push({ name: 'before', cli, t1: [], t3: [] });
    }
    for (let i = 0; i < RUNS; i++) {
      for (const build of i % 2 === 0 ? builds : [...builds].reverse()) {
        if (i % 2 === 0) {
          build.t1.push(run(build.cli, work, x1));
          build.t3.push(run(build.cli, work, x3));
        } else {
          build.t3.push(run(build.cli, work, x3));
          build.t1.push(run(build.cli, work, x1));
        }
      }
    }
    const fmtM = (n: number): string => `${(n / 1e6).toFixed(2)} M`;
    const rates = builds.map(({ name, t1, t3 }) => {
      const wall = (2 * lines) / (median(t3.map((t) => t.wall)) - median(t1.map((t) => t.wall)));
      const cpu = (2 * lines) / (median(t3.map((t) => t.cpu)) - median(t1.map((t) => t.cpu)));
      const label = BEFORE === undefined ? '' : `${name}: `;
      process.stdout.write(
        `${label}filter-new over ${lines.toLocaleString('en-US')} lines (x1) and 3x: wall ${t1.map((t) => t.wall).join(', ')} s / ${t3.map((t) => t.wall).join(', ')} s; marginal ${fmtM(wall)} lines/s wall, ${fmtM(cpu)} lines/s of CPU\n`,
      );
      return { wall, cpu };
    });
    if (BEFORE !== undefined) return;
    const { wall, cpu } = rates[0]!;
    recordTargets('marginal', [
      {
        issue: 29,
        order: 4,
        figure: '`filter-new` marginal rate (1× → 3× of 3.5M real lines)',
        measured: `${fmtM(wall)} lines/s wall (${fmtM(cpu)} by CPU time)`,
        target: '≥ 5 M lines/s',
        met: wall >= TARGET_LINES_PER_S,
      },
    ]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main();
