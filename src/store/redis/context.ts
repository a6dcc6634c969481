import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import { isReplyError, isTransientReply, type RedisConnection, type Reply } from './connection.js';
import type { RedisDeadlines } from './deadline.js';
import { RedisKeys } from './keys.js';
import { withSourceLines } from './library.js';

/** What every part of one Redis store handle shares. */
export class RedisContext {
  readonly conn: RedisConnection;
  readonly keys: RedisKeys;
  readonly hash: XxHash;
  /** Replicas that must have a write before it is acknowledged (WAIT), 0: the master's AOF alone. */
  readonly waitReplicas: number;
  /** How long a call keeps retrying through failovers and lost connections before STORE_UNAVAILABLE, and how long one attempt may take. */
  readonly deadlines: RedisDeadlines;
  readonly warn: (message: string) => void;
  /** The store's clock (SeenStoreOptions.clock), or undefined: Redis's TIME as it is. */
  readonly #clock: (() => number) | undefined;

  constructor(
    conn: RedisConnection,
    prefix: string,
    hash: XxHash,
    waitReplicas: number,
    deadlines: RedisDeadlines,
    warn: (message: string) => void,
    clock?: () => number,
  ) {
    this.conn = conn;
    this.keys = new RedisKeys(prefix);
    this.hash = hash;
    this.waitReplicas = waitReplicas;
    this.deadlines = deadlines;
    this.warn = warn;
    this.#clock = clock;
  }

  /**
   * The last argument of every call of a function that reads Redis's clock (`timed` in
   * lua/common.lua): '' without a clock option, so that Redis's TIME stays the one clock of every
   * machine (leases, the node registry); with one (tests), its time in whole ms, which the call
   * takes as now: Redis's time for this handle is the test's, exactly, and moves only as it does.
   */
  clockArg(): string {
    if (this.#clock === undefined) return '';
    const nowMs = Math.round(this.#clock());
    if (!Number.isSafeInteger(nowMs) || nowMs < 0)
      throw new TypeError(`clock must return milliseconds since 1970, returned ${nowMs}`);
    return String(nowMs);
  }

  /** This process's time in ms: the store's clock when one was given, else the machine's. */
  now(): number {
    return this.#clock === undefined ? Date.now() : this.#clock();
  }

  get unavailableAfterMs(): number {
    return this.deadlines.unavailableAfterMs;
  }

  /**
   * One command on `key`'s master, retried through a failover, a MOVED/ASK the client could not
   * follow, or a lost connection, until unavailableAfterMs: then STORE_UNAVAILABLE. Only commands
   * whose repetition is harmless come here (every function of the library is, by its batch id or
   * by being idempotent). An error reply that no retry cures is IO_ERROR.
   */
  async call(key: string, args: readonly (string | Buffer)[], doing: string): Promise<Reply> {
    return this.#retried((withinMs) => this.conn.send(key, args, withinMs), doing);
  }

  /** One command on every master (FUNCTION LOAD, CONFIG GET), retried as `call` is; the masters as they are once all answered. */
  async eachMaster(
    args: readonly (string | Buffer)[],
    doing: string,
  ): Promise<{ readonly node: string; readonly reply: Reply }[]> {
    return this.#retried((withinMs) => this.conn.eachMaster(args, withinMs), doing);
  }

  async #retried<T>(send: (withinMs: number) => Promise<T>, doing: string): Promise<T> {
    const deadline = Date.now() + this.unavailableAfterMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await send(this.#attemptMs(deadline));
      } catch (error) {
        if (isReplyError(error) && !isTransientReply(error)) throw failedReply(error, doing);
        if (Date.now() >= deadline) {
          throw new SeenStoreError(
            'STORE_UNAVAILABLE',
            `${doing}: Redis did not answer for ${Math.round(this.unavailableAfterMs / 1000)} s (${(error as Error).message})`,
            { cause: error },
          );
        }
        await pause(attempt, deadline);
      }
    }
  }

  /** FCALL of a library function on keys of one slot. */
  async fcall(
    name: string,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
    doing: string,
  ): Promise<Reply> {
    return this.call(keys[0]!, ['FCALL', name, String(keys.length), ...keys, ...args], doing);
  }

  /**
   * A write function: FCALL, and with waitReplicas > 0, WAIT on the same connection right behind
   * it; fewer replicas than asked, a lost connection or a failover repeat both (every write
   * function may run again: a batch by its id, the others being idempotent or compare-and-set)
   * until unavailableAfterMs, then STORE_UNAVAILABLE. Without waitReplicas: `fcall`.
   */
  async fcallDurable(
    name: string,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
    doing: string,
  ): Promise<Reply> {
    if (this.waitReplicas === 0) return this.fcall(name, keys, args, doing);
    const command = ['FCALL', name, String(keys.length), ...keys, ...args];
    const deadline = Date.now() + this.unavailableAfterMs;
    let why = '';
    for (let attempt = 0; ; attempt++) {
      try {
        const waitMs = Math.max(1, Math.min(this.deadlines.waitTimeoutMs, deadline - Date.now()));
        const { reply, acked } = await this.conn.sendReplicated(
          keys[0]!,
          command,
          this.waitReplicas,
          waitMs,
          this.#attemptMs(deadline),
        );
        if (acked >= this.waitReplicas) return reply;
        why = `only ${acked} of the ${this.waitReplicas} replicas asked for (waitReplicas) confirmed the write`;
      } catch (error) {
        if (isReplyError(error) && !isTransientReply(error)) throw failedReply(error, doing);
        why = (error as Error).message;
      }
      if (Date.now() >= deadline) {
        throw new SeenStoreError(
          'STORE_UNAVAILABLE',
          `${doing}: not confirmed within ${Math.round(this.unavailableAfterMs / 1000)} s (${why}); not acknowledged, but it may be on the master: its URLs may read as seen`,
        );
      }
      await pause(attempt, deadline);
    }
  }

