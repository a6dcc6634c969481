/**
 * The paused-master measurement of the Redis backend (issue 32, docs/redis.md "Durability"): two
 * writers stream the same URLs (one in reverse) into a local 3-master, 3-replica cluster (AOF,
 * appendfsync always, cluster-node-timeout 2000) while one master is paused with SIGSTOP until
 * its replica has taken over and PAUSE_MS more, then resumed (it rejoins as a replica). Counts,
 * with waitReplicas 0 and 1: writers that did not exit 0, acknowledged URLs the store no longer
 * holds, and URLs printed by both writers (new twice). The short version is the paused-master
 * test of test/redis-faults.test.ts.
 *
 *   npm run build && node dist/soak/redis-paused.js [RUNS] [PAUSE_MS]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../src/index.js';
import { ROOT } from '../test/helpers/data.js';
import { redisMissing, startRedisCluster, until, type RedisCluster } from '../test/helpers/redis-cluster.js';
import { replicaOf, roleOf, whilePaused } from '../test/helpers/redis-faults.js';
import { generatedUrls } from './redis-urls.js';

const WRITER = join(ROOT, 'dist', 'test', 'helpers', 'redis-writer.js');
const missing = redisMissing();
if (missing !== undefined) {
  process.stderr.write(`skipped: ${missing}\n`);
  process.exit(0);
}
const runs = Number(process.argv[2] ?? 2);
const pauseMs = Number(process.argv[3] ?? 3_000);
const input = generatedUrls(40_000);

interface Writer {
  readonly child: ChildProcess;
  out: string;
  err: string;
  readonly exited: Promise<number | null>;
}

function writer(location: string, file: string, waitReplicas: number): Writer {
  const child = spawn(
    process.execPath,
    [WRITER, location, 's', file, '500', JSON.stringify({ waitReplicas, unavailableAfterMs: 30_000 }), '5'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const w: Writer = {
    child,
    out: '',
    err: '',
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (w.out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (w.err += chunk));
  return w;
}

async function pausedRun(cluster: RedisCluster, waitReplicas: number): Promise<string> {
  const location = cluster.location();
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-paused-'));
  try {
    writeFileSync(join(dir, 'a.txt'), `${input.join('\n')}\n`);
    writeFileSync(join(dir, 'b.txt'), `${[...input].reverse().join('\n')}\n`);
    const writers = ['a.txt', 'b.txt'].map((file) => writer(location, join(dir, file), waitReplicas));
    const lines = (w: Writer): string[] => w.out.split('\n').slice(0, -1);
    await until(
      () => writers.every((w) => lines(w).length >= 2_000 || w.child.exitCode !== null),
      'both writers under way',
      120_000,
    );
    // A master other than the one the location names (any master holds partitions of the epoch).
    const victim = cluster.nodes.find((node) => node !== cluster.nodes[0] && cluster.masters().includes(node.port))!;
    const replica = replicaOf(cluster, victim.port)!;
    const started = Date.now();
    await whilePaused([victim], async () => {
      await until(async () => (await roleOf(replica)) === 'master', 'the replica promoted', 60_000);
      await sleep(pauseMs);
    });
    const pausedMs = Date.now() - started;
    const codes = await Promise.all(writers.map((w) => w.exited));
    const printed = writers.flatMap(lines);
    const twice = printed.length - new Set(printed).size;
    const store = await SeenStore.open(location, { onWarning: () => {} });
    let lost = 0;
    try {
      lost = (await store.scope('s').has(printed)).filter((held) => !held).length;
    } finally {
      await store.close();
    }
    const failed = codes.filter((code) => code !== 0).length;
    const why = failed === 0 ? '' : ` (${writers.map((w) => w.err.trim().split('\n').pop()).join(' | ')})`;
    return `paused ${pausedMs} ms: writers not exiting 0: ${failed}${why}; acknowledged lost ${lost} of ${new Set(printed).size}; printed twice ${twice}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const waitReplicas of [0, 1]) {
  for (let run = 1; run <= runs; run++) {
    const cluster = await startRedisCluster();
    try {
      process.stdout.write(`waitReplicas ${waitReplicas} run ${run}: ${await pausedRun(cluster, waitReplicas)}\n`);
    } catch (error) {
      process.stdout.write(
        `waitReplicas ${waitReplicas} run ${run}: failed: ${(error as Error).message.split('\n')[0]}\n`,
      );
    } finally {
      await cluster.stop();
    }
  }
}
