/**
 * Part 6, openers during commits (issue 17, item 1): in each round WRITERS `filter-new
 * --batch-size 1` processes commit one URL per transaction, printing each once it is durable,
 * while OPENERS loops of `seenstore stats` open the store again and again, and LIBRARY_OPENERS
 * processes (soak/opener-child.ts) open and close it through the library as fast as they can (a
 * node start-up costs a `stats` loop ~0.3 s per open; these make ~100 opens a second). Afterwards every
 * printed URL must be in the store, every writer must have exited 0, no process may have ended
 * by a signal, and the store must verify.
 *
 * Left to chance, an open overlaps a commit's end seldom (an unslowed open's window is a few
 * microseconds: 0 losses in 2,000 raw opens against 1,650 commits here). So when `strace` is
 * installed, the `stats` openers run under it with every read of data.mdb's header held back
 * PREAD_DELAY_US on its way out (`-e inject=pread64:delay_exit=`), which widens the window between
 * LMDB reading the meta page and publishing its transaction id to tens of milliseconds, as the
 * lead's reproduction did. Without strace the summary says the openers ran unslowed.
 *
 * This is the loss lmdb-js's bundled LMDB causes (`mdb_env_open2` sets the shared transaction id
 * from the meta page it read on every open; upstream fixed it as ITS#9496): an opener that read
 * the meta page just before a commit finished rolls the id back, and the next writer overwrites
 * that commit. It fails on a seenstore that does not keep opens and commits apart.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { foreignLines, runCli, unseen, type CliRun, type SoakContext } from './context.js';

const OPENER_CHILD = fileURLToPath(new URL('./opener-child.js', import.meta.url));

export interface OpenerRaceOptions {
  readonly rounds: number;
  readonly writers: number;
  readonly openers: number;
  readonly libraryOpeners: number;
  /** How long the writers are fed in each round. */
  readonly roundMs: number;
}

export interface OpenerRaceResult extends OpenerRaceOptions {
  /** The `stats` openers ran under strace with their reads of data.mdb slowed (see above). */
  readonly openersSlowed: boolean;
  /** URLs printed (each one acknowledged commit). */
  readonly commits: number;
  /** Completed `stats` runs and library opens (each one environment open at least). */
  readonly opens: number;
  /** Printed URLs the store does not see afterwards. */
  readonly lost: number;
  readonly roundsWithLoss: number;
  /** Rounds after which the store could not answer `has` at all (so losses there are not counted). */
  readonly roundsUnreadable: number;
  /** Writers that exited other than 0 (the race's other face: STORE_CORRUPT, MDB_BAD_TXN). */
  readonly writerErrors: number;
  /** `stats` runs and library openers that exited other than 0. */
  readonly openerErrors: number;
  readonly signals: number;
  readonly verifyFailures: number;
  /** Lines on the writers' and openers' stderr that are not seenstore's own (`mdb_page_touch error`). */
  readonly rawLines: number;
}

/** URLs fed to every writer each tick: a steady stream of single-URL commits. */
const URLS_PER_TICK = 20;
const TICK_MS = 10;

/** One writer: fed synthetic URLs until `stop` resolves, then its input ends. */
function writer(ctx: SoakContext, dir: string, name: string, stop: Promise<void>): Promise<CliRun> {
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      [ctx.cli, 'filter-new', '--store', dir, '--batch-size', '1', '--batch-delay-ms', '0'],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdin!.on('error', () => undefined);
    let n = 0;
    const feed = setInterval(() => {
      // Feed only what the writer keeps up with, so the round ends with its input handled.
      if (child.stdin!.writableLength > 4096) return;
      let text = '';
      for (let i = 0; i < URLS_PER_TICK; i++) text += `https://${name}.race.example/${n++}\n`;
      child.stdin!.write(text);
    }, TICK_MS);
    void stop.then(() => {
      clearInterval(feed);
      child.stdin!.end();
    });
    child.on('close', (code, signal) => {
      clearInterval(feed);
      done({ code, signal, stdout, stderr, timedOut: false });
    });
  });
}

/** A library opener: opens and closes the store for `durationMs`; resolves with its run and its count of opens. */
function libraryOpener(_ctx: SoakContext, dir: string, durationMs: number): Promise<{ run: CliRun; opens: number }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [OPENER_CHILD, dir, String(durationMs)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('close', (code, signal) =>
      done({
        run: { code, signal, stdout, stderr, timedOut: false },
        opens: Number(/opens (\d+)/.exec(stdout)?.[1] ?? 0),
      }),
    );
  });
}

/** How long each read of data.mdb by a slowed opener is held back. */
const PREAD_DELAY_US = 20_000;

/** `strace` can run here (it is installed and may trace): openers can be slowed. */
export function straceWorks(): boolean {
  return spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', 'true'], { stdio: 'ignore' }).status === 0;
}

/** seenstore's error line of a failed process, and the raw lines it printed besides. */
function describe(stderr: string): string {
  const own = /seenstore: error [^\n]*/.exec(stderr)?.[0] ?? '';
  const raw = foreignLines(stderr).filter((line) => !line.startsWith('    at '));
  return `${own.slice(0, 200)}${
    raw.length > 0
      ? ` (raw lines: ${raw
          .slice(0, 3)
          .map((line) => JSON.stringify(line.slice(0, 80)))
          .join(', ')})`
      : ''
  }`;
}

