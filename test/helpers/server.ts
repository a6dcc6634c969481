import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after } from 'node:test';
import { spawnCli } from './cli.js';

/** Why the tests that need redis-cli / redis-py skip, or false when the tool is there. */
export const NEEDS_REDIS_CLI: string | false =
  spawnSync('redis-cli', ['--version']).status === 0
    ? false
    : 'redis-cli is not installed (apt-get install redis-tools; CI installs it)';
export const NEEDS_REDIS_PY: string | false =
  existsSync('/usr/bin/python3') && spawnSync('/usr/bin/python3', ['-c', 'import redis']).status === 0
    ? false
    : 'redis-py is not installed for /usr/bin/python3 (apt-get install python3-redis; CI installs it)';

export interface RunningServer {
  readonly port: number;
  readonly metricsPort: number | null;
  readonly child: ChildProcess;
  /** Every stderr line so far (the log). */
  readonly log: string[];
  /** Sends `signal` and resolves with the exit code and signal. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `seenstore serve` on a free loopback port (--port 0, read back from the JSON start line)
 * over `store`; stopped by its pid when the test file ends, whatever happened.
 */
export async function startServer(
  store: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<RunningServer> {
  const child = spawnCli(['--store', store, 'serve', '--port', '0', '--log-json', ...args], env);
  child.stdin!.end();
  const log: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let pending = '';
  const started = new Promise<{ port: number; metrics_port: number | null }>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        log.push(line);
        if (line.includes('"event":"start"'))
          resolve(JSON.parse(line) as { port: number; metrics_port: number | null });
      }
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`serve exited (${code ?? signal}) before starting: ${log.join('\n')}${pending}`)),
    );
  });
  const start = await started;
  return {
    port: start.port,
    metricsPort: start.metrics_port,
    child,
    log,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** INFO's `field:value` lines as an object (section headers and blank lines left out). */
export function infoFields(text: string): Record<string, string> {
  const lines = text.split(/\r?\n/).filter((line) => line !== '' && !line.startsWith('#'));
  return Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]));
}
