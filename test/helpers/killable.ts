import { spawn } from 'node:child_process';

export interface KillableRun {
  /** Lines that started with the counted prefix. */
  readonly counted: number;
  /** The child printed `finished`. */
  readonly finished: boolean;
  readonly seconds: number;
}

/**
 * Runs a crawler child that prints `PREFIX ...` per page and `finished` at the end; kills it with
 * SIGKILL once it has printed `killAfter` counted lines. Rejects unless it exits 0 or was killed.
 */
export function runKillable(
  command: string,
  args: readonly string[],
  prefix: string,
  killAfter = Infinity,
): Promise<KillableRun> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let counted = 0;
    let finished = false;
    let rest = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith(prefix)) counted++;
        if (line === 'finished') finished = true;
      }
      if (counted >= killAfter && child.exitCode === null) child.kill('SIGKILL');
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0 && signal !== 'SIGKILL')
        reject(new Error(`${command} ${args.join(' ')} failed (${code}): ${err.slice(-3000)}`));
      else resolve({ counted, finished, seconds });
    });
  });
}
