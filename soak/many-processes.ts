/**
 * Part 5, many processes (issue 17): PROCESSES CLI processes on one store, all open at the same
 * moment (held open by their input until every one has answered its first line or exited; see
 * test/helpers/held.ts). Even ones run `filter-new` on ten distinct URLs of their own, odd ones
 * `has` on a URL of the store and nine others. Each must answer (exit 0, nothing on stderr) or
 * refuse with STORE_BUSY (exit 14, one `seenstore: error STORE_BUSY` line, nothing on stdout);
 * never INTERNAL, never a signal, never a raw lmdb line. Every URL a filter-new printed must be
 * in the store afterwards. Before issue 17, 14 of 140 exited 70 (MDB_READERS_FULL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ERROR_CODES } from '../src/index.js';
import { runHeld, type HeldCommand } from '../test/helpers/held.js';
import { runCli, unseen, type SoakContext } from './context.js';

const URLS_PER_PROCESS = 10;
/** How long the processes may take to all be in; a 2-core machine starts 200 node processes in ~60 s. */
const READY_MS = 300_000;
const DEADLINE_MS = 400_000;

export interface ManyProcessesResult {
  readonly processes: number;
  /** Every process answered its first line or exited before the rest of the input was sent. */
  readonly allHeldTogether: boolean;
  readonly answered: number;
  readonly busy: number;
  /** Exits other than 0 and STORE_BUSY (INTERNAL among them), signals included. */
  readonly otherExits: number;
  readonly rawStderrLines: number;
  readonly printedNew: number;
  readonly lost: number;
  readonly seconds: number;
}

export async function manyProcesses(ctx: SoakContext, processes: number): Promise<ManyProcessesResult> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-many-'));
  const started = Date.now();
  const seed = ctx.urls[0]!;
  const created = await runCli(ctx, ['add', '--store', dir], `${seed}\n`, 60_000);
  if (created.code !== 0) ctx.fail(`many processes: creating the store: ${created.stderr}`);
  const commands: HeldCommand[] = Array.from({ length: processes }, (_, i) => {
    const mine = ctx.urls.slice(1 + i * URLS_PER_PROCESS, 1 + (i + 1) * URLS_PER_PROCESS);
    const batching = ['--batch-size', '4', '--batch-delay-ms', '5'];
    return i % 2 === 0
      ? { args: ['filter-new', '--store', dir, '--quiet', ...batching], lines: mine }
      : { args: ['has', '--store', dir, ...batching], lines: [seed, ...mine.slice(1)] };
  });
  const { results, allReady } = await runHeld(commands, READY_MS, DEADLINE_MS);
  if (!allReady)
    ctx.fail(
      `many processes: not all ${processes} were in within ${READY_MS / 1000} s (a slow machine; the trial proves less)`,
    );
  let answered = 0;
  let busy = 0;
  let otherExits = 0;
  let rawStderrLines = 0;
  const printed: string[] = [];
  results.forEach((run, i) => {
    const what = `many processes: ${commands[i]!.args[0]} ${i}`;
    if (run.code === 0) {
      answered++;
      if (run.stderr !== '') {
        rawStderrLines += run.stderr.split('\n').filter((line) => line.length > 0).length;
        ctx.fail(`${what}: exit 0 with stderr: ${run.stderr.trim().slice(0, 300)}`);
      }
      if (i % 2 === 0) printed.push(...run.stdout.split('\n').filter((line) => line.length > 0));
    } else if (run.code === ERROR_CODES.STORE_BUSY) {
      busy++;
      const lines = run.stderr.split('\n').filter((line) => line.length > 0);
      if (lines.length !== 1 || !lines[0]!.startsWith('seenstore: error STORE_BUSY: ')) {
        rawStderrLines += lines.filter((line) => !line.startsWith('seenstore: ')).length;
        ctx.fail(`${what}: STORE_BUSY but stderr: ${run.stderr.trim().slice(0, 300)}`);
      }
      if (run.stdout !== '') ctx.fail(`${what}: STORE_BUSY after printing`);
    } else {
      otherExits++;
      ctx.fail(`${what}: exit ${run.code ?? run.signal}: ${run.stderr.trim().slice(0, 300)}`);
    }
  });
  const missing = await unseen(ctx, dir, printed);
  const lost = typeof missing === 'string' ? printed.length : missing.length;
  if (typeof missing === 'string') ctx.fail(`many processes: checking the printed URLs: ${missing}`);
  else if (lost > 0) ctx.fail(`many processes: ${lost} URLs printed as new are not in the store`);
  rmSync(dir, { recursive: true, force: true });
  const seconds = Math.round((Date.now() - started) / 1000);
  ctx.note(
    `many processes: ${processes} in ${seconds} s: ${answered} answered, ${busy} busy, ${otherExits} other exits, ${lost} lost`,
  );
  return {
    processes,
    allHeldTogether: allReady,
    answered,
    busy,
    otherExits,
    rawStderrLines,
    printedNew: printed.length,
    lost,
    seconds,
  };
}
