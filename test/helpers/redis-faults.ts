import { createServer, type Server, type Socket } from 'node:net';
import type { RedisCluster, RedisNode } from './redis-cluster.js';
import { replyText } from './resp.js';

/**
 * Runs `work` with `nodes` paused (SIGSTOP): a node that holds its connections and never answers.
 * Every paused node is resumed (SIGCONT) when `work` ends, however it ends.
 */
export async function whilePaused<T>(nodes: readonly RedisNode[], work: () => Promise<T>): Promise<T> {
  const paused: number[] = [];
  try {
    for (const node of nodes) {
      process.kill(node.process.pid!, 'SIGSTOP');
      paused.push(node.process.pid!);
    }
    return await work();
  } finally {
    for (const pid of paused) resume(pid);
  }
}

export function resume(pid: number): void {
  try {
    process.kill(pid, 'SIGCONT');
  } catch {
    // already gone
  }
}

/** A TCP listener on a free loopback port that accepts connections and never answers. */
export async function silentListener(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The cluster node listed as `port`'s replica (CLUSTER NODES), or undefined. */
export function replicaOf(cluster: RedisCluster, port: number): RedisNode | undefined {
  const lines = cluster.cli(cluster.masters().find((p) => p !== port) ?? port, 'CLUSTER', 'NODES').split('\n');
  const master = lines.find((line) => line.includes(`:${port}@`));
  if (master === undefined) return undefined;
  const id = master.split(' ')[0]!;
  const replica = lines.find((line) => line.split(' ')[3] === id);
  if (replica === undefined) return undefined;
  const replicaPort = Number(replica.split(' ')[1]!.split('@')[0]!.split(':')[1]);
  return cluster.nodes.find((node) => node.port === replicaPort);
}

/**
 * Whether every node of the cluster answers, says cluster_state:ok, and lists the same masters
 * (by address, none flagged failing): after a failover, a resumed old master keeps a stale view
 * for a while, and a test that picks "the master of a key" from it would pick the wrong node.
 */
export async function clusterSettled(cluster: RedisCluster): Promise<boolean> {
  const views = new Set<string>();
  for (const node of cluster.nodes) {
    if (!/cluster_state:ok/.test(await replyText(node.port, 'CLUSTER', 'INFO'))) return false;
    const masters = (await replyText(node.port, 'CLUSTER', 'NODES'))
      .split('\n')
      .filter((line) => /\bmaster\b/.test(line.split(' ')[2] ?? ''))
      .map((line) => (/fail/.test(line.split(' ')[2]!) ? 'failing' : line.split(' ')[1]!.split('@')[0]!))
      .sort();
    if (masters.length === 0) return false;
    views.add(masters.join(','));
  }
  return views.size === 1 && ![...views][0]!.includes('failing');
}

/** The node's role as it reports it (`master` / `slave`), or '' when it does not answer. */
export async function roleOf(node: RedisNode): Promise<string> {
  return /role:(\w+)/.exec(await replyText(node.port, 'INFO', 'replication'))?.[1] ?? '';
}