  /**
   * Whether the writes made so far through this connection to `key`'s master are on one of its
   * replicas: true where it has none (nothing to wait for) or waitReplicas already waited; false
   * when no replica confirmed within a `WAIT` timeout, or the node is no master. For a step that
   * deletes what it copied to that master (the frontier's move), even without waitReplicas: the
   * copy must not be less safe than the original was.
   */
  async onAReplica(key: string, doing: string): Promise<boolean> {
    if (this.waitReplicas > 0) return true;
    const role = list(await this.call(key, ['ROLE'], doing));
    if (text(role[0]) !== 'master') return false;
    if (list(role[2]).length === 0) return true;
    return Number(await this.call(key, ['WAIT', '1', String(this.deadlines.waitTimeoutMs)], doing)) >= 1;
  }

  /** One attempt's time: an attempt, never past the call's deadline. */
  #attemptMs(deadlineAtMs: number): number {
    return Math.max(1, Math.min(this.deadlines.attemptMs, deadlineAtMs - Date.now()));
  }

  /**
   * Waits until `waitReplicas` replicas of `key`'s master have every write made through this
   * connection to it (WAIT), within the bounded time; a write is acknowledged only then.
   */
  async replicated(key: string, doing: string): Promise<void> {
    if (this.waitReplicas === 0) return;
    const deadline = Date.now() + this.unavailableAfterMs;
    for (;;) {
      const waitMs = Math.max(1, Math.min(this.deadlines.waitTimeoutMs, deadline - Date.now()));
      const acked = Number(await this.call(key, ['WAIT', String(this.waitReplicas), String(waitMs)], doing));
      if (acked >= this.waitReplicas) return;
      if (Date.now() >= deadline) {
        throw new SeenStoreError(
          'STORE_UNAVAILABLE',
          `${doing}: only ${acked} of the ${this.waitReplicas} replicas asked for (waitReplicas) confirmed the write within ${Math.round(this.unavailableAfterMs / 1000)} s; it is on the master, not acknowledged`,
        );
      }
    }
  }
}

/** The pause before a retry: growing, never past the deadline. */
async function pause(attempt: number, deadlineAtMs: number): Promise<void> {
  await sleep(Math.max(0, Math.min(25 * 2 ** attempt, 500, deadlineAtMs - Date.now())));
}

/**
 * An error reply no retry cures: out of memory (maxmemory reached under noeviction) is STORE_FULL,
 * as a full LMDB map is; anything else IO_ERROR.
 */
function failedReply(error: Error, doing: string): SeenStoreError {
  if (/^OOM /.test(error.message))
    return new SeenStoreError('STORE_FULL', `${doing}: Redis is out of memory (maxmemory): ${error.message}`, {
      cause: error,
    });
  return new SeenStoreError('IO_ERROR', `${doing}: Redis replied ${withSourceLines(error.message)}`, { cause: error });
}

/** A fresh id: an epoch's key tag, a batch's id. */
export function freshId(bytes = 8): string {
  return randomBytes(bytes).toString('hex');
}

export function text(reply: Reply | undefined): string {
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  if (typeof reply === 'number') return String(reply);
  throw new SeenStoreError('IO_ERROR', `unexpected reply from Redis: ${JSON.stringify(reply)}`);
}

export function list(reply: Reply | undefined): Reply[] {
  if (Array.isArray(reply)) return reply;
  throw new SeenStoreError('IO_ERROR', `unexpected reply from Redis: ${JSON.stringify(reply)}`);
}

/** Field-value pairs of a map reply (HGETALL, CONFIG GET), whether it arrives flat, as a Map or as an object. */
export function pairs(reply: unknown): Map<string, string> {
  const out = new Map<string, string>();
  const str = (value: unknown): string => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value));
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) out.set(str(reply[i]), str(reply[i + 1]));
  else if (reply instanceof Map) for (const [key, value] of reply) out.set(str(key), str(value));
  else if (reply !== null && typeof reply === 'object')
    for (const [key, value] of Object.entries(reply)) out.set(key, str(value));
  return out;
}

/** Every promise settled, then the first failure thrown (no call is left running behind an error), else the values. */
export async function settleAll<T>(calls: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(calls);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
}
