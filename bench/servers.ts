/**
 * Servers for the benchmarks that compare `seenstore serve` with Redis (bench/server.ts,
 * bench/journal.ts): each started fresh on a free loopback port in a temporary directory, stopped
 * by its own pid, and its directory removed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCH_DIR, cliOf } from './data.js';

/** This checkout's CLI; another build's (an A/B run) is passed to startSeenstore. */
export const CLI = cliOf(resolve(BENCH_DIR, '..'));

export interface Running {
  readonly port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** Resolves once the port answers PING. */
async function waitForPing(port: number, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`server on ${port} exited with ${child.exitCode}`);
    const ok = spawnSync('redis-cli', ['-p', String(port), 'PING'], { encoding: 'utf8' }).stdout.trim() === 'PONG';
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`server on ${port} did not answer PING`);
}

function stopper(child: ChildProcess, dir: string): () => Promise<void> {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
}

/** Redis with `appendonly yes`, `appendfsync always`: every SADD durable before its reply. */
export async function startRedis(): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-redis-'));
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--daemonize',
      'no',
    ],
    { stdio: 'ignore' },
  );
  await waitForPing(port, child);
  return { port, stop: stopper(child, dir) };
}

export async function startSeenstore(cli = CLI): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-serve-'));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [cli, '--store', join(dir, 'store'), 'serve', '--port', String(port), '--default-capacity', '4000000'],
    { stdio: 'ignore' },
  );
  await waitForPing(port, child);
  return { port, stop: stopper(child, dir) };
}

/**
 * Members `__rand_int__` takes (redis-benchmark's -r). Its parser reads -r with atoi into an int:
 * 1e12, the value used before, wrapped and turned the randomisation off, so every SADD after the
 * first was a no-op that Redis neither appended nor fsynced, and every BF.ADD a duplicate.
 */
const RANDOM_MEMBERS = 1_000_000_000;

/** Members of a set (SCARD) or items of a Bloom key (BF.CARD), read with redis-cli. */
function cardinality(port: number, command: 'SADD' | 'BF.ADD', key: string): number {
  const result = spawnSync(
    'redis-cli',
    ['-h', '127.0.0.1', '-p', String(port), command === 'SADD' ? 'SCARD' : 'BF.CARD', key],
    { encoding: 'utf8' },
  );
  const count = Number(result.stdout.trim());
  if (result.status !== 0 || !Number.isSafeInteger(count))
    throw new Error(`redis-cli could not count ${key}: ${result.stdout}${result.stderr}`);
  return count;
}

/**
 * redis-benchmark: `connections` clients, one command at a time each, `requests` in all. For
 * SADD and BF.ADD of `__rand_int__`, checks that nearly every add was new: redis-benchmark seeds
 * its random numbers from the time and its pid, and two runs a second and a pid apart can draw
 * the same members; a run of duplicates writes and syncs nothing and would be measured as a fast
 * durable add. Give each run of one server a key of its own.
 */
export function redisBenchmark(
  port: number,
  connections: number,
  requests: number,
  command: readonly string[],
): { requestsPerSec: number; p50Ms: number; p99Ms: number } {
  const verb = command[0];
  const adds =
    (verb === 'SADD' || verb === 'BF.ADD') && command[2] === '__rand_int__'
      ? ({ command: verb, key: command[1]! } as const)
      : undefined;
  const before = adds === undefined ? 0 : cardinality(port, adds.command, adds.key);
  const result = spawnSync(
    'redis-benchmark',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-c',
      String(connections),
      '-n',
      String(requests),
      '-r',
      String(RANDOM_MEMBERS),
      '--csv',
      ...command,
    ],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`redis-benchmark failed: ${result.stderr}`);
  if (adds !== undefined) {
    const added = cardinality(port, adds.command, adds.key) - before;
    if (added < 0.99 * requests)
      throw new Error(
        `redis-benchmark ${command.join(' ')}: only ${added} of ${requests} adds were new, so the run measured duplicates`,
      );
  }
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  const line = result.stdout.trim().split('\n').pop()!;
  const cells = line.split(',').map((cell) => cell.replaceAll('"', ''));
  return { requestsPerSec: Number(cells[1]), p50Ms: Number(cells[4]), p99Ms: Number(cells[6]) };
}
