import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFaultHook } from '../../src/store/faults.js';
import { ROOT } from './data.js';

/** checkpoint-child.js running beside this process, signalling through files in `signals`. */
export interface CheckpointChild {
  /** Resolves once the child wrote `name`; rejects if it exited first. */
  appeared(name: string): Promise<void>;
  /** Lets the child close the store and exit; resolves to its exit code. */
  finish(): Promise<number | null>;
  kill(): void;
}

export function startCheckpointChild(
  dir: string,
  scope: string,
  urlsFile: string,
  signals: string,
  mode?: 'late-checkpoint',
): CheckpointChild {
  const args = [
    join(ROOT, 'dist', 'test', 'helpers', 'checkpoint-child.js'),
    dir,
    scope,
    urlsFile,
    signals,
    ...(mode === undefined ? [] : [mode]),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    async appeared(name) {
      while (!existsSync(join(signals, name))) {
        if (child.exitCode !== null) throw new Error(`the child exited (${child.exitCode}) before writing ${name}`);
        await sleep(5);
      }
    },
    finish() {
      writeFileSync(join(signals, 'exit'), '');
      return exited;
    },
    kill() {
      child.kill('SIGKILL');
    },
  };
}

/**
 * Runs `action` with a fault hook that, the first time fault point `point` is reached, writes
 * `signals/go` and blocks this thread (at most 2 s: the child holds no lock of this process's)
 * until the child wrote `signals/done`. Resolves to whether the point was reached.
 */
export async function pausedAt(point: string, signals: string, action: () => Promise<unknown>): Promise<boolean> {
  let paused = false;
  setFaultHook((reached) => {
    if (reached !== point || paused) return;
    paused = true;
    writeFileSync(join(signals, 'go'), '');
    const until = Date.now() + 2_000;
    const wait = new Int32Array(new SharedArrayBuffer(4));
    while (!existsSync(join(signals, 'done')) && Date.now() < until) Atomics.wait(wait, 0, 0, 10);
  });
  try {
    await action();
  } finally {
    setFaultHook(undefined);
  }
  return paused;
}
