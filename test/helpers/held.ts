import type { ChildProcess } from 'node:child_process';
import { collectCli, spawnCli, type CliResult } from './cli.js';

export interface HeldCommand {
  /** CLI arguments, the store among them. */
  readonly args: readonly string[];
  /** Input lines; the first must make the command print (a new URL for filter-new, a seen one for has). */
  readonly lines: readonly string[];
}

export interface HeldRuns {
  readonly results: CliResult[];
  /** Every process answered its first line or exited before the rest was sent. */
  readonly allReady: boolean;
}

/**
 * Runs CLI processes so that all of them have the store open at the same moment: each is sent its
 * first line at once, and the rest only when every one has answered that line (printed something)
 * or exited. A process that has answered holds its LMDB reader slot until its input ends, so the
 * processes that are in are in together, however long each takes to start. After `readyMs` the
 * rest is sent anyway (`allReady` false); after `deadlineMs` a process still running is SIGKILLed,
 * so no child outlives the caller.
 */
export async function runHeld(
  commands: readonly HeldCommand[],
  readyMs: number,
  deadlineMs: number,
): Promise<HeldRuns> {
  let waiting = commands.length;
  let release!: () => void;
  const ready = new Promise<void>((resolve) => (release = resolve));
  const timer = setTimeout(release, readyMs);
  const children: ChildProcess[] = [];
  const runs = commands.map((command) => {
    const child = spawnCli(command.args);
    children.push(child);
    let answered = false;
    const answer = (): void => {
      if (answered) return;
      answered = true;
      if (--waiting === 0) release();
    };
    child.stdout!.once('data', answer);
    child.once('close', answer);
    const result = collectCli(child);
    child.stdin!.write(`${command.lines[0] ?? ''}\n`);
    void ready.then(() => child.stdin!.end(command.lines.length > 1 ? `${command.lines.slice(1).join('\n')}\n` : ''));
    return result;
  });
  const killAll = (): void => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const killer = setTimeout(killAll, deadlineMs);
  try {
    const results = await Promise.all(runs);
    return { results, allReady: waiting === 0 };
  } finally {
    clearTimeout(timer);
    clearTimeout(killer);
    // Only when a spawn failed are some still running: none may outlive the caller.
    killAll();
  }
}
