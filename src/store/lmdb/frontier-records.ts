import { SeenStoreError } from '../../errors.js';
import { DEFAULT_FRONTIER_SETTINGS, type FrontierSettings } from '../backend.js';
import { QUEUE_KEY_MODES } from '../../url/queue-key.js';
import type { StoreEnv } from './env.js';

/** A scope's frontier state record (docs/format.md "Frontier"), format 7. */
export interface FrontierState {
  readonly v: 3;
  /** seq of the next URL queued. */
  nextSeq: number;
  /** Number of the next queue created. */
  nextQueue: number;
  /** URLs finished since the frontier began, failures not included. */
  done: number;
  /** URLs finished as failures since the frontier began. */
  failed: number;
  /** Entries in the frontier (waiting, scheduled or leased). */
  entries: number;
  /** Of them, leased (leases that ran out count until a write gives them back). */
  leased: number;
  /** Queues that hold URLs. */
  queues: number;
  settings: FrontierSettings;
  /** True once an enqueue (or a caller that keeps the key) read the queue key: configure no longer changes it. Absent: false. */
  queueKeyPinned?: true;
}

/** One queued URL, as the frontier's operations see it. `leaseUntilMs` 0: not leased. */
export interface EntryRecord {
  readonly url: string;
  queue: string;
  readonly epoch: number;
  dueMs: number;
  leaseUntilMs: number;
  attempts: number;
  /** Who holds the lease (take's owner), when one was given. */
  owner?: string;
  data?: unknown;
  /** When the URL was first stored (ms since 1970): URLFrontier's creation_date, PurgeURLs' age. */
  readonly createdMs: number;
}

/**
 * A queue's counts and politeness. `readyAtMs`/`indexedTakeMs` name its key in the ready index
 * (absent: not in it), so that a change can remove the old key; `firstDueMs` spares an enqueue a
 * read of the waiting index. `no`: the number its entries' keys carry.
 */
export interface QueueRecord {
  readonly v: 2;
  readonly no: number;
  /** Entries not leased (due now or later). */
  waiting: number;
  /** Entries leased (leases that ran out count until a write gives them back). */
  leased: number;
  completed: number;
  delayMs?: number;
  blockedUntilMs: number;
  crawlLimit?: number;
  /** When take last handed the queue out. */
  lastTakeMs?: number;
  /** The due time of its first entry not leased (set exactly when `waiting` > 0). */
  firstDueMs?: number;
  /** No entry not leased is due later (set when `waiting` > 0; an upper bound: an entry taken does not lower it). */
  lastDueMs?: number;
  readyAtMs?: number;
  indexedTakeMs?: number;
}

export interface OwnerRecord {
  readonly v: 1;
  readonly lastTakeMs: number;
}

export function newState(): FrontierState {
  return {
    v: 3,
    nextSeq: 1,
    nextQueue: 1,
    done: 0,
    failed: 0,
    entries: 0,
    leased: 0,
    queues: 0,
    settings: DEFAULT_FRONTIER_SETTINGS,
  };
}

export function newQueue(no: number): QueueRecord {
  return { v: 2, no, waiting: 0, leased: 0, completed: 0, blockedUntilMs: 0 };
}

/** What decodes a record's msgpack: the store's environment, or salvage's decoder of records read from pages. */
export type RecordDecoder = Pick<StoreEnv, 'decodeMeta'>;

export const isCount = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;
export const isTime = (n: unknown): boolean => typeof n === 'number' && Number.isFinite(n);
export const isOptional = (n: unknown, check: (n: unknown) => boolean): boolean => n === undefined || check(n);

/** A record decoded and checked: its version and fields (`valid`); FORMAT_UNSUPPORTED for a newer version. */
export function decoded(
  env: RecordDecoder,
  bytes: Uint8Array,
  where: string,
  version: number,
  valid: (record: Record<string, unknown>) => boolean,
): unknown {
  const record = env.decodeMeta(bytes, where) as Record<string, unknown> | null;
  if (record === null || typeof record !== 'object' || record.v !== version || !valid(record)) {
    const newer = typeof record?.v === 'number' && record.v > version;
    throw new SeenStoreError(
      newer ? 'FORMAT_UNSUPPORTED' : 'STORE_CORRUPT',
      `${where}: malformed or of an unknown version`,
    );
  }
  return record;
}

export function validSettings(settings: unknown): boolean {
  const s = settings as Partial<FrontierSettings> | undefined;
  return (
    typeof s === 'object' &&
    s !== null &&
    QUEUE_KEY_MODES.includes(s.queueKey!) &&
    isCount(s.delayMs) &&
    isCount(s.maxInFlightPerQueue)
  );
}

export function readState(env: RecordDecoder, bytes: Uint8Array | undefined, scope: string): FrontierState {
  if (bytes === undefined) return newState();
  return decoded(
    env,
    bytes,
    `frontier state of ${scope}`,
    3,
    (r) =>
      Number.isSafeInteger(r.nextSeq) &&
      (r.nextSeq as number) >= 1 &&
      Number.isSafeInteger(r.nextQueue) &&
      (r.nextQueue as number) >= 1 &&
      isCount(r.done) &&
      isCount(r.failed) &&
      isCount(r.entries) &&
      isCount(r.leased) &&
      isCount(r.queues) &&
      validSettings(r.settings) &&
      isOptional(r.queueKeyPinned, (p) => p === true),
  ) as FrontierState;
}