async function openerLoop(
  ctx: SoakContext,
  dir: string,
  slowed: boolean,
  writersDone: () => boolean,
): Promise<CliRun[]> {
  const runs: CliRun[] = [];
  const slow = [
    '-f',
    '-qq',
    '-o',
    '/dev/null',
    '-P',
    join(dir, 'data.mdb'),
    '-e',
    'trace=pread64',
    '-e',
    `inject=pread64:delay_exit=${PREAD_DELAY_US}`,
    process.execPath,
  ];
  while (!writersDone())
    runs.push(await runCli(ctx, ['stats', '--store', dir], '', 60_000, slowed ? ['strace', ...slow] : undefined));
  return runs;
}

/** What one round found. */
interface RoundFigures {
  commits: number;
  opens: number;
  lost: number;
  unreadable: boolean;
  writerErrors: number;
  openerErrors: number;
  signals: number;
  verifyFailed: boolean;
  rawLines: number;
}

/** Writers and openers on a fresh store for `roundMs`; then the checks. */
async function round(ctx: SoakContext, options: OpenerRaceOptions, slowed: boolean, n: number): Promise<RoundFigures> {
  const what = `opener race round ${n + 1}`;
  const dir = mkdtempSync(join(tmpdir(), 'soak-race-'));
  const created = await runCli(ctx, ['add', '--store', dir], 'https://seed.race.example/\n', 60_000);
  if (created.code !== 0) ctx.fail(`${what}: creating the store: ${created.stderr}`);
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let finished = false;
  const writers = Promise.all(
    Array.from({ length: options.writers }, (_, w) => writer(ctx, dir, `r${n}w${w}`, stopped)),
  ).finally(() => (finished = true));
  const loops = Promise.all(
    Array.from({ length: options.openers }, () => openerLoop(ctx, dir, slowed, () => finished)),
  );
  const library = Promise.all(
    Array.from({ length: options.libraryOpeners }, () => libraryOpener(ctx, dir, options.roundMs)),
  );
  setTimeout(stop, options.roundMs);
  const writerRuns = await writers;
  const libraryRuns = await library;
  const statsRuns = (await loops).flat();
  const openerRuns = [...statsRuns, ...libraryRuns.map((opener) => opener.run)];
  const figures = processFigures(ctx, what, writerRuns, openerRuns);
  figures.opens = statsRuns.length + libraryRuns.reduce((sum, opener) => sum + opener.opens, 0);
  const printed = writerRuns.flatMap((run) => run.stdout.split('\n').filter((line) => line.length > 0));
  figures.commits = printed.length;
  const missing = await unseen(ctx, dir, printed);
  if (typeof missing === 'string') {
    figures.unreadable = true;
    ctx.fail(`${what}: the store cannot answer for the printed URLs: ${missing}`);
  } else if (missing.length > 0) {
    figures.lost = missing.length;
    ctx.fail(`${what}: ${missing.length} of ${printed.length} acknowledged URLs lost (e.g. ${missing[0]})`);
  }
  const verify = await runCli(ctx, ['verify', '--store', dir], '', 120_000);
  if (verify.code !== 0) {
    figures.verifyFailed = true;
    ctx.fail(
      `${what}: verify exited ${verify.code ?? verify.signal}: ${describe(verify.stderr) || verify.stdout.trim().split('\n')[0]}`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  ctx.note(
    `${what}/${options.rounds}: ${figures.commits} commits, ${figures.opens} opens, ${figures.lost} lost, ${figures.writerErrors} writers failed`,
  );
  return figures;
}

/** Exit codes, signals and raw lines of a round's writers and openers. */
function processFigures(
  ctx: SoakContext,
  what: string,
  writerRuns: readonly CliRun[],
  openerRuns: readonly CliRun[],
): RoundFigures {
  const figures: RoundFigures = {
    commits: 0,
    opens: 0,
    lost: 0,
    unreadable: false,
    writerErrors: 0,
    openerErrors: 0,
    signals: 0,
    verifyFailed: false,
    rawLines: 0,
  };
  const check = (run: CliRun, who: string): boolean => {
    figures.rawLines += foreignLines(run.stderr).filter((line) => !line.startsWith('    at ')).length;
    if (run.signal !== null) figures.signals++;
    if (run.code === 0) return true;
    ctx.fail(
      `${what}: ${who} ${run.signal !== null ? `ended by ${run.signal}` : `exited ${run.code}`}: ${describe(run.stderr)}`,
    );
    return false;
  };
  writerRuns.forEach((run, w) => {
    if (!check(run, `writer ${w}`)) figures.writerErrors++;
  });
  for (const run of openerRuns) if (!check(run, 'an opener')) figures.openerErrors++;
  return figures;
}

export async function openerRace(ctx: SoakContext, options: OpenerRaceOptions): Promise<OpenerRaceResult> {
  const slowed = straceWorks();
  if (!slowed) ctx.note('opener race: strace cannot run here; the stats openers run unslowed and seldom meet a commit');
  const rounds: RoundFigures[] = [];
  for (let n = 0; n < options.rounds; n++) rounds.push(await round(ctx, options, slowed, n));
  const sum = (pick: (figures: RoundFigures) => number): number =>
    rounds.reduce((total, figures) => total + pick(figures), 0);
  return {
    ...options,
    openersSlowed: slowed,
    commits: sum((f) => f.commits),
    opens: sum((f) => f.opens),
    lost: sum((f) => f.lost),
    roundsWithLoss: sum((f) => (f.lost > 0 ? 1 : 0)),
    roundsUnreadable: sum((f) => (f.unreadable ? 1 : 0)),
    writerErrors: sum((f) => f.writerErrors),
    openerErrors: sum((f) => f.openerErrors),
    signals: sum((f) => f.signals),
    verifyFailures: sum((f) => (f.verifyFailed ? 1 : 0)),
    rawLines: sum((f) => f.rawLines),
  };
}
