/**
 * `npm run bench`: every contender in its own fresh process, on the same URL files, in one run;
 * medians of several runs; a table on stdout and everything as JSON in bench/results/latest.json.
 *
 *   node dist/bench/run.js [--runs N] [--quick] [--scale-only]
 *
 * --quick: the shared lists only, one run each, smaller scale runs (a smoke test of the harness).
 * --scale-only: only the scale runs (open + first query, journal replay), printed as JSON.
 * The server benchmark (bench/server.ts) runs last, in its own process.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { BATCH, CONTENDERS, FPR, type Figures } from './contender.js';
import { BENCH_DIR, cliOf, type Dataset } from './data.js';
import { median } from './stats.js';

const ROOT = resolve(BENCH_DIR, '..');
const CONTENDER = join(ROOT, 'dist', 'bench', 'contender.js');
const CLI = cliOf(ROOT);

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const runsArg = args.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : quick ? 1 : 3;

function child(argv: string[]): string {
  const result = spawnSync(process.execPath, argv, { encoding: 'utf8', maxBuffer: 2 ** 26 });
  if (result.status !== 0)
    throw new Error(`${argv.join(' ')} failed (${result.status ?? result.signal}): ${result.stderr}`);
  return result.stdout.trim().split('\n').pop()!;
}

function progress(text: string): void {
  process.stderr.write(`bench: ${text}\n`);
}

/** Median figures of RUNS fresh processes of one contender on one dataset. */
function contender(name: string, dataset: Dataset, runs: number): Figures {
  const all: Figures[] = [];
  for (let r = 0; r < runs; r++) {
    progress(`${dataset.name} ${name} run ${r + 1}/${runs}`);
    all.push(JSON.parse(child([CONTENDER, name, dataset.path])) as Figures);
  }
  const pick = (field: keyof Figures): number => median(all.map((f) => f[field] as number));
  return {
    contender: name,
    addsPerSec: pick('addsPerSec'),
    queriesPerSec: pick('queriesPerSec'),
    fpr: pick('fpr'),
    bitsPerUrl: pick('bitsPerUrl'),
    peakRssMB: pick('peakRssMB'),
    bytesOnDisk: pick('bytesOnDisk'),
    added: pick('added'),
  };
}

interface Pipeline {
  readonly command: string;
  readonly linesPerSec: number;
  readonly seconds: number;
  readonly peakRssMB: number;
}

/** A shell pipeline over the dataset file, timed by GNU time (wall seconds, max RSS). */
function pipeline(label: string, command: string, dataset: Dataset, runs: number): Pipeline {
  const seconds: number[] = [];
  const rss: number[] = [];
  for (let r = 0; r < runs; r++) {
    progress(`${dataset.name} ${label} run ${r + 1}/${runs}`);
    const store = mkdtempSync(join(tmpdir(), 'bench-cli-'));
    const shell = command.replaceAll('$STORE', store).replaceAll('$FILE', dataset.path);
    const result = spawnSync('/usr/bin/time', ['-f', '%e %M', 'sh', '-c', shell], { encoding: 'utf8' });
    rmSync(store, { recursive: true, force: true });
    if (result.status !== 0) throw new Error(`${shell} failed: ${result.stderr}`);
    const [wall, maxKb] = result.stderr.trim().split('\n').pop()!.split(' ').map(Number);
    seconds.push(wall!);
    rss.push(maxKb! / 1024);
  }
  const wall = median(seconds);
  return { command, seconds: wall, linesPerSec: dataset.urls / wall, peakRssMB: median(rss) };
}

interface Scale {
  readonly capacity: number;
  readonly urls: number;
  readonly openSeconds: number;
  readonly filterMB: number;
  readonly rssMB: number;
  readonly replayEntries: number;
  readonly replaySeconds: number;
}