export function readQueue(env: RecordDecoder, bytes: Uint8Array, scope: string, key: string): QueueRecord {
  return decoded(
    env,
    bytes,
    `frontier queue ${scope}/${JSON.stringify(key)}`,
    2,
    (r) =>
      isCount(r.no) &&
      (r.no as number) >= 1 &&
      isCount(r.waiting) &&
      isCount(r.leased) &&
      isCount(r.completed) &&
      isOptional(r.delayMs, isCount) &&
      isTime(r.blockedUntilMs) &&
      isOptional(r.crawlLimit, isCount) &&
      isOptional(r.lastTakeMs, isTime) &&
      isOptional(r.firstDueMs, isTime) &&
      isOptional(r.lastDueMs, isTime) &&
      isOptional(r.readyAtMs, isTime) &&
      isOptional(r.indexedTakeMs, isTime),
  ) as QueueRecord;
}

export function readOwner(env: RecordDecoder, bytes: Uint8Array, scope: string, owner: string): OwnerRecord {
  return decoded(env, bytes, `frontier owner ${scope}/${owner}`, 1, (r) => isTime(r.lastTakeMs)) as OwnerRecord;
}

/**
 * The hash of a URL in the frontier's location index: 32-bit FNV-1a of its UTF-16 code units.
 * Part of the format; entries of one hash are told apart by their URL, so a collision costs a
 * read, never a wrong answer.
 */
