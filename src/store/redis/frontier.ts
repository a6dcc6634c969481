import { DEFAULT_FRONTIER_SETTINGS, type FrontierSettings, type QueueStats, type TakeRequest, type UrlStatus } from '../backend.js';
import { SeenStoreError } from '../../errors.js';
import type { Frontier, FrontierStats, LeasedUrl, QueueItems } from '../backend.js';
import { faultPoint } from '../faults.js';
import type { Reply } from './connection.js';
import { freshId, list, text, type RedisContext } from './context.js';
import { finishEntries, frontierStats, reclaimLeases, releaseEntries, takeEntries, type AnswerArgs } from './functions.js';
import type { QueueKeys } from './keys.js';

/** Seconds a frontier call's answer stays for a retry of the same call (deleted by the handle's next call on that stream). */
export const FRONTIER_ANSWER_TTL_S = 300;
/** The version of the stream entries this seenstore writes and reads (field `v`; ENTRY_VERSION in lua/queue.lua). */
const QUEUE_ENTRY_VERSION = '1';
/** Most partition streams a scope's frontier may have (`{PREFIX/SCOPE}:queues`). */
export const MAX_QUEUES = 65_536;
/** Most ids one done or release call sends to one stream: bounds a call's arguments and its time in Redis. */
const IDS_PER_CALL = 10_000;
/** A frontier id: partition, then the stream id (two unsigned 64-bit numbers). */
const ID_PATTERN = /^(0|[1-9][0-9]{0,4})-([0-9]{1,20})-([0-9]{1,20})$/;
const U64_MAX = 2n ** 64n - 1n;

/**
 * Queue items `indices` of a batch as ss_add reads them (queue_items in lua/queue.lua): per item, a
 * u32 little-endian byte length and the URL (UTF-8), a u32 length and the data as JSON (length 0:
 * none). An add sends the items of exactly the URLs it sends, in the same order.
 */
export function encodeQueueItems(items: QueueItems, indices: readonly number[]): Buffer {
  const json = indices.map((i) => (items.data?.[i] === undefined ? '' : (JSON.stringify(items.data[i]) ?? '')));
  let bytes = 0;
  for (const [j, i] of indices.entries()) bytes += 8 + Buffer.byteLength(items.urls[i]!, 'utf8') + Buffer.byteLength(json[j]!, 'utf8');
  const out = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const [j, i] of indices.entries()) {
    at = putString(out, at, items.urls[i]!);
    at = putString(out, at, json[j]!);
  }
  return out;
}

function putString(out: Buffer, at: number, value: string): number {
  const length = out.write(value, at + 4, 'utf8');
  out.writeUInt32LE(length, at);
  return at + 4 + length;
}

/**
 * The Redis backend's frontier of one scope (docs/frontier.md "On Redis"): one stream per partition,
 * consumer group `ss`, leases in a sorted set beside each stream, every change one call of the
 * function library on the stream's slot (ss_q_* in lua/frontier.lua), remembered under a fresh call id so
 * that a retry after a lost reply gets the first answer (a take never leases new URLs twice).
 * Entries are taken oldest first within a stream; across streams a round-robin cursor picks the
 * stream a take starts from.
 */
export class RedisFrontier implements Frontier {
  readonly #ctx: RedisContext;
  readonly #scope: string;
  /** The consumer of takes that name no owner: one per store handle. */
  readonly #consumer: string;
  #cursor = 0;
  /** Per partition, the answer key of this handle's last call there (deleted by the next). */
  readonly #previous = new Map<number, string>();

  constructor(ctx: RedisContext, scope: string, consumer: string) {
    this.#ctx = ctx;
    this.#scope = scope;
    this.#consumer = consumer;
  }

