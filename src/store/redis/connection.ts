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
  /**
   * Sends `args`, then `WAIT replicas timeout`, on the one connection to `key`'s master, in order:
   * WAIT then counts the replicas that have this very write. Resolves with the reply and that count.
   * MOVED or ASK (the slot moved since the client learned the map) is an error here: the caller
   * retries, and the map is refreshed first.
   */
  sendReplicated(key: string, args: readonly Arg[], replicas: number, timeoutMs: number): Promise<{ reply: Reply; acked: number }>;
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
    sendReplicated: async (_key, args, replicas, timeoutMs) => {
      const [reply, acked] = await Promise.all([client.sendCommand(args as Arg[]), client.sendCommand(['WAIT', String(replicas), String(timeoutMs)])]);
      return { reply: reply as unknown as Reply, acked: Number(acked) };
    },
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
    sendReplicated: async (key, args, replicas, timeoutMs) => {
      const shard = client.slots[keySlot(key)];
      if (shard === undefined) throw new Error(`no node serves the slot of ${key}`);
      let node;
      try {
        node = (await client.nodeClient(shard.master)).withTypeMapping(BUFFERS);
        const [reply, acked] = await Promise.all([node.sendCommand(args as Arg[]), node.sendCommand(['WAIT', String(replicas), String(timeoutMs)])]);
        return { reply: reply as unknown as Reply, acked: Number(acked) };
      } catch (error) {
        // A key command through the cluster client follows MOVED and refreshes its slot map.
        await client.sendCommand(key, true, ['EXISTS', key]).catch(() => undefined);
        throw error;
      }
    },
    eachMaster: async (args) =>
      Promise.all(
        client.masters.map(async (master) => {
          const node = (await client.nodeClient(master)).withTypeMapping(BUFFERS);
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
  return error instanceof ErrorReply && /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|NOREPLICAS|BUSY|MOVED|ASK)/.test(error.message);
}

/** CRC16-XMODEM, the hash of Redis Cluster key slots. */
function crc16(bytes: Buffer): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The cluster slot of a key: CRC16 of its hash tag (the first non-empty `{...}`), else of the whole key, mod 16384. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const tagged = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(Buffer.from(tagged, 'utf8')) % 16384;
}

export function isReplyError(error: unknown): error is Error {
  return error instanceof ErrorReply;
}
