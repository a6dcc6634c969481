import { SeenStoreError } from '../../errors.js';
import type { FrontierDb } from './frontier-lookup.js';

/**
 * The frontier database's keys, format 7 (docs/format.md "Frontier"): plain bytes, compared as
 * LMDB compares them (memcmp), so every number is big-endian and fixed-width where it orders keys.
 * A scope's keys start with its number as an unsigned LEB128 (no encoding is a prefix of another,
 * so one scope's range never holds another's), then a one-letter tag:
 *
 *   P 's'                                 the scope's frontier state (msgpack)
 *   P 'k' name                            a queue's record, by its key (msgpack; holds its number q)
 *   P 'i' q:u32                           a queue's key, by its number
 *   P 'n' name                            the queue holds URLs (listing skips empty queues)
 *   P 'r' readyAt:u48 lastTake+1:u48 name a queue take may hand out from readyAt on
 *   P 'w' q:u32 due:u48 seq:u40           a waiting URL, in its queue's take order: the entry itself
 *   P 'l' seq:u40                         a leased URL: the entry itself, with its queue and due time
 *   P 'x' leaseUntil:u48 seq:u40          a lease, by the time it runs out
 *   P 'u' hash:u32 seq:u40                where an entry is (its queue number and due time): by URL and by id
 *   P 'o' owner                           a taker's last take
 *
 * Global keys start with byte 0: `0 'n' scope` holds a scope's number (LEB128), `0 'c'` the last
 * number given. Nothing else builds or takes these keys apart.
 */

/** Most entries a scope's frontier may ever number: seq is 40 bits. */
export const MAX_SEQ = 2 ** 40 - 1;
/** Times in keys are 48-bit milliseconds since 1970 (until the year 10889). */
const MAX_TIME = 2 ** 48 - 1;

type Tag = 's' | 'k' | 'i' | 'n' | 'r' | 'w' | 'l' | 'x' | 'u' | 'o';
/** Every tag of a scope's keys, for clearing or deleting it. */
export const FRONTIER_TAGS: readonly Tag[] = ['s', 'k', 'i', 'n', 'r', 'w', 'l', 'x', 'u', 'o'];
const TAG = Object.fromEntries(FRONTIER_TAGS.map((tag) => [tag, tag.charCodeAt(0)])) as Record<Tag, number>;

/** A key range as lmdb-js's getKeys / getRange take it: from `start` up to, not including, `end`. */
export interface ByteRange {
  readonly start: Buffer;
  readonly end: Buffer;
}

/** The bytes every key of a scope starts with: its number, LEB128. */
export function scopePrefix(scopeNo: number): Buffer {
  const bytes: number[] = [];
  let n = scopeNo;
  do {
    const low = n % 128;
    n = Math.floor(n / 128);
    bytes.push(n > 0 ? low | 0x80 : low);
  } while (n > 0);
  return Buffer.from(bytes);
}

export function readScopeNumber(bytes: Buffer, where: string): number {
  let n = 0;
  let scale = 1;
  for (let i = 0; i < bytes.length; i++) {
    n += (bytes[i]! & 0x7f) * scale;
    if ((bytes[i]! & 0x80) === 0) {
      if (i !== bytes.length - 1 || n < 1) break;
      return n;
    }
    scale *= 128;
  }
  throw new SeenStoreError('STORE_CORRUPT', `${where}: not a scope number`);
}

/** Every key of the scope whose keys start with `prefix`. */
export function scopeRange(prefix: Buffer): ByteRange {
  const end = Buffer.from(prefix);
  end[end.length - 1] = end[end.length - 1]! + 1;
  return { start: Buffer.from(prefix), end };
}

export const scopeNumberKey = (scope: string): Buffer =>
  Buffer.concat([Buffer.from([0, 0x6e]), Buffer.from(scope, 'utf8')]);
export const lastScopeNumberKey = (): Buffer => Buffer.from([0, 0x63]);
/** Every scope's number key. */
export const scopeNumberRange = (): ByteRange => ({ start: Buffer.from([0, 0x6e]), end: Buffer.from([0, 0x6f]) });

/**
 * Builds keys of one scope into one buffer (a key is copied by LMDB as it is put or looked up, so
 * the buffer is reused; `done` hands out a view that is good until the next key is built).
 */
