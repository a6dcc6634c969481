import { SeenStoreError } from '../../errors.js';
import type { StoreEnv } from './env.js';
import { MAX_SEQ, type KeyReader, type KeyWriter, frontierPrefix } from './frontier-keys.js';
import { FrontierLookup, type FrontierDb, type Found } from './frontier-lookup.js';
import { queueRoom, readyAtMs, NEVER_TAKEN_MS } from '../politeness.js';
import {
  newQueue,
  readQueue,
  readState,
  urlHash,
  writeLocation,
  type BlockId,
  type EntryCodec,
  type EntryRecord,
  type EntryRef,
  type FrontierState,
  type QueueRecord,
} from './frontier-records.js';
import { BlockCache } from './frontier-block-cache.js';

export type { FrontierDb, Found } from './frontier-lookup.js';

/** The value of an index key: the key is the record. */
const MARK = Buffer.alloc(0);
/**
 * Most leases one operation gives back: bounds its transaction after a crash left very many to
 * run out. Until given back a lease counts against its queue's in-flight room (never over it).
 */
const EXPIRED_LEASES_MAX = 100_000;

interface QueueSlot {
  readonly record: QueueRecord;
  /** It held URLs when this transaction loaded it (or last wrote it). */
  heldUrls: boolean;
  dirty: boolean;
  /** An entry that may have been the queue's first due one left the waiting index. */
  firstDueStale: boolean;
}

/**
 * One frontier operation inside one LMDB write transaction, on the keys of format 7
 * (frontier-keys.ts): it loads the records it touches, moves each entry between the waiting and
 * leased keys and keeps the lease and location indexes in step at once, and at `settle` writes the
 * entries changed in place, the queues (moved in the ready index) and the state. So every index is
 * exact after each operation, and take finds ready queues without a scan.
 */
export class FrontierTxn {
  readonly nowMs: number;
  readonly #env: StoreEnv;
  readonly #db: FrontierDb;
  readonly #scope: string;
  readonly #lookup: FrontierLookup;
  readonly #keys: KeyWriter;
  readonly #parts: KeyReader;
  readonly #codec: EntryCodec;
  readonly #queues = new Map<string, QueueSlot>();
  readonly #entries = new Map<number, Found | null>();
  readonly #dirty = new Set<number>();
  readonly #blocks: BlockCache;
  /** The block of each waiting entry this transaction read or wrote. */
  readonly #blockOf = new Map<number, BlockId>();
  #state: FrontierState | undefined;

  constructor(env: StoreEnv, db: FrontierDb, scope: string, nowMs: number) {
    this.#env = env;
    this.#db = db;
    this.#scope = scope;
    this.nowMs = nowMs;
    this.#lookup = new FrontierLookup(env, db, scope, frontierPrefix(db, scope, true)!);
    this.#keys = this.#lookup.keys;
    this.#parts = this.#lookup.parts;
    this.#codec = this.#lookup.codec;
    this.#blocks = new BlockCache(db, this.#lookup);
  }

  get state(): FrontierState {
    this.#state ??= readState(this.#env, this.#db.getBinary(this.#keys.state()), this.#scope);
    return this.#state;
  }

  /** The entry an id names, or undefined when there is none. */
  entry(ref: EntryRef): EntryRecord | undefined {
    const cached = this.#entries.get(ref.seq);
    if (cached !== undefined) return cached !== null && cached.ref.hash === ref.hash ? cached.entry : undefined;
    // Blocks as this transaction left them: an entry it added (a URL given twice to one schedule) is in no stored block yet.
    const found = this.#lookup.byRef(ref, (id) => this.#blocks.get(id));
    this.#entries.set(ref.seq, found ?? null);
    if (found?.block !== undefined) this.#blockOf.set(ref.seq, found.block);
    return found?.entry;
  }

  /** A queue's record as stored, without creating it. */
  peekQueue(name: string): QueueRecord | undefined {
    const slot = this.#queues.get(name);
    if (slot !== undefined) return slot.record;
    const bytes = this.#db.getBinary(this.#keys.queue(name));
    return bytes === undefined
      ? undefined
      : this.#loadQueue(name, readQueue(this.#env, bytes, this.#scope, name)).record;
  }

