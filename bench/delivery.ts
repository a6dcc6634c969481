/**
 * Issue 43's delivery figures, a step of `npm run bench`: on 200,000 real URLs (all-the-package-
 * repos), filter-new with `--batch-size 100` cut short — by `| head -5`, and by kill -9 while its
 * reader reads slowly — then run again over the same input: together the two runs must print every
 * URL, and at most 20,000 twice. The filter is sized so that false positives are negligible
 * (--capacity 1e6 --fpr 1e-9). Also the cost: filter-new over 1.7M new URLs to /dev/null, this
 * build against --before DIR (a built checkout), interleaved.
 *
 *   node dist/bench/delivery.js [--runs N] [--before DIR]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCH_DIR, cliOf, packageReposDataset, readUrls } from './data.js';
import { median } from './stats.js';
import { recordTargets } from './targets.js';

const CLI = cliOf(resolve(BENCH_DIR, '..'));
const URLS = 200_000;
const BATCH = 100;
const TWICE_MAX = 20_000;
const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 5;
const beforeAt = args.indexOf('--before');
const BEFORE = beforeAt >= 0 ? resolve(args[beforeAt + 1]!) : undefined;

interface Outcome {
  readonly never: number;
  readonly twice: number;
}

/** The two runs' output against the input: URLs never printed, and printings beyond the first. */
function judge(input: readonly string[], outputs: readonly string[]): Outcome {
  const times = new Map<string, number>();
  for (const output of outputs) {
    const lines = output.split('\n');
    lines.pop(); // a line without its newline (cut by a kill) was not delivered
    for (const line of lines) times.set(line, (times.get(line) ?? 0) + 1);
  }
  return {
    never: input.filter((url) => !times.has(url)).length,
    twice: [...times.values()].reduce((n, t) => n + t - 1, 0),
  };
}

function sh(command: string): string {
  const run = spawnSync('sh', ['-c', command], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (run.error !== undefined) throw run.error;
  return run.stdout;
}

const filterNew = (store: string, extra = ''): string =>
  `'${process.execPath}' '${CLI}' filter-new --quiet --store '${store}' --capacity 1000000 --fpr 1e-9 ${extra}`;

/** `filter-new --batch-size 100 FILE | head -5`, then `filter-new FILE`. */
function headCut(work: string, file: string, input: readonly string[]): Outcome {
  const store = join(work, 'head');
  const first = sh(`${filterNew(store, `--batch-size ${BATCH}`)} '${file}' | head -5`);
  const second = sh(`${filterNew(store)} '${file}'`);
  return judge(input, [first, second]);
}

/** filter-new killed with SIGKILL once its slow reader took `after` lines, then run again. */
async function killed(work: string, file: string, input: readonly string[], after: number): Promise<Outcome> {
  const store = join(work, `kill-${after}`);
  const child = spawn(
    process.execPath,
    [
      CLI,
      'filter-new',
      '--quiet',
      '--store',
      store,
      '--capacity',
      '1000000',
      '--fpr',
      '1e-9',
      '--batch-size',
      String(BATCH),
      file,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  let lines = 0;
  await new Promise<void>((done) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      lines += chunk.split('\n').length - 1;
      if (lines >= after && child.exitCode === null) child.kill('SIGKILL');
      // A slow reader: the pipe stays full, so batches are in flight when the kill comes.
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 2);
    });
    child.on('close', () => done());
  });
  const second = sh(`${filterNew(store)} '${file}'`);
  return judge(input, [out, second]);
}

/** Seconds of one filter-new over `file` into a fresh store, output to /dev/null. */
function costRun(cli: string, work: string, file: string): number {
  const store = join(work, 'cost');
  rmSync(store, { recursive: true, force: true });
  const timing = join(work, 'time');
  const run = spawnSync('sh', [
    '-c',
    `/usr/bin/time -f '%e' -o '${timing}' '${process.execPath}' '${cli}' filter-new --quiet --store '${store}' --capacity 2000000 < '${file}' > /dev/null`,
  ]);
  if (run.status !== 0) throw new Error(`filter-new failed: ${String(run.stderr)}`);
  return Number(readFileSync(timing, 'utf8').trim());
}

async function main(): Promise<void> {
  const dataset = packageReposDataset();
  const all = readUrls(dataset.path);
  const input = all.slice(0, URLS);
  const work = mkdtempSync(join(tmpdir(), 'seenstore-delivery-bench-'));
  try {
    const file = join(work, 'urls.txt');
    writeFileSync(file, `${input.join('\n')}\n`);
    const head = headCut(work, file, input);
    const kills: Outcome[] = [];
    for (const after of [1_000, 20_000, 90_000]) kills.push(await killed(work, file, input, after));
    const worstKill = { never: Math.max(...kills.map((k) => k.never)), twice: Math.max(...kills.map((k) => k.twice)) };
    let text = `delivery on ${input.length.toLocaleString('en-US')} URLs (${dataset.source}), --batch-size ${BATCH}:\n`;
    text += `  | head -5, then a full run: never printed ${head.never}, printed twice ${head.twice}\n`;
    text += `  kill -9 after 1k / 20k / 90k lines read, then a full run: never printed ${kills.map((k) => k.never).join(' / ')}, printed twice ${kills.map((k) => k.twice).join(' / ')}\n`;
    const rows = [
      {
        issue: 43,
        order: 1,
        figure: '`| head -5` (batch 100), then a full run: URLs never printed / printed twice',
        measured: `${head.never} / ${head.twice.toLocaleString('en-US')}`,
        target: `0 / ≤ ${TWICE_MAX.toLocaleString('en-US')}`,
        met: head.never === 0 && head.twice <= TWICE_MAX,
      },
      {
        issue: 43,
        order: 2,
        figure: 'kill -9 mid-output (batch 100), then a full run: never printed / printed twice (worst of 3)',
        measured: `${worstKill.never} / ${worstKill.twice.toLocaleString('en-US')}`,
        target: `0 / ≤ ${TWICE_MAX.toLocaleString('en-US')}`,
        met: worstKill.never === 0 && worstKill.twice <= TWICE_MAX,
      },
    ];
    if (BEFORE !== undefined) {
      const costFile = dataset.path;
      const now: number[] = [];
      const before: number[] = [];
      for (let r = 0; r < RUNS; r++) {
        now.push(costRun(CLI, work, costFile));
        before.push(costRun(cliOf(BEFORE), work, costFile));
      }
      const ratio = median(before) / median(now);
      text += `  cost: filter-new over ${dataset.urls.toLocaleString('en-US')} new URLs to /dev/null, medians of ${RUNS}: ${median(now).toFixed(2)} s, before ${median(before).toFixed(2)} s (throughput ${(100 * ratio).toFixed(0)} % of before)\n`;
      rows.push({
        issue: 43,
        order: 3,
        figure: 'filter-new throughput, all new (1.7M URLs), ÷ before',
        measured: `${(100 * ratio).toFixed(0)} %`,
        target: '≥ 90 %',
        met: ratio >= 0.9,
      });
    }
    process.stdout.write(text);
    recordTargets('delivery', rows);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
