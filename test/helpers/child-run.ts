import { spawn } from 'node:child_process';

export interface ChildOut {
  readonly lines: string[];
  /** It was killed with SIGKILL (by itself at a fault point, or by the test). */
  readonly killed: boolean;
}

/**
 * Runs a test child script (`node SCRIPT ARGS...`) to its end or its kill -9; resolves with its
 * non-empty stdout lines. Any other failure rejects with its stderr, naming `what`.
 */
export function runChild(
  script: string,
  args: readonly string[],
  what: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildOut> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let out = '';
    let err = '';
    proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`${what} failed (${code}): ${err}`));
      else resolve({ lines: out.split('\n').filter((line) => line.length > 0), killed: signal === 'SIGKILL' });
    });
  });
}