  /** A queue's record to change (created when it has none); written by settle. */
  queue(name: string): QueueRecord {
    let record = this.peekQueue(name);
    if (record === undefined) {
      record = this.#loadQueue(name, newQueue(this.state.nextQueue++)).record;
      this.#db.putSync(this.#keys.queueName(record.no), Buffer.from(name, 'utf8'));
    }
    this.#queues.get(name)!.dirty = true;
    return record;
  }

  /** The entry of a URL, if it is in the frontier. */
  findUrl(url: string): Found | undefined {
    const hash = urlHash(url);
    for (const seq of this.#lookup.seqsOfHash(hash)) {
      const ref = { seq, hash };
      const entry = this.entry(ref);
      if (entry?.url === url) return { ref, entry };
    }
    return undefined;
  }

  insert(url: string, queue: string, epoch: number, dueMs: number, data: unknown): void {
    this.restore({
      url,
      queue,
      epoch,
      dueMs,
      leaseUntilMs: 0,
      attempts: 0,
      createdMs: this.nowMs,
      ...(data === undefined ? {} : { data }),
    });
  }

  /**
   * Puts an entry in, leased or not, under the next seq or the one given (a migration keeps an
   * entry's number): enqueues, and a migration or salvage bringing entries from elsewhere.
   */
  restore(entry: EntryRecord, givenSeq?: number): EntryRef {
    const state = this.state;
    const seq = givenSeq ?? state.nextSeq;
    state.nextSeq = Math.max(state.nextSeq, seq + 1);
    if (seq > MAX_SEQ)
      throw new SeenStoreError(
        'STORE_FULL',
        `the frontier of ${this.#scope} has numbered ${MAX_SEQ} entries, the most its keys hold`,
      );
    state.entries++;
    const ref = { seq, hash: urlHash(entry.url) };
    // Found by a later lookup in this transaction (a schedule naming the URL again), before settle writes its block.
    this.#entries.set(seq, { ref, entry });
    const queue = this.queue(entry.queue);
    if (entry.leaseUntilMs === 0) {
      this.#addWaiting(ref, entry);
    } else {
      // A leased entry is found by its seq: its location only has to be there (for lookups by URL).
      this.#db.putSync(
        this.#keys.location(ref.hash, seq),
        writeLocation({ q: queue.no, dueMs: entry.dueMs, blockSeq: 0 }, seq),
      );
      this.#putLeased(ref, entry, queue.no);
      queue.leased++;
      state.leased++;
    }
    return ref;
  }

  lease(ref: EntryRef, entry: EntryRecord, untilMs: number, owner: string | undefined): void {
    const queue = this.queue(entry.queue);
    this.#removeWaiting(ref, entry);
    entry.leaseUntilMs = untilMs;
    entry.attempts++;
    if (owner === undefined) delete entry.owner;
    else entry.owner = owner;
    this.#putLeased(ref, entry, queue.no);
    queue.leased++;
    this.state.leased++;
  }

  /** The entry waits again (a no-op when it is not leased). */
  unlease(ref: EntryRef, entry: EntryRecord): void {
    if (entry.leaseUntilMs === 0) return;
    const queue = this.queue(entry.queue);
    this.#removeLeased(ref, entry);
    entry.leaseUntilMs = 0;
    delete entry.owner;
    queue.leased--;
    this.state.leased--;
    this.#addWaiting(ref, entry);
  }

  /** A waiting entry (unlease it first) is due at `dueMs`, in queue `queue`. */
  reschedule(ref: EntryRef, entry: EntryRecord, queue: string, dueMs: number): void {
    if (entry.leaseUntilMs !== 0)
      throw new SeenStoreError('INTERNAL', 'invariant broken: a leased frontier entry is rescheduled');
    this.#removeWaiting(ref, entry);
    entry.queue = queue;
    entry.dueMs = dueMs;
    this.#addWaiting(ref, entry);
  }

  /** The caller changed the entry in place (its payload): settle writes it again. */
  changed(ref: EntryRef): void {
    this.#dirty.add(ref.seq);
  }

  remove(ref: EntryRef, entry: EntryRecord): void {
    const queue = this.queue(entry.queue);
    if (entry.leaseUntilMs !== 0) {
      this.#removeLeased(ref, entry);
      queue.leased--;
      this.state.leased--;
    } else {
      this.#removeWaiting(ref, entry);
    }
    this.#db.removeSync(this.#keys.location(ref.hash, ref.seq));
    this.#entries.set(ref.seq, null);
    this.#dirty.delete(ref.seq);
    this.state.entries--;
  }

  /** Done: the entry leaves (or waits for its refetch time, its attempts from 0) and counts as completed in its queue. */
  finish(ref: EntryRef, entry: EntryRecord, refetchAtMs: number, failed = false): void {
    this.queue(entry.queue).completed++;
    if (failed) this.state.failed++;
    else this.state.done++;
    if (refetchAtMs <= 0) {
      this.remove(ref, entry);
      return;
    }
    this.unlease(ref, entry);
    entry.attempts = 0;
    this.reschedule(ref, entry, entry.queue, refetchAtMs);
  }

  /**
   * Gives back the leases that ran out by now (at most EXPIRED_LEASES_MAX, the oldest: the rest go
   * with the next writes): their entries wait again and their queues are re-indexed.
   */
  expireLeases(): void {
    const keys = [...this.#db.getKeys({ ...this.#keys.leaseRange(this.nowMs), limit: EXPIRED_LEASES_MAX })];
    for (const key of keys) {
      const found = this.#leasedEntry(this.#parts.lease(key as Buffer).seq);
      if (found === undefined)
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `frontier lease ${(key as Buffer).toString('hex')} of an entry that is not there`,
        );
      this.unlease(found.ref, found.entry);
    }
  }

  /** Up to `limit` entries of a queue due by now, in take order. */
  dueEntries(name: string, limit: number): Found[] {
    const out: Found[] = [];
    const queue = this.peekQueue(name);
    if (limit <= 0 || queue === undefined) return out;
    this.#blocks.flush(queue.no);
    // Blocks whose key is due by now; in them, entries in take order up to the first due later.
    for (const { key, value } of this.#db.getRange(this.#keys.waitingRange(queue.no, this.nowMs))) {
      for (const found of this.#blockEntries(key as Buffer, value)) {
        if (found.entry.dueMs > this.nowMs) return out;
        out.push(found);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /**
   * Ready queues by now for which `accept` is true, at most `limit` of them, in take order
   * (politeness.ts's compareReady, which the ready key encodes).
   */
  readyQueues(limit: number, accept: (queue: string) => boolean): string[] {
    const found: string[] = [];
    if (limit <= 0) return found;
    for (const key of this.#db.getKeys(this.#keys.readyRange(this.nowMs))) {
      const queue = this.#parts.readyName(key as Buffer);
      if (!accept(queue)) continue;
      found.push(queue);
      if (found.length >= limit) break;
    }
    return found;
  }

  /** How many more URLs of the queue may be out on lease (politeness.ts's queueRoom). */
  room(queue: QueueRecord): number {
    return queueRoom(queue, this.state.settings.maxInFlightPerQueue);
  }

  putOwner(owner: string, lastTakeMs = this.nowMs): void {
    this.#db.putSync(this.#keys.owner(owner), this.#env.encodeRecord({ v: 1, lastTakeMs }));
  }

  /** Every queue record of the scope loaded to be re-indexed (after a change of the default delay or in-flight limit). */
  touchQueues(): void {
    for (const key of [...this.#db.getKeys(this.#keys.tagRange('k'))]) this.queue(this.#parts.text(key as Buffer));
  }

  /** Every entry of a queue: waiting (in take order), then leased. */
  queueEntries(name: string): Found[] {
    const queue = this.peekQueue(name);
    if (queue === undefined) return [];
    const out: Found[] = [];
    this.#blocks.flush(queue.no);
    for (const { key, value } of [...this.#db.getRange(this.#keys.waitingRange(queue.no, Infinity))])
      out.push(...this.#blockEntries(key as Buffer, value));
    for (const found of this.leasedEntries()) if (found.entry.queue === name) out.push(found);
    return out;
  }

  /** Every leased entry, the leases that ran out included. */
  leasedEntries(): Found[] {
    const seqs = [...this.#db.getKeys(this.#keys.tagRange('l'))].map((key) => this.#parts.leased(key as Buffer));
    return seqs.map((seq) => this.#leasedEntry(seq)!);
  }

  /** Removes a queue's record and settings (its entries removed first). */
  dropQueue(name: string): void {
    const slot = this.#queues.get(name);
    if (slot === undefined) return;
    this.#index(name, slot);
    this.#db.removeSync(this.#keys.queue(name));
    this.#db.removeSync(this.#keys.queueName(slot.record.no));
    this.#queues.delete(name);
  }

  /** Writes what changed: entries changed in place, queues (moved in the ready and non-empty indexes), the state. */
  settle(): void {
    for (const seq of this.#dirty) {
      const found = this.#entries.get(seq);
      if (found === null || found === undefined) continue;
      const { ref, entry } = found;
      if (entry.leaseUntilMs === 0)
        this.#blocks.replace(this.#blockOf.get(seq)!, seq, Buffer.from(this.#codec.encode(entry, undefined)));
      else this.#putLeased(ref, entry, this.queue(entry.queue).no, false);
    }
    this.#dirty.clear();
    this.#blocks.flush();
    for (const [name, slot] of this.#queues) {
      if (!slot.dirty) continue;
      this.#index(name, slot);
      slot.dirty = false;
    }
    if (this.#state !== undefined) this.#db.putSync(this.#keys.state(), this.#env.encodeRecord(this.#state));
  }

  #index(name: string, slot: QueueSlot): void {
    const queue = slot.record;
    const heldUrls = queue.waiting + queue.leased > 0;
    if (heldUrls !== slot.heldUrls) {
      if (heldUrls) this.#db.putSync(this.#keys.nonEmpty(name), MARK);
      else this.#db.removeSync(this.#keys.nonEmpty(name));
      this.state.queues += heldUrls ? 1 : -1;
      slot.heldUrls = heldUrls;
    }
    if (queue.waiting === 0) {
      delete queue.firstDueMs;
      delete queue.lastDueMs;
    } else if (slot.firstDueStale || queue.firstDueMs === undefined) queue.firstDueMs = this.#firstDueMs(name, queue);
    slot.firstDueStale = false;
    const readyAt = readyAtMs(queue, queue.firstDueMs, this.state.settings.delayMs, this.room(queue));
    const takeMs = queue.lastTakeMs ?? NEVER_TAKEN_MS;
    if (readyAt !== queue.readyAtMs || (readyAt !== undefined && takeMs !== queue.indexedTakeMs)) {
      if (queue.readyAtMs !== undefined)
        this.#db.removeSync(this.#keys.ready(queue.readyAtMs, queue.indexedTakeMs ?? NEVER_TAKEN_MS, name));
      if (readyAt === undefined) {
        delete queue.readyAtMs;
        delete queue.indexedTakeMs;
      } else {
        this.#db.putSync(this.#keys.ready(readyAt, takeMs, name), MARK);
        queue.readyAtMs = readyAt;
        queue.indexedTakeMs = takeMs;
      }
    }
    this.#db.putSync(this.#keys.queue(name), this.#env.encodeRecord(queue));
  }

  /** The due time of the queue's first entry not leased (the queue has one). */
  #firstDueMs(name: string, queue: QueueRecord): number {
    this.#blocks.flush(queue.no);
    // The first block's first entry (the block's key is a lower bound).
    for (const { key, value } of this.#db.getRange({ ...this.#keys.waitingRange(queue.no, Infinity), limit: 1 }))
      return this.#blocks.fromRange(key as Buffer, value).items[0]!.dueMs;
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `frontier queue ${this.#scope}/${JSON.stringify(name)} counts waiting URLs it does not hold`,
    );
  }

  /** The entry joins its queue's waiting keys. */
  #addWaiting(ref: EntryRef, entry: EntryRecord): void {
    const record = this.queue(entry.queue);
    // After every waiting entry of the queue: due later than any (lastDueMs bounds them), or as
    // late and newer than all (a new entry's seq is the largest).
    const last = record.waiting === 0 ? undefined : record.lastDueMs;
    const afterAll =
      last === undefined || entry.dueMs > last || (entry.dueMs === last && ref.seq === this.state.nextSeq - 1);
    if (last === undefined || entry.dueMs > last) record.lastDueMs = entry.dueMs;
    const block = this.#blocks.add(
      record.no,
      entry.dueMs,
      ref.seq,
      Buffer.from(this.#codec.encode(entry, undefined)),
      afterAll,
    );
    this.#blockOf.set(ref.seq, block);
    this.#db.putSync(this.#keys.location(ref.hash, ref.seq), writeLocation(block, ref.seq));
    this.#dirty.delete(ref.seq);
    record.waiting++;
    if (record.firstDueMs === undefined || entry.dueMs < record.firstDueMs) record.firstDueMs = entry.dueMs;
  }

  /** The entry leaves its queue's waiting keys; when it may have been the first, settle looks the first up again. */
  #removeWaiting(ref: EntryRef, entry: EntryRecord): void {
    const record = this.queue(entry.queue);
    const block = this.#blockOf.get(ref.seq);
    if (block === undefined)
      throw new SeenStoreError(
        'INTERNAL',
        `invariant broken: waiting frontier entry ${ref.seq} was not read from its block`,
      );
    this.#blocks.remove(block, ref.seq);
    this.#blockOf.delete(ref.seq);
    record.waiting--;
    if (record.firstDueMs === undefined || entry.dueMs <= record.firstDueMs)
      this.#queues.get(entry.queue)!.firstDueStale = true;
  }

  #putLeased(ref: EntryRef, entry: EntryRecord, queueNo: number, indexLease = true): void {
    this.#db.putSync(this.#keys.leased(ref.seq), this.#codec.encode(entry, queueNo));
    if (indexLease) this.#db.putSync(this.#keys.lease(entry.leaseUntilMs, ref.seq), MARK);
    this.#dirty.delete(ref.seq);
  }

  #removeLeased(ref: EntryRef, entry: EntryRecord): void {
    this.#db.removeSync(this.#keys.leased(ref.seq));
    this.#db.removeSync(this.#keys.lease(entry.leaseUntilMs, ref.seq));
  }

  /** A leased entry by its seq (this transaction's copy when it has one), or undefined when it is not leased. */
  #leasedEntry(seq: number): Found | undefined {
    const cached = this.#entries.get(seq);
    if (cached !== undefined && cached !== null && cached.entry.leaseUntilMs !== 0) return cached;
    return this.#remember(this.#lookup.leased(seq));
  }

  /** The entries of a block read from a range (this transaction's copies where it has them). */
  #blockEntries(key: Buffer, value: Buffer): Found[] {
    const block = this.#blocks.fromRange(key, value);
    const id: BlockId = { q: block.q, dueMs: block.dueMs, blockSeq: block.blockSeq };
    return block.items.map((item) => {
      this.#blockOf.set(item.seq, id);
      const cached = this.#entries.get(item.seq);
      if (cached !== undefined && cached !== null) return cached;
      const entry = this.#lookup.entryOf(block, item);
      return this.#remember({ ref: { seq: item.seq, hash: urlHash(entry.url) }, entry, block: id })!;
    });
  }

  #remember(found: Found | undefined): Found | undefined {
    if (found !== undefined) this.#entries.set(found.ref.seq, found);
    return found;
  }

  #loadQueue(name: string, record: QueueRecord): QueueSlot {
    const slot: QueueSlot = {
      record,
      heldUrls: record.waiting + record.leased > 0,
      dirty: false,
      firstDueStale: false,
    };
    this.#queues.set(name, slot);
    this.#lookup.knowQueue(record.no, name);
    return slot;
  }
}