export function urlHash(url: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < url.length; i++) h = Math.imul(h ^ url.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A frontier id of format 7: `SEQ-HASH`, both decimal (what take printed). */
const ID = /^([1-9][0-9]{0,12})-(0|[1-9][0-9]{0,9})$/;

export interface EntryRef {
  readonly seq: number;
  readonly hash: number;
}

export function formatId(ref: EntryRef): string {
  return `${ref.seq}-${ref.hash}`;
}

export function parseId(id: string): EntryRef {
  const match = typeof id === 'string' ? ID.exec(id) : null;
  const seq = Number(match?.[1]);
  const hash = Number(match?.[2]);
  if (match === null || seq > 2 ** 40 - 1 || hash > 0xffffffff) throw SeenStoreError.notFrontierId(id);
  return { seq, hash };
}

/** How an entry's URL is stored: whole, or after the scheme and its queue's key. */
const FORM_WHOLE = 0;
const FORM_HTTPS = 1;
const FORM_HTTP = 2;
const HAS_DATA = 1;
const HAS_OWNER = 2;

/**
 * Entry values (docs/format.md "Frontier"): a flags byte (bit 0 payload, bit 1 owner, bits 2-3 how
 * the URL is kept: 0 whole, 1 after `https://` + the queue's key, 2 after `http://` + the key),
 * then LEB128 varints: attempts, epoch, zigzag(due − created); a leased entry's value then holds
 * its queue number, due time and lease end (a waiting entry's key holds them); then the owner and
 * the payload (msgpack), each as a varint length and its bytes; the rest is the URL's remaining
 * UTF-8. Encoded into one reused buffer: the view is good until the next encode.
 */
export class EntryCodec {
  readonly #env: Pick<StoreEnv, 'encodeRecord' | 'decodeMeta'>;
  #buf = Buffer.allocUnsafe(4096);
  #at = 0;

  constructor(env: Pick<StoreEnv, 'encodeRecord' | 'decodeMeta'>) {
    this.#env = env;
  }

  /** A waiting entry's value (`lease` undefined) or a leased one's (its queue number). */
  encode(entry: EntryRecord, leasedQueue: number | undefined): Buffer {
    const { url, queue } = entry;
    const form =
      url.startsWith('https://') && url.startsWith(queue, 8) && queue !== ''
        ? FORM_HTTPS
        : url.startsWith('http://') && url.startsWith(queue, 7) && queue !== ''
          ? FORM_HTTP
          : FORM_WHOLE;
    const owner = leasedQueue !== undefined ? entry.owner : undefined;
    const data = entry.data === undefined ? undefined : this.#env.encodeRecord(entry.data as object);
    const rest = form === FORM_WHOLE ? url : url.slice((form === FORM_HTTPS ? 8 : 7) + queue.length);
    this.#room(32 + rest.length * 3 + (owner?.length ?? 0) * 3 + (data?.length ?? 0));
    this.#at = 0;
    this.#buf[this.#at++] = (data === undefined ? 0 : HAS_DATA) | (owner === undefined ? 0 : HAS_OWNER) | (form << 2);
    this.#varint(entry.attempts);
    this.#varint(entry.epoch);
    const age = entry.dueMs - entry.createdMs;
    this.#varint(age >= 0 ? age * 2 : -age * 2 - 1);
    if (leasedQueue !== undefined) {
      this.#varint(leasedQueue);
      this.#varint(entry.dueMs);
      this.#varint(entry.leaseUntilMs);
    }
    if (owner !== undefined) this.#bytes(Buffer.from(owner, 'utf8'));
    if (data !== undefined) this.#bytes(data);
    this.#at += this.#buf.write(rest, this.#at, 'utf8');
    return this.#buf.subarray(0, this.#at);
  }

  /**
   * An entry from its value: `where` names it in errors; `waiting` is its waiting key's queue
   * number and due time (undefined: a leased entry's value, which holds them); `queueName` gives
   * a queue number's key.
   */
  decode(
    bytes: Buffer,
    where: string,
    waiting: { readonly q: number; readonly dueMs: number } | undefined,
    queueName: (q: number) => string,
  ): { entry: EntryRecord; queueNo: number } {
    const read = new VarintReader(bytes, where);
    const flags = read.byte();
    const form = (flags >> 2) & 3;
    if (flags > 15 || form > FORM_HTTP) throw read.corrupt('unknown flags');
    const attempts = read.varint();
    const epoch = read.varint();
    const zig = read.varint();
    const age = zig % 2 === 0 ? zig / 2 : -(zig + 1) / 2;
    const queueNo = waiting?.q ?? read.varint();
    const dueMs = waiting?.dueMs ?? read.varint();
    const leaseUntilMs = waiting === undefined ? read.varint() : 0;
    if (waiting === undefined && leaseUntilMs === 0) throw read.corrupt('a leased entry without a lease end');
    const owner = (flags & HAS_OWNER) !== 0 ? read.bytes().toString('utf8') : undefined;
    const data = (flags & HAS_DATA) !== 0 ? this.#env.decodeMeta(read.bytes(), `${where} payload`) : undefined;
    const queue = queueName(queueNo);
    const rest = bytes.toString('utf8', read.at);
    const url = form === FORM_WHOLE ? rest : `${form === FORM_HTTPS ? 'https://' : 'http://'}${queue}${rest}`;
    const entry: EntryRecord = {
      url,
      queue,
      epoch,
      dueMs,
      leaseUntilMs,
      attempts,
      createdMs: dueMs - age,
      ...(owner === undefined ? {} : { owner }),
      ...(data === undefined ? {} : { data }),
    };
    return { entry, queueNo };
  }

  #room(bytes: number): void {
    if (this.#buf.length < bytes) this.#buf = Buffer.allocUnsafe(Math.max(bytes, this.#buf.length * 2));
  }

  #varint(n: number): void {
    let v = n;
    while (v >= 128) {
      this.#buf[this.#at++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.#buf[this.#at++] = v;
  }

  #bytes(bytes: Buffer): void {
    this.#varint(bytes.length);
    bytes.copy(this.#buf, this.#at);
    this.#at += bytes.length;
  }
}

/** Where a waiting entry is: the key of its block (frontier-blocks.ts). */
export interface BlockId {
  readonly q: number;
  readonly dueMs: number;
  readonly blockSeq: number;
}

/**
 * A location value: its entry's block as LEB128 varints, queue number, due time, and 1 + zigzag
 * of (the entry's seq − the block's seq): small, as a block's entries are near its key (0: a
 * leased entry's, whose place is its own key).
 */
export function writeLocation({ q, dueMs, blockSeq }: BlockId, seq: number): Buffer {
  const out = Buffer.allocUnsafe(24);
  let at = 0;
  const apart = seq - blockSeq;
  for (let v of [q, dueMs, blockSeq === 0 ? 0 : (apart >= 0 ? apart * 2 : -apart * 2 - 1) + 1]) {
    while (v >= 128) {
      out[at++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    out[at++] = v;
  }
  return out.subarray(0, at);
}

export function readLocation(bytes: Buffer, seq: number, where: string): BlockId {
  const read = new VarintReader(bytes, where);
  const q = read.varint();
  const dueMs = read.varint();
  const coded = read.varint();
  const apart = coded === 0 ? 0 : coded % 2 === 1 ? (coded - 1) / 2 : -coded / 2;
  if (read.at !== bytes.length || seq - apart < 1) throw read.corrupt('not a location');
  return { q, dueMs, blockSeq: coded === 0 ? 0 : seq - apart };
}

class VarintReader {
  at = 0;
  readonly #bytes: Buffer;
  readonly #where: string;

  constructor(bytes: Buffer, where: string) {
    this.#bytes = bytes;
    this.#where = where;
  }

  byte(): number {
    if (this.at >= this.#bytes.length) throw this.corrupt('cut short');
    return this.#bytes[this.at++]!;
  }

  varint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      n += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return n;
      scale *= 128;
      if (scale > 2 ** 56) throw this.corrupt('a number over 2^53');
    }
  }

  bytes(): Buffer {
    const length = this.varint();
    if (this.at + length > this.#bytes.length) throw this.corrupt('cut short');
    const out = this.#bytes.subarray(this.at, this.at + length);
    this.at += length;
    return out;
  }

  corrupt(problem: string): SeenStoreError {
    return new SeenStoreError('STORE_CORRUPT', `${this.#where}: ${problem}`);
  }
}
