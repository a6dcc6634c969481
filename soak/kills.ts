import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs `argv` and SIGKILLs it after `delayMs` (if still running); resolves with its stdout. */
export function killAfter(
  argv: string[],
  delayMs: number,
  input?: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ stdout: string; killed: boolean; code: number | null; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, argv, {
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    if (input !== undefined) {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(input);
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ stdout, stderr, killed: signal === 'SIGKILL', code });
    });
  });
}

/**
 * How long `writer` (test/helpers/crash-child.ts) takes, on this machine, from its spawn to its first acknowledged batch:
 * the random kills' window grows by twice that, so that a slow machine still sees kills after
 * acknowledgements (a window tuned where the first ack came at ~150 ms killed every writer before
 * its first ack on a machine four times slower).
 */
export async function firstAckMs(writer: string, file: string, batch: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-first-ack-'));
  try {
    return await new Promise((done) => {
      const started = performance.now();
      const child = spawn(process.execPath, [writer, dir, 'soak', file, String(batch), 'none', 'none'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let acked: number | undefined;
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        if (acked !== undefined || !chunk.includes('ack ')) return;
        acked = performance.now() - started;
        child.kill('SIGKILL');
      });
      child.on('close', () => done(acked ?? performance.now() - started));
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