export class KeyWriter {
  readonly #prefix: Buffer;
  readonly #buf: Buffer;
  #at = 0;

  constructor(prefix: Buffer) {
    this.#prefix = prefix;
    this.#buf = Buffer.allocUnsafe(prefix.length + 1 + 2048);
  }

  get prefix(): Buffer {
    return this.#prefix;
  }

  state(): Buffer {
    return this.#start('s').#view();
  }

  queue(name: string): Buffer {
    return this.#start('k').#text(name).#view();
  }

  queueName(q: number): Buffer {
    return this.#start('i').#u32(q).#view();
  }

  nonEmpty(name: string): Buffer {
    return this.#start('n').#text(name).#view();
  }

  ready(readyAtMs: number, lastTakeMs: number, name: string): Buffer {
    return this.#start('r')
      .#u48(readyAtMs)
      .#u48(lastTakeMs + 1)
      .#text(name)
      .#view();
  }

  waiting(q: number, dueMs: number, seq: number): Buffer {
    return this.#start('w').#u32(q).#u48(dueMs).#u40(seq).#view();
  }

  leased(seq: number): Buffer {
    return this.#start('l').#u40(seq).#view();
  }

  lease(untilMs: number, seq: number): Buffer {
    return this.#start('x').#u48(untilMs).#u40(seq).#view();
  }

  location(hash: number, seq: number): Buffer {
    return this.#start('u').#u32(hash).#u40(seq).#view();
  }

  owner(owner: string): Buffer {
    return this.#start('o').#text(owner).#view();
  }

  /** Copies of keys, for ranges (which outlive the next key built). */
  copy(key: Buffer): Buffer {
    return Buffer.from(key);
  }

