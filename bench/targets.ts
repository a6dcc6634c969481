/**
 * The targets of issues 28 and 29 in one table, from one `npm run bench` run. Each bench step that
 * measures a target records its rows (recordTargets: bench/results/targets/STEP.json); the last
 * step of `npm run bench` prints them all, in the issue's order, with the commit, the machine's
 * load and each row met or missed, and writes bench/results/targets.md.
 *
 *   node dist/bench/targets.js --reset   (first step: forget the rows of an earlier run)
 *   node dist/bench/targets.js           (last step: print and write the table)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR } from './data.js';

export interface TargetRow {
  readonly issue: number;
  /** Its place in the issue's table (rows print in this order). */
  readonly order: number;
  readonly figure: string;
  readonly measured: string;
  readonly target: string;
  /** undefined: not measured in this run (say why in `measured`). */
  readonly met: boolean | undefined;
}

interface Recorded {
  readonly step: string;
  readonly at: string;
  readonly load: readonly number[];
  readonly rows: readonly TargetRow[];
}

const DIR = join(BENCH_DIR, 'results', 'targets');

/** Records `rows` measured by bench step `step` (replacing what the step recorded before). */
export function recordTargets(step: string, rows: readonly TargetRow[]): void {
  mkdirSync(DIR, { recursive: true });
  const recorded: Recorded = {
    step,
    at: new Date().toISOString(),
    load: loadavg().map((n) => Math.round(n * 100) / 100),
    rows,
  };
  writeFileSync(join(DIR, `${step}.json`), `${JSON.stringify(recorded, null, 2)}\n`);
}

function commit(): string {
  try {
    const root = resolve(BENCH_DIR, '..');
    const head = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], {
        encoding: 'utf8',
      }).trim() !== '';
    return dirty ? `${head} with uncommitted changes` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

function report(): void {
  const recorded = existsSync(DIR)
    ? readdirSync(DIR)
        .filter((name) => name.endsWith('.json'))
        .map((name) => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as Recorded)
    : [];
  const rows = recorded
    .flatMap((r) => r.rows.map((row) => ({ ...row, step: r.step })))
    .sort((a, b) => a.issue - b.issue || a.order - b.order);
  const times = recorded.map((r) => r.at).sort();
  const loads = recorded.map((r) => r.load[0]!);
  const lines = [
    `Targets of issues 28 and 29: one \`npm run bench\` run at commit ${commit()}, ${times[0] ?? '-'} to ${times.at(-1) ?? '-'},`,
    `load average ${loads.length === 0 ? '-' : `${Math.min(...loads)}–${Math.max(...loads)}`} at the ends of the steps; medians of 3 unless said.`,
    '',
    '| issue | figure | measured | target | | bench step |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${row.issue} | ${row.figure} | ${row.measured} | ${row.target} | ${row.met === undefined ? 'not measured' : row.met ? 'met' : '**missed**'} | ${row.step} |`,
    ),
  ];
  const text = `${lines.join('\n')}\n`;
  process.stdout.write(`\n${text}`);
  writeFileSync(join(BENCH_DIR, 'results', 'targets.md'), text);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--reset')) rmSync(DIR, { recursive: true, force: true });
  else report();
}
