import { createClient, createCluster, ErrorReply, RESP_TYPES } from 'redis';
import { SeenStoreError } from '../../errors.js';
import type { RedisLocation } from './location.js';

type Arg = string | Buffer;

/** A reply as this backend reads it: bulk strings as Buffers. */
export type Reply = Buffer | number | null | Reply[];

/** One connection to a Redis deployment, cluster or single server, routing each command by its key. */
export interface RedisConnection {
  readonly cluster: boolean;
  /** Sends one command to the master of `key`'s slot (a read-only one may go there too). */
  send(key: string, args: readonly Arg[]): Promise<Reply>;
  /** Sends one command to every master: FUNCTION LOAD, CONFIG GET, INFO. */
  eachMaster(args: readonly Arg[]): Promise<{ readonly node: string; readonly reply: Reply }[]>;
  close(): Promise<void>;
}

const BUFFERS = { [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.SIMPLE_STRING]: Buffer } as const;

/**
 * Connects to the location's nodes: a cluster when the first reachable node says
 * cluster_enabled:1 (discovered from it: slots, masters, replicas; MOVED and ASK followed by the
 * client), else that single server. `connectTimeoutMs` bounds each attempt.
 */
export async function connectRedis(location: RedisLocation, connectTimeoutMs: number): Promise<RedisConnection> {
  const socket = { connectTimeout: connectTimeoutMs, tls: location.tls as false, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000) };
  const auth = { ...(location.username === undefined ? {} : { username: location.username }), ...(location.password === undefined ? {} : { password: location.password }) };
  let probeError: unknown;
  for (const node of location.nodes) {
    const client = createClient({ socket: { ...socket, host: node.host, port: node.port, reconnectStrategy: false }, ...auth });
    client.on('error', () => {});
    try {
      await client.connect();
      const info = String(await client.sendCommand(['INFO', 'cluster']));
      if (!/cluster_enabled:1/.test(info)) {
        await client.quit();
        return single(node, socket, auth);
      }
      await client.quit();
      return cluster(location, socket, auth);
    } catch (error) {
      probeError = error;
      client.destroy();
    }
  }
  throw new SeenStoreError('STORE_UNAVAILABLE', `no Redis node of ${location.nodes.map((n) => `${n.host}:${n.port}`).join(',')} answered: ${(probeError as Error)?.message}`, { cause: probeError });
}

async function single(node: { host: string; port: number }, socket: object, auth: object): Promise<RedisConnection> {
  const client = createClient({ socket: { ...socket, host: node.host, port: node.port }, ...auth, disableOfflineQueue: true }).withTypeMapping(BUFFERS);
  client.on('error', () => {});
  await client.connect();
  return {
    cluster: false,
    send: (_key, args) => client.sendCommand(args as Arg[]) as Promise<Reply>,
    eachMaster: async (args) => [{ node: `${node.host}:${node.port}`, reply: (await client.sendCommand(args as Arg[])) as Reply }],
    close: async () => {
      await client.quit().catch(() => client.destroy());
    },
  };
}

async function cluster(location: RedisLocation, socket: object, auth: object): Promise<RedisConnection> {
  const client = createCluster({
    rootNodes: location.nodes.map((node) => ({ socket: { ...socket, host: node.host, port: node.port } })),
    defaults: { socket, ...auth, disableOfflineQueue: true },
    // Loopback or in-datacentre addresses as the nodes announce them.
    useReplicas: false,
  }).withTypeMapping(BUFFERS);
  client.on('error', () => {});
  await client.connect();
  return {
    cluster: true,
    send: (key, args) => client.sendCommand(key, false, args as Arg[]) as Promise<Reply>,
    eachMaster: async (args) =>
      Promise.all(
        client.masters.map(async (master) => {
          const node = await client.nodeClient(master);
          return { node: `${master.host}:${master.port}`, reply: (await node.sendCommand(args as Arg[])) as Reply };
        }),
      ),
    close: async () => {
      await client.close().catch(() => client.destroy());
    },
  };
}

/** True for a reply error that a retry may cure: a failover or resharding in progress. */
export function isTransientReply(error: unknown): boolean {
  return error instanceof ErrorReply && /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|NOREPLICAS|BUSY)/.test(error.message);
}

export function isReplyError(error: unknown): error is Error {
  return error instanceof ErrorReply;
}