  /**
   * Reads every stream's waiting count first (no writes, all streams at once), then takes from the
   * streams that have some, one at a time from the handle's cursor, until `count`: a take on an
   * empty or nearly empty frontier costs one round of reads, not a durable write per stream.
   */
  async take({ count, leaseMs, owner }: TakeRequest): Promise<LeasedUrl[]> {
    const streams = await this.#streams();
    const waiting = streams === 1 ? [1] : (await this.#statsOf(streams)).map((stats) => stats[0]);
    const start = this.#cursor % streams;
    this.#cursor = start + 1;
    const out: LeasedUrl[] = [];
    for (let visited = 0; visited < streams && out.length < count; visited++) {
      const p = (start + visited) % streams;
      if (waiting[p]! <= 0) continue;
      const sentAtMs = Date.now();
      const reply = await this.#write(p, 'taking from', (keys, answer, doing) => takeEntries(this.#ctx, keys, answer, count - out.length, leaseMs, owner ?? this.#consumer, doing));
      faultPoint('frontier:take-after-commit');
      const entries = list(reply);
      if (leaseOutlived(sentAtMs, leaseMs, entries.length, this.#ctx)) continue;
      for (const entry of entries) out.push(this.#leased(p, list(entry)));
    }
    return out;
  }

  async done(ids: readonly string[]): Promise<number> {
    return this.#eachPart(ids, (p, part) => this.#write(p, 'finishing URLs of', (keys, answer, doing) => finishEntries(this.#ctx, keys, answer, part.map(({ id }) => id), doing)));
  }

  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    if (data !== undefined && data.length !== ids.length) throw new SeenStoreError('USAGE', `release: ${data.length} payloads for ${ids.length} ids`);
    return this.#eachPart(ids, (p, part) => {
      const payloads = part.map(({ index }) => (data?.[index] === undefined ? '' : (JSON.stringify(data[index]) ?? '')));
      return this.#write(p, 'releasing URLs of', (keys, answer, doing) => releaseEntries(this.#ctx, keys, answer, part.map(({ id }) => id), payloads, doing));
    });
  }

  /**
   * `ids` (every one checked first) by stream, IDS_PER_CALL at a time: `call` for each part of a
   * stream the scope has (ids of other streams name nothing); the sum of what the calls answered.
   */
  async #eachPart(ids: readonly string[], call: (p: number, part: { id: string; index: number }[]) => Promise<Reply>): Promise<number> {
    const byStream = this.#grouped(ids);
    const streams = await this.#streamsFor(byStream);
    let total = 0;
    for (const [p, entries] of byStream) {
      if (p >= streams) continue;
      for (let from = 0; from < entries.length; from += IDS_PER_CALL) total += Number(await call(p, entries.slice(from, from + IDS_PER_CALL)));
    }
    return total;
  }