  /** Every key of one tag. */
  tagRange(tag: Tag): ByteRange {
    const start = this.copy(this.#start(tag).#view());
    const end = Buffer.from(start);
    end[end.length - 1] = TAG[tag] + 1;
    return { start, end };
  }

  /** A queue's waiting entries due at or before `dueMs` (the whole queue with Infinity). */
  waitingRange(q: number, dueMs: number): ByteRange {
    const start = this.copy(this.#start('w').#u32(q).#view());
    const end =
      dueMs >= MAX_TIME
        ? q === 0xffffffff
          ? this.tagRange('w').end
          : this.copy(
              this.#start('w')
                .#u32(q + 1)
                .#view(),
            )
        : this.copy(
            this.#start('w')
              .#u32(q)
              .#u48(dueMs + 1)
              .#view(),
          );
    return { start, end };
  }

  /** Ready queues with a ready time at or before `nowMs`, oldest first. */
  readyRange(nowMs: number): ByteRange {
    return {
      start: this.copy(this.#start('r').#view()),
      end: this.copy(
        this.#start('r')
          .#u48(Math.min(nowMs + 1, MAX_TIME))
          .#view(),
      ),
    };
  }

  /** Leases that run out at or before `nowMs` (Infinity: every lease). */
  leaseRange(nowMs: number): ByteRange {
    return {
      start: this.copy(this.#start('x').#view()),
      end: this.copy(
        this.#start('x')
          .#u48(Math.min(nowMs + 1, MAX_TIME))
          .#view(),
      ),
    };
  }

  /** The locations of the entries whose URL has hash `hash`. */
  hashRange(hash: number): ByteRange {
    const start = this.copy(this.#start('u').#u32(hash).#view());
    const end =
      hash === 0xffffffff
        ? this.tagRange('u').end
        : this.copy(
            this.#start('u')
              .#u32(hash + 1)
              .#view(),
          );
    return { start, end };
  }

  /** Queues that hold URLs, in key order, after `after` (exclusive) when given. */
  nonEmptyRange(after: string | undefined): ByteRange {
    const start =
      after === undefined
        ? this.copy(this.#start('n').#view())
        : this.copy(this.#start('n').#text(after).#byte(0).#view());
    return { start, end: this.tagRange('n').end };
  }

  /** Every location key from `after` (exclusive) on. */
  locationsAfter(after: Buffer | undefined): ByteRange {
    const all = this.tagRange('u');
    return after === undefined ? all : { start: Buffer.concat([after, Buffer.from([0])]), end: all.end };
  }

  #start(tag: Tag): this {
    this.#prefix.copy(this.#buf, 0);
    this.#at = this.#prefix.length;
    return this.#byte(TAG[tag]);
  }

  #byte(b: number): this {
    this.#buf[this.#at++] = b;
    return this;
  }

  #u32(n: number): this {
    this.#buf.writeUInt32BE(n, this.#at);
    this.#at += 4;
    return this;
  }

  #u40(n: number): this {
    this.#buf.writeUIntBE(n, this.#at, 5);
    this.#at += 5;
    return this;
  }

  #u48(n: number): this {
    this.#buf.writeUIntBE(Math.max(0, Math.min(n, MAX_TIME)), this.#at, 6);
    this.#at += 6;
    return this;
  }

  #text(s: string): this {
    const room = this.#buf.length - this.#at - 16;
    const written = this.#buf.write(s, this.#at, room, 'utf8');
    if (Buffer.byteLength(s, 'utf8') > room)
      throw new SeenStoreError(
        'USAGE',
        `a frontier key of ${Buffer.byteLength(s, 'utf8')} bytes is over the limit of ${room}`,
      );
    this.#at += written;
    return this;
  }

  #view(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

/**
 * Parts of a scope's keys, by position after the prefix and tag (`at` = prefix length + 1). The
 * key is checked to be of its tag's length where the layout fixes it.
 */
export class KeyReader {
  readonly #at: number;

  constructor(prefixLength: number) {
    this.#at = prefixLength + 1;
  }

  /** q, due, seq of a waiting key. */
  waiting(key: Buffer): { q: number; dueMs: number; seq: number } {
    const at = this.#fixed(key, 15);
    return { q: key.readUInt32BE(at), dueMs: key.readUIntBE(at + 4, 6), seq: key.readUIntBE(at + 10, 5) };
  }

  /** seq of a leased key. */
  leased(key: Buffer): number {
    return key.readUIntBE(this.#fixed(key, 5), 5);
  }

  /** untilMs and seq of a lease key. */
  lease(key: Buffer): { untilMs: number; seq: number } {
    const at = this.#fixed(key, 11);
    return { untilMs: key.readUIntBE(at, 6), seq: key.readUIntBE(at + 6, 5) };
  }

  /** hash and seq of a location key. */
  location(key: Buffer): { hash: number; seq: number } {
    const at = this.#fixed(key, 9);
    return { hash: key.readUInt32BE(at), seq: key.readUIntBE(at + 4, 5) };
  }

  /** The queue name of a ready key. */
  readyName(key: Buffer): string {
    if (key.length < this.#at + 12) throw corrupt(key);
    return key.toString('utf8', this.#at + 12);
  }

  /** The text after the tag (queue name, owner). */
  text(key: Buffer): string {
    return key.toString('utf8', this.#at);
  }

  queueNumber(key: Buffer): number {
    return key.readUInt32BE(this.#fixed(key, 4));
  }

  #fixed(key: Buffer, length: number): number {
    if (key.length !== this.#at + length) throw corrupt(key);
    return this.#at;
  }
}

function corrupt(key: Buffer): SeenStoreError {
  return new SeenStoreError('STORE_CORRUPT', `frontier key ${key.toString('hex')} is not of its kind's length`);
}

/**
 * The key prefix of a scope's frontier: its number, given the first time a write asks (`create`).
 * Undefined when the scope has no number yet (a read of a frontier never written).
 */
export function frontierPrefix(db: FrontierDb, scope: string, create: boolean): Buffer | undefined {
  const stored = db.getBinary(scopeNumberKey(scope));
  if (stored !== undefined) return Buffer.from(stored);
  if (!create) return undefined;
  const last = db.getBinary(lastScopeNumberKey());
  const next = (last === undefined ? 0 : Buffer.from(last).readUInt32BE(0)) + 1;
  const prefix = scopePrefix(next);
  const counter = Buffer.alloc(4);
  counter.writeUInt32BE(next, 0);
  db.putSync(lastScopeNumberKey(), counter);
  db.putSync(scopeNumberKey(scope), prefix);
  return prefix;
}
