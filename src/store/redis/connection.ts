import { createClient, createCluster, ErrorReply, RESP_TYPES } from 'redis';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStoreError } from '../../errors.js';
import { within, type RedisDeadlines } from './deadline.js';
import type { RedisLocation } from './location.js';

type Arg = string | Buffer;

/** A reply as this backend reads it: bulk strings as Buffers. */
export type Reply = Buffer | number | null | Reply[];

/** One connection to a Redis deployment, cluster or single server, routing each command by its key. */
export interface RedisConnection {
  readonly cluster: boolean;
  /** Sends one command to the master of `key`'s slot (a read-only one may go there too); an AttemptTimeout after `withinMs`. */
  send(key: string, args: readonly Arg[], withinMs: number): Promise<Reply>;
  /**
   * Sends `args`, then `WAIT replicas timeout`, on the one connection to `key`'s master, in order:
   * WAIT then counts the replicas that have this very write. Resolves with the reply and that count.
   * MOVED or ASK (the slot moved since the client learned the map) is an error here: the caller
   * retries, and the map is refreshed first.
   */
  sendReplicated(
    key: string,
    args: readonly Arg[],
    replicas: number,
    timeoutMs: number,
    withinMs: number,
  ): Promise<{ reply: Reply; acked: number }>;
  /** Sends one command to every master: FUNCTION LOAD, CONFIG GET, INFO. */
  eachMaster(args: readonly Arg[], withinMs: number): Promise<{ readonly node: string; readonly reply: Reply }[]>;
  close(): Promise<void>;
}

const BUFFERS = { [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.SIMPLE_STRING]: Buffer } as const;

/**
 * Connects to the location's nodes: a cluster when the first reachable node says
 * cluster_enabled:1 (discovered from it: slots, masters, replicas; MOVED and ASK followed by the
 * client), else that single server. Every node is tried in turn, again and again, until one
 * answers or `deadlines.unavailableAfterMs` has passed (a start during a failover finds the
 * cluster once it has a master for every slot): then STORE_UNAVAILABLE. When the first round
 * finds no node, `warn` says at once what is retried and until when; when no node's name resolves
 * (DNS), it fails at once.
 */
export async function connectRedis(
  location: RedisLocation,
  deadlines: RedisDeadlines,
  warn: (message: string) => void = () => {},
): Promise<RedisConnection> {
  const socket = {
    connectTimeout: deadlines.attemptMs,
    socketTimeout: deadlines.attemptMs,
    tls: location.tls as false,
    reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000),
  };
  const auth = authOf(location);
  const options = { ...auth, pingInterval: Math.floor(deadlines.attemptMs / 2) };
  const deadlineAtMs = Date.now() + deadlines.unavailableAfterMs;
  const nodes = location.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  let probeError: unknown;
  for (let round = 0; Date.now() < deadlineAtMs; round++) {
    let unresolved = 0;
    for (const node of location.nodes) {
      const kind = await probe(node, socket, auth, Math.min(deadlines.attemptMs, deadlineAtMs - Date.now())).catch(
        (error: unknown) => {
          if (refusedCredentials(error))
            throw new SeenStoreError(
              'STORE_UNAVAILABLE',
              `Redis node ${node.host}:${node.port} refused the credentials: ${(error as Error).message}`,
              { cause: error },
            );
          if ((error as NodeJS.ErrnoException).code === 'ENOTFOUND') unresolved++;
          probeError = error;
          return undefined;
        },
      );
      if (kind === undefined) continue;
      const remainingMs = Math.max(1, deadlineAtMs - Date.now());
      return kind === 'single'
        ? single(node, socket, options, deadlines, remainingMs)
        : cluster(location, socket, options, deadlines, remainingMs);
    }
    // A name that does not resolve is a wrong address, not a failover: waiting would not cure it.
    if (unresolved === location.nodes.length) {
      throw new SeenStoreError(
        'STORE_UNAVAILABLE',
        `no Redis node of ${nodes} has an address: ${(probeError as Error).message} (a mistyped host in --store?)`,
        { cause: probeError },
      );
    }
    if (round === 0)
      warn(
        `warning: no Redis node of ${nodes} answers (${(probeError as Error)?.message}); retrying until ${new Date(deadlineAtMs).toISOString()}, ${Math.round((deadlineAtMs - Date.now()) / 1000)} s from now (timeout-ms= in the location sets the wait)`,
      );
    await sleep(Math.max(0, Math.min(250 * 2 ** round, 1_000, deadlineAtMs - Date.now())));
  }
  throw new SeenStoreError(
    'STORE_UNAVAILABLE',
    `no Redis node of ${nodes} answered within ${Math.round(deadlines.unavailableAfterMs / 1000)} s: ${(probeError as Error)?.message}`,
    {
      cause: probeError,
    },
  );
}

/** An answer no retry cures: a wrong password or user, or a password the server does not take. */
function refusedCredentials(error: unknown): boolean {
  return error instanceof ErrorReply && /^(WRONGPASS|NOAUTH|NOPERM|ERR AUTH|ERR invalid password)/.test(error.message);
}

function authOf(location: RedisLocation): object {
  return {
    ...(location.username === undefined ? {} : { username: location.username }),
    ...(location.password === undefined ? {} : { password: location.password }),
  };
}

/** Whether one node answers, within one attempt, and whether it is part of a cluster. */
async function probe(node: Node, socket: object, auth: object, attemptMs: number): Promise<'single' | 'cluster'> {
  const client = createClient({
    socket: { ...socket, host: node.host, port: node.port, reconnectStrategy: false },
    ...auth,
  });
  client.on('error', () => {});
  try {
    const info = await within(
      client.connect().then(async () => String(await client.sendCommand(['INFO', 'cluster']))),
      attemptMs,
      `${node.host}:${node.port}`,
    );
    return /cluster_enabled:1/.test(info) ? 'cluster' : 'single';
  } finally {
    client.destroy();
  }
}