  async reclaim(owner: string): Promise<number> {
    const streams = await this.#streams();
    const counts = await Promise.all(Array.from({ length: streams }, (_, p) => this.#write(p, 'reclaiming leases of', (keys, answer, doing) => reclaimLeases(this.#ctx, keys, answer, owner, doing))));
    return counts.reduce((sum: number, n) => sum + Number(n), 0);
  }

  // Issue 28 seam in progress: the v2 frontier operations below are not built on this backend yet.
  async schedule(): Promise<number> { throw unsupportedFrontier('schedule'); }
  async urlStatus(): Promise<UrlStatus | undefined> { throw unsupportedFrontier('urlStatus'); }
  async settings(): Promise<FrontierSettings> { return DEFAULT_FRONTIER_SETTINGS; }
  async configure(): Promise<FrontierSettings> { throw unsupportedFrontier('configure'); }
  async setQueue(): Promise<void> { throw unsupportedFrontier('setQueue'); }
  async queues(): Promise<QueueStats[]> { throw unsupportedFrontier('queues'); }
  async queue(): Promise<QueueStats | undefined> { throw unsupportedFrontier('queue'); }
  async deleteQueue(): Promise<number> { throw unsupportedFrontier('deleteQueue'); }
  async clear(): Promise<number> { throw unsupportedFrontier('clear'); }
  async owners(): Promise<string[]> { return []; }

  async stats(): Promise<FrontierStats> {
    const all = await this.#statsOf(await this.#streams());
    return {
      pending: all.reduce((sum, stats) => sum + stats[0], 0),
      leased: all.reduce((sum, stats) => sum + stats[1], 0),
      done: all.reduce((sum, stats) => sum + stats[2], 0),
      queues: 0,
    };
  }

  /**
   * Every waiting and leased URL, a batch per XRANGE page of each partition's stream: finished
   * entries are deleted from their stream (ss_q_done), so the streams hold exactly these. Reads
   * only; an entry added or finished meanwhile may or may not be seen.
   */
  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    const streams = await this.#streams();
    for (let p = 0; p < streams; p++) {
      const key = this.#queueKeys(p).stream;
      for (let start = '-'; ; ) {
        const page = list(await this.#ctx.call(key, ['XRANGE', key, start, '+', 'COUNT', String(LIST_PAGE_ENTRIES)], `listing the frontier of ${this.#scope}`));
        if (page.length === 0) break;
        onBatch(page.map((entry) => entryUrl(list(list(entry)[1]))));
        if (page.length < LIST_PAGE_ENTRIES) break;
        start = `(${text(list(page.at(-1)!)[0])}`;
      }
    }
  }

  /** [waiting, leased, done] of each of the first `streams` streams (read-only calls, all at once). */
  async #statsOf(streams: number): Promise<(readonly [number, number, number])[]> {
    return Promise.all(
      Array.from({ length: streams }, async (_, p) => {
        const reply = list(await frontierStats(this.#ctx, this.#queueKeys(p), `reading the frontier of ${this.#scope}`)).map(Number);
        return [reply[0]!, reply[1]!, reply[2]!] as const;
      }),
    );
  }

  /** How many partition streams the scope's frontier has (`{PREFIX/SCOPE}:queues`, absent: 1). */
  async #streams(): Promise<number> {
    const key = this.#ctx.keys.queues(this.#scope);
    const value = await this.#ctx.call(key, ['GET', key], `reading the frontier of ${this.#scope}`);
    if (value === null) return 1;
    const n = Number(text(value));
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_QUEUES) throw new SeenStoreError('STORE_CORRUPT', `${key}: not a stream count from 1 to ${MAX_QUEUES} (${text(value)})`);
    return n;
  }

  /** The stream count, read only when some id names a partition past 0 (every scope has stream 0). */
  async #streamsFor(byStream: ReadonlyMap<number, unknown>): Promise<number> {
    return Math.max(...byStream.keys(), 0) > 0 ? this.#streams() : 1;
  }

