import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './data.js';

/** The `seenstore` command as a package installs it (package.json "bin"): the bundle, through the code cache. */
export const CLI = join(ROOT, 'dist', 'src', 'cli', 'bin.cjs');
/** The same CLI from its modules: what a test imports in its own process, to share its fault hooks. */
export const CLI_MODULES = join(ROOT, 'dist', 'src', 'cli', 'main.js');

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to completion with `input` on stdin. */
export function runCli(
  args: readonly string[],
  input: string | Buffer = '',
  env: NodeJS.ProcessEnv = {},
  cwd?: string,
): Promise<CliResult> {
  const child = spawnCli(args, env, cwd);
  child.stdin!.end(input);
  return collectCli(child);
}

/** What a spawned CLI prints and how it exits (its stdin is the caller's to feed and end). */
export function collectCli(child: ChildProcess): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin!.on('error', () => undefined);
  });
}

export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd?: string): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
    ...(cwd === undefined ? {} : { cwd }),
  });
}

const CRASH_CHILD = join(ROOT, 'dist', 'test', 'helpers', 'crash-child.js');

export interface ChildRun {
  /** Batches the child acknowledged ("ack N" lines). */
  readonly acked: number;
  /** The child got through all its work and closed the store. */
  readonly done: boolean;
  readonly signal: NodeJS.Signals | null;
}

/**
 * Runs test/helpers/crash-child in its `paced` mode (args without the mode): after batch N is
 * acknowledged, `onAck(N)` runs, and the child adds its next batch once it resolves. Rejects as
 * runCrashChild does, or with onAck's error (the child is killed then).
 */
export function runPacedChild(args: readonly string[], onAck: (batch: number) => Promise<void>): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CRASH_CHILD, ...args, 'paced'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let failure: unknown;
    let acks = Promise.resolve();
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = `${out.slice(out.lastIndexOf('\n') + 1)}${chunk}`.split('\n').slice(0, -1);
      out += chunk;
      for (const line of lines) {
        const ack = /^ack (\d+)$/.exec(line);
        if (ack === null) continue;
        acks = acks
          .then(() => onAck(Number(ack[1])))
          .then(
            () => void child.stdin!.write('go\n'),
            (error: unknown) => {
              failure ??= error;
              child.kill('SIGKILL');
            },
          );
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.stdin!.on('error', () => undefined);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      void acks.then(() => {
        if (failure !== undefined) reject(failure);
        else if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`child failed (${code}): ${err}`));
        else
          resolve({
            acked: out.split('\n').filter((line) => line.startsWith('ack ')).length,
            done: out.includes('done\n'),
            signal,
          });
      });
    });
  });
}

/** Runs test/helpers/crash-child with `args`; rejects unless it exits 0 or was SIGKILLed on purpose. */
export function runCrashChild(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CRASH_CHILD, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`child failed (${code}): ${err}`));
      const acked = out.split('\n').filter((line) => line.startsWith('ack ')).length;
      resolve({ acked, done: out.includes('done\n'), signal });
    });
  });
}