/** Open + first query of a large store, and journal replay of adds that never reached a checkpoint. */
function scale(capacity: number, urls: number, replayUrls: number): Scale {
  const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  const replayDir = mkdtempSync(join(tmpdir(), 'bench-replay-'));
  try {
    progress(
      `scale: building a ${capacity.toLocaleString('en-US')}-capacity store with ${urls.toLocaleString('en-US')} URLs`,
    );
    child([CONTENDER, 'scale-build', dir, String(capacity), String(urls)]);
    // Opening changes nothing on disk (the store was closed with a checkpoint; a replay is not
    // written back), so each run opens the same store in a fresh process: medians of RUNS.
    type Opened = { openSeconds: number; filterMB: number; rssMB: number };
    const openRuns = (store: string): Opened[] =>
      Array.from({ length: RUNS }, () => JSON.parse(child([CONTENDER, 'open-first-query', store])) as Opened);
    const opened = openRuns(dir);
    progress(`scale: journal of ${replayUrls.toLocaleString('en-US')} adds, then replay`);
    child([CONTENDER, 'journal-build', replayDir, String(replayUrls * 2), String(replayUrls)]);
    const replayed = openRuns(replayDir);
    return {
      capacity,
      urls,
      filterMB: opened[0]!.filterMB,
      openSeconds: median(opened.map((o) => o.openSeconds)),
      rssMB: median(opened.map((o) => o.rssMB)),
      replayEntries: replayUrls,
      replaySeconds: median(replayed.map((o) => o.openSeconds)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(replayDir, { recursive: true, force: true });
  }
}

interface Target {
  readonly what: string;
  readonly measured: string;
  readonly target: string;
  readonly met: boolean;
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function targets(results: Map<string, Figures>, cli: { seenstore: Pipeline; awk: Pipeline }, big: Scale): Target[] {
  const durable = results.get('seenstore-durable')!;
  const ratio = (peer: string): number => durable.addsPerSec / results.get(peer)!.addsPerSec;
  const row = (what: string, value: number, target: number, unit = '×'): Target => ({
    what,
    measured: `${fmt(value, 2)}${unit}`,
    target: `≥ ${fmt(target, 2)}${unit}`,
    met: value >= target,
  });
  const filterBytesMB = big.filterMB;
  return [
    row('durable addIfAbsent / in-memory reference', ratio('seenstore-memory'), 0.8),
    row('durable addIfAbsent / bloom-filters', ratio('bloom-filters'), 40),
    row('durable addIfAbsent / JS Set', ratio('js-set'), 2),
    row('durable addIfAbsent / LMDB exact set', ratio('lmdb-exact'), 10),
    row('filter-new lines/s (M)', cli.seenstore.linesPerSec / 1e6, 1, ' M'),
    row('filter-new speed / awk', cli.awk.seconds / cli.seenstore.seconds, 1),
    {
      what: `open + first query, ${fmt(big.capacity)} capacity`,
      measured: `${fmt(big.openSeconds, 2)} s`,
      target: '≤ 1 s',
      met: big.openSeconds <= 1,
    },
    row('journal replay (M entries/s, incl. open)', big.replayEntries / big.replaySeconds / 1e6, 5, ' M'),
    {
      what: `RSS after open at ${fmt(big.capacity)} capacity`,
      measured: `${fmt(big.rssMB)} MB`,
      target: `≤ filter ${fmt(filterBytesMB)} MB + 64 MB`,
      met: big.rssMB <= filterBytesMB + 64,
    },
    row(
      'threads: durable addIfAbsent, 2 threads / 1',
      results.get('seenstore-durable-2-threads')!.addsPerSec / durable.addsPerSec,
      1.6,
    ),
  ];
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    line(header),
    `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

function main(): void {
  if (args.includes('--scale-only')) {
    process.stdout.write(
      `${JSON.stringify(quick ? scale(10_000_000, 200_000, 500_000) : scale(100_000_000, 1_000_000, 2_000_000))}\n`,
    );
    return;
  }
  // Prepared in a child process, so the harness never holds the data (bench/data.ts says why).
  const datasets = JSON.parse(
    child([join(ROOT, 'dist', 'bench', 'data.js'), ...(quick ? ['--quick'] : [])]),
  ) as Dataset[];
  const machine = {
    cpus: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}`,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.versions.node,
    lmdb: process.versions.lmdb ?? 'lmdb-js 3.5.6',
    date: new Date().toISOString(),
    runs: RUNS,
    batch: BATCH,
    fprTarget: FPR,
  };
  const report: Record<string, unknown> = { machine, datasets: [] as unknown[] };
  let text = `seenstore bench — ${machine.cpus}, ${machine.memoryGiB} GiB, Node ${machine.node}, median of ${RUNS} run(s), batches of ${BATCH}, FPR target ${FPR}\n`;
  let last: { results: Map<string, Figures>; cli: { seenstore: Pipeline; awk: Pipeline } } | undefined;
  for (const dataset of datasets) {
    const results = new Map<string, Figures>();
    for (const name of CONTENDERS)
      results.set(name, contender(name, dataset, name === 'bloom-filters' && dataset.urls > 100_000 ? 1 : RUNS));
    const cli = {
      seenstore: pipeline(
        'filter-new',
        `node ${CLI} filter-new --store $STORE --capacity ${dataset.urls} < $FILE > /dev/null`,
        dataset,
        RUNS,
      ),
      awk: pipeline('awk', `awk '!seen[$0]++' $FILE > /dev/null`, dataset, RUNS),
    };
    const durable = results.get('seenstore-durable')!;
    text += `\n${dataset.name}: ${fmt(dataset.urls)} URLs (${dataset.source}); 90 % inserted, 10 % held out for the FPR\n\n`;
    text += table(
      ['contender', 'adds/s', 'queries/s', 'FPR', 'bits/URL', 'peak RSS MB', 'disk bytes', 'durable ÷ this'],
      [...results.values()].map((f) => [
        f.contender,
        fmt(f.addsPerSec),
        fmt(f.queriesPerSec),
        f.fpr.toFixed(4),
        fmt(f.bitsPerUrl, 1),
        fmt(f.peakRssMB),
        fmt(f.bytesOnDisk),
        fmt(durable.addsPerSec / f.addsPerSec, 2),
      ]),
    );
    text += `\n\nend to end, file → stdout: filter-new ${fmt(cli.seenstore.linesPerSec)} lines/s (${fmt(cli.seenstore.seconds, 2)} s, ${fmt(cli.seenstore.peakRssMB)} MB); awk '!seen[$0]++' ${fmt(cli.awk.linesPerSec)} lines/s (${fmt(cli.awk.seconds, 2)} s, ${fmt(cli.awk.peakRssMB)} MB)\n`;
    (report.datasets as unknown[]).push({ dataset, contenders: [...results.values()], cli });
    last = { results, cli };
  }
  const big = quick ? scale(10_000_000, 200_000, 500_000) : scale(100_000_000, 1_000_000, 2_000_000);
  report.scale = big;
  const checked = targets(last!.results, last!.cli, big);
  report.targets = checked;
  text += `\nscale: ${fmt(big.capacity)}-capacity store (${fmt(big.filterMB)} MB filter, ${fmt(big.urls)} URLs): open + first query ${fmt(big.openSeconds, 2)} s, RSS ${fmt(big.rssMB)} MB; journal replay of ${fmt(big.replayEntries)} entries ${fmt(big.replaySeconds, 2)} s (incl. open)\n`;
  text += `\ntargets (issue 6), on ${datasets[datasets.length - 1]!.name}:\n\n`;
  text += table(
    ['target', 'measured', 'wanted', 'met'],
    checked.map((t) => [t.what, t.measured, t.target, t.met ? 'yes' : 'MISSED']),
  );
  text += '\n';
  // The server benchmark (issue 20) in its own process: it starts its servers and load itself.
  progress('server: seenstore serve vs Redis (appendfsync always)');
  try {
    const server = JSON.parse(
      child([join(ROOT, 'dist', 'bench', 'server.js'), ...(quick ? ['--quick'] : ['--runs', String(RUNS)])]),
    ) as { text: string };
    report.server = server;
    text += `\n${server.text}\n`;
  } catch (error) {
    // Without redis-server / redis-benchmark (apt-get install redis-server redis-tools) the rest still stands.
    report.server = { failed: (error as Error).message };
    text += `\nserver benchmark not run: ${(error as Error).message.split('\n')[0]}\n`;
  }
  process.stdout.write(text);
  mkdirSync(join(BENCH_DIR, 'results'), { recursive: true });
  writeFileSync(join(BENCH_DIR, 'results', 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(BENCH_DIR, 'results', 'latest.md'), text);
}

main();