  #queueKeys(p: number): QueueKeys {
    return this.#ctx.keys.queueKeys(this.#scope, p);
  }

  /** One frontier write on partition p's stream under a fresh call id, durable (and retried) as every write. */
  async #write(p: number, doing: string, call: (keys: QueueKeys, answer: AnswerArgs, doing: string) => Promise<Reply>): Promise<Reply> {
    const keys = this.#queueKeys(p);
    const own = keys.answer(freshId(12));
    const previous = this.#previous.get(p);
    const answer = { answer: own, previousAnswer: previous ?? own, dropPrevious: previous !== undefined, answerTtlS: FRONTIER_ANSWER_TTL_S };
    const reply = await call(keys, answer, `${doing} the frontier of ${this.#scope}`);
    this.#previous.set(p, own);
    return reply;
  }

  /** Ids by partition, each with its index in the call; every id checked before anything is written. */
  #grouped(ids: readonly string[]): Map<number, { id: string; index: number }[]> {
    const out = new Map<number, { id: string; index: number }[]>();
    ids.forEach((id, index) => {
      const { partition, streamId } = parseFrontierId(id);
      const entries = out.get(partition) ?? [];
      entries.push({ id: streamId, index });
      out.set(partition, entries);
    });
    return out;
  }

  /**
   * A take's entry (`leased` in lua/frontier.lua: id, attempts, lease end, URL, epoch, data or '', entry
   * version), checked right after reading: an entry of a newer version is FORMAT_UNSUPPORTED, a
   * malformed one STORE_CORRUPT (the take's leases then run out: nothing is lost).
   */
  #leased(p: number, entry: Reply[]): LeasedUrl {
    const id = `${p}-${text(entry[0])}`;
    const version = text(entry[6]);
    const url = text(entry[3]);
    const epoch = Number(text(entry[4]));
    const where = `frontier of ${this.#scope}, entry ${id}`;
    if (version !== QUEUE_ENTRY_VERSION) {
      const newer = /^[0-9]+$/.test(version) && Number(version) > Number(QUEUE_ENTRY_VERSION);
      throw new SeenStoreError(newer ? 'FORMAT_UNSUPPORTED' : 'STORE_CORRUPT', `${where}: ${newer ? `of entry version ${version}, newer than this seenstore's` : 'not an entry seenstore wrote'}`);
    }
    if (url === '' || !Number.isSafeInteger(epoch) || epoch < 1) throw new SeenStoreError('STORE_CORRUPT', `${where}: no URL or no epoch`);
    const leasedUrl = { id, url, queue: '', epoch, attempts: Number(entry[1]), leaseUntilMs: Number(entry[2]) };
    const data = text(entry[5]);
    if (data === '') return leasedUrl;
    try {
      return { ...leasedUrl, data: JSON.parse(data) as unknown };
    } catch (error) {
      throw new SeenStoreError('STORE_CORRUPT', `${where} (${url}): its data is not JSON`, { cause: error });
    }
  }
}

/**
 * Whether a take's answer came too late to hand out: its leases began after `sentAtMs` (Redis ran
 * the call after it was sent) and last `leaseMs`, so once that much time has passed since the
 * send, they may have run out and another taker may hold the same URLs (a take held behind a
 * WAIT for a stalled replica). Such entries are not returned: their leases running out gives them
 * back. Redis's clock is never compared with this one.
 */
function leaseOutlived(sentAtMs: number, leaseMs: number, entries: number, ctx: RedisContext): boolean {
  const elapsedMs = Date.now() - sentAtMs;
  if (elapsedMs < leaseMs || entries === 0) return false;
  ctx.warn(`a frontier take was answered after ${elapsedMs} ms, past its ${leaseMs} ms lease: its ${entries} URLs are not handed out, and come back as their leases have run out`);
  return true;
}

/** Entries per XRANGE page of forEachUrl. */
const LIST_PAGE_ENTRIES = 10_000;

/** The `u` field of a stream entry's field list (lua/queue.lua writes v, u, e and maybe d, a). */
function entryUrl(fields: Reply[]): string {
  for (let f = 0; f + 1 < fields.length; f += 2) if (text(fields[f]!) === 'u') return text(fields[f + 1]!);
  throw new SeenStoreError('STORE_CORRUPT', 'a frontier stream entry without a URL');
}

/** A frontier id as take gave it (`P-MS-SEQ`: partition, stream id); USAGE for anything else. */
export function parseFrontierId(id: string): { partition: number; streamId: string } {
  const match = typeof id === 'string' ? ID_PATTERN.exec(id) : null;
  if (match === null || BigInt(match[2]!) > U64_MAX || BigInt(match[3]!) > U64_MAX) {
    throw new SeenStoreError('USAGE', `not a frontier id: ${JSON.stringify(id)} (ids are what take printed)`);
  }
  return { partition: Number(match[1]), streamId: `${BigInt(match[2]!)}-${BigInt(match[3]!)}` };
}

function unsupportedFrontier(what: string): SeenStoreError {
  return new SeenStoreError('UNSUPPORTED', `frontier ${what}: not built on this backend yet (issue 28 in progress)`);
}
