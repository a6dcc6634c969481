import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../../src/index.js';
import { ROOT } from './data.js';
import { masterOf, until, type RedisCluster, type RedisNode } from './redis-cluster.js';
import { replyText } from './resp.js';

const WRITER = join(ROOT, 'dist', 'test', 'helpers', 'redis-writer.js');

/**
 * Streams `input` through a writer process (helpers/redis-writer.ts) with `waitReplicas`, kills
 * the master of the epoch's slot with SIGKILL once part of it is acknowledged, restarts the killed
 * node after the failover (as a supervisor would: it rejoins as a replica), lets the writer finish
 * and counts the acknowledged URLs that the store no longer holds. Used by test/redis.test.ts and
 * soak/redis-failover.ts (which measures waitReplicas 0).
 */
export async function failoverRun(
  cluster: RedisCluster,
  input: readonly string[],
  waitReplicas: number,
  pauseMs: number,
): Promise<{ lost: number; acknowledged: number }> {
  const location = cluster.location();
  const prefix = /prefix=([^&]+)/.exec(location)![1]!;
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-failover-'));
  try {
    const file = join(dir, 'input.txt');
    writeFileSync(file, `${input.join('\n')}\n`);
    const child = spawn(
      process.execPath,
      [WRITER, location, 's', file, '500', JSON.stringify({ waitReplicas }), String(pauseMs)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const lines = (): string[] => out.split('\n').slice(0, -1);
    while (lines().length < Math.min(4_000, input.length / 4)) {
      if (child.exitCode !== null) throw new Error(`the writer ended early: ${err}`);
      await sleep(20);
    }
    const entry = JSON.parse(cluster.cli(cluster.masters()[0]!, '-c', 'HGET', `{${prefix}/s}:epochs`, '1')) as {
      uid: string;
    };
    // The master of partition 0 (a partitioned epoch has partitions on every master: any one is hit).
    await failOver(cluster, `{${prefix}/s/0}:${entry.uid}:state`);
    const code = await exited(child);
    if (code !== 0) throw new Error(`the writer failed through the failover: ${err}`);
    const acknowledged = lines();
    const store = await SeenStore.open(location, { onWarning: () => {} });
    try {
      const held = await store.scope('s').has(acknowledged);
      return { lost: held.filter((h) => !h).length, acknowledged: acknowledged.length };
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/**
 * Kills the master that holds `key`'s slot with SIGKILL, waits for the cluster to fail over (a
 * replica promoted: cluster_state fail, then ok), and restarts the killed node as a supervisor
 * would (it rejoins as a replica).
 */
export async function failOver(cluster: RedisCluster, key: string): Promise<void> {
  const owner = masterOf(cluster, key);
  await cluster.kill(owner);
  const survivor = cluster.nodes.find((node) => node !== owner)!;
  const state = (): Promise<string> => replyText(survivor.port, 'CLUSTER', 'INFO');
  await until(async () => (await state()).includes('cluster_state:fail'), 'the cluster to notice the kill');
  await until(async () => (await state()).includes('cluster_state:ok'), 'a replica to take over');
  await cluster.restart(owner);
}

/** A replica of the master of `key`'s slot. */
export function replicaOf(cluster: RedisCluster, key: string): RedisNode {
  const master = masterOf(cluster, key);
  const nodes = cluster.cli(master.port, 'CLUSTER', 'NODES').split('\n');
  const masterId = nodes.find((l) => l.includes(`:${master.port}@`))!.split(' ')[0]!;
  return cluster.nodes.find((node) => nodes.some((l) => l.includes(`:${node.port}@`) && l.split(' ')[3] === masterId))!;
}