type Node = { readonly host: string; readonly port: number };

async function single(
  node: Node,
  socket: object,
  options: object,
  deadlines: RedisDeadlines,
  connectMs: number,
): Promise<RedisConnection> {
  const client = createClient({
    socket: { ...socket, host: node.host, port: node.port },
    ...options,
    disableOfflineQueue: true,
  }).withTypeMapping(BUFFERS);
  client.on('error', () => {});
  await within(client.connect(), connectMs, `connecting to ${node.host}:${node.port}`, () => client.destroy());
  const where = `${node.host}:${node.port}`;
  return {
    cluster: false,
    send: (_key, args, withinMs) => within(client.sendCommand(args as Arg[]) as Promise<Reply>, withinMs, where),
    sendReplicated: async (_key, args, replicas, timeoutMs, withinMs) => {
      const [reply, acked] = await within(
        Promise.all([
          client.sendCommand(args as Arg[]),
          client.sendCommand(['WAIT', String(replicas), String(timeoutMs)]),
        ]),
        withinMs,
        where,
      );
      return { reply: reply as unknown as Reply, acked: Number(acked) };
    },
    eachMaster: async (args, withinMs) => [
      { node: where, reply: (await within(client.sendCommand(args as Arg[]), withinMs, where)) as Reply },
    ],
    close: () => closeWithin(client, deadlines),
  };
}

async function cluster(
  location: RedisLocation,
  socket: object,
  options: object,
  deadlines: RedisDeadlines,
  connectMs: number,
): Promise<RedisConnection> {
  const client = createCluster({
    rootNodes: location.nodes.map((node) => ({ socket: { ...socket, host: node.host, port: node.port } })),
    defaults: { socket, ...options, disableOfflineQueue: true },
    // Loopback or in-datacentre addresses as the nodes announce them.
    useReplicas: false,
    // Connecting to every master up front never ends while one refuses connections (a failover).
    minimizeConnections: true,
    // A node that reconnects twice (a paused or dead master) makes the client read the slot map again.
    topologyRefreshOnReconnectionAttemptStrategy: 1,
  }).withTypeMapping(BUFFERS);
  client.on('error', () => {});
  await within(client.connect(), connectMs, 'discovering the Redis cluster', () => client.destroy());
  const attempt = <T>(work: Promise<T>, withinMs: number, where: string): Promise<T> =>
    within(work, withinMs, where).catch((error: unknown) => {
      // A master that stopped answering or refuses connections may have been replaced.
      if (!isReplyError(error)) refreshSlots(client, deadlines);
      throw error;
    });
  return {
    cluster: true,
    send: (key, args, withinMs) =>
      attempt(client.sendCommand(key, false, args as Arg[]) as Promise<Reply>, withinMs, `the master of ${key}`),
    sendReplicated: async (key, args, replicas, timeoutMs, withinMs) => {
      const shard = client.slots[keySlot(key)];
      if (shard === undefined) throw new Error(`no node serves the slot of ${key}`);
      try {
        return await attempt(
          (async () => {
            const node = (await client.nodeClient(shard.master)).withTypeMapping(BUFFERS);
            const [reply, acked] = await Promise.all([
              node.sendCommand(args as Arg[]),
              node.sendCommand(['WAIT', String(replicas), String(timeoutMs)]),
            ]);
            return { reply: reply as unknown as Reply, acked: Number(acked) };
          })(),
          withinMs,
          `${shard.master.host}:${shard.master.port}`,
        );
      } catch (error) {
        // A key command through the cluster client follows MOVED and refreshes its slot map.
        if (isReplyError(error))
          await attempt(client.sendCommand(key, true, ['EXISTS', key]), withinMs, `the master of ${key}`).catch(
            () => undefined,
          );
        throw error;
      }
    },
    eachMaster: async (args, withinMs) =>
      Promise.all(
        client.masters.map(async (master) => {
          const where = `${master.host}:${master.port}`;
          const reply = await attempt(
            (async () => (await client.nodeClient(master)).withTypeMapping(BUFFERS).sendCommand(args as Arg[]))(),
            withinMs,
            where,
          );
          return { node: where, reply: reply as unknown as Reply };
        }),
      ),
    close: () => closeWithin(client, deadlines),
  };
}

/**
 * Reads the cluster's slot map again, in the background and bounded. node-redis does so itself
 * only on MOVED/ASK (the same internal call) or when a node that once answered reconnects: never
 * for a master that has refused every connection since this process started.
 */
function refreshSlots(client: unknown, deadlines: RedisDeadlines): void {
  const slots = (client as { _slots?: { rediscover?: () => Promise<void> } })._slots;
  if (typeof slots?.rediscover !== 'function') return;
  within(slots.rediscover(), deadlines.attemptMs, 'reading the cluster slot map').catch(() => undefined);
}

/** Closes politely within one attempt (QUIT waits for answers a paused node never sends), else drops the sockets. */
async function closeWithin(
  client: { close(): Promise<unknown>; destroy(): unknown },
  deadlines: RedisDeadlines,
): Promise<void> {
  await within(client.close(), deadlines.attemptMs, 'closing').catch(() => client.destroy());
}

/** True for a reply error that a retry may cure: a failover or resharding in progress. */
export function isTransientReply(error: unknown): boolean {
  return (
    error instanceof ErrorReply &&
    /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|NOREPLICAS|BUSY|MOVED|ASK|UNBLOCKED)/.test(error.message)
  );
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
