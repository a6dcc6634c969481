import { SeenStoreError } from '../../errors.js';
import type { StoreEnv } from './env.js';
import {
  frontierEntryKey, frontierLeaseKey, frontierLeaseRange, frontierNonEmptyKey, frontierOwnerKey, frontierQueueKey, frontierReadyKey,
  frontierReadyRange, frontierStateKey, frontierUrlKey, frontierUrlRange, frontierWaitKey, frontierWaitRange, NEVER_TAKEN_MS,
} from './keys.js';
import { queueRoom, readyAtMs } from '../politeness.js';
import { newQueue, readEntry, readQueue, readState, urlHash, type EntryRecord, type FrontierState, type QueueRecord } from './frontier-records.js';

export type FrontierDb = NonNullable<StoreEnv['frontierDb']>;

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
 * One frontier operation inside one LMDB write transaction: it loads the records it touches,
 * keeps the indexes (waiting, lease, URL) in step with every change at once, and at `settle`
 * writes the changed entries, queues and state and moves each changed queue in the ready index.
 * So every index is exact after each operation, and take finds ready queues without a scan.
 */
export class FrontierTxn {
  readonly nowMs: number;
  readonly #env: StoreEnv;
  readonly #db: FrontierDb;
  readonly #scope: string;
  readonly #queues = new Map<string, QueueSlot>();
  readonly #entries = new Map<number, EntryRecord | null>();
  readonly #dirtyEntries = new Set<number>();
  #state: FrontierState | undefined;

  constructor(env: StoreEnv, db: FrontierDb, scope: string, nowMs: number) {
    this.#env = env;
    this.#db = db;
    this.#scope = scope;
    this.nowMs = nowMs;
  }

  get state(): FrontierState {
    this.#state ??= readState(this.#env, this.#db.getBinary(frontierStateKey(this.#scope)), this.#scope);
    return this.#state;
  }

  /** The entry with this id, or undefined when there is none. */
  entry(id: number): EntryRecord | undefined {
    let entry = this.#entries.get(id);
    if (entry === undefined) {
      const bytes = this.#db.getBinary(frontierEntryKey(this.#scope, id));
      entry = bytes === undefined ? null : readEntry(this.#env, bytes, this.#scope, id);
      this.#entries.set(id, entry);
    }
    return entry ?? undefined;
  }

  /** A queue's record as stored, without creating it. */
  peekQueue(key: string): QueueRecord | undefined {
    const slot = this.#queues.get(key);
    if (slot !== undefined) return slot.record;
    const bytes = this.#db.getBinary(frontierQueueKey(this.#scope, key));
    return bytes === undefined ? undefined : this.#load(key, readQueue(this.#env, bytes, this.#scope, key)).record;
  }

  /** A queue's record to change (created when it has none); written by settle. */
  queue(key: string): QueueRecord {
    const record = this.peekQueue(key) ?? this.#load(key, newQueue()).record;
    this.#queues.get(key)!.dirty = true;
    return record;
  }

  /** The id and entry of a URL, if it is in the frontier. */
  findUrl(url: string): { id: number; entry: EntryRecord } | undefined {
    for (const key of this.#db.getKeys(frontierUrlRange(this.#scope, urlHash(url)))) {
      const id = (key as unknown as [string, string, number, number])[3];
      const entry = this.entry(id);
      if (entry?.url === url) return { id, entry };
    }
    return undefined;
  }

  insert(url: string, queue: string, epoch: number, dueMs: number, data: unknown): void {
    const state = this.state;
    const id = state.nextId++;
    state.entries++;
    const entry: EntryRecord = { v: 2, url, queue, epoch, dueMs, leaseUntilMs: 0, attempts: 0, ...(data === undefined ? {} : { data }), createdMs: this.nowMs };
    this.#put(id, entry);
    this.#db.putSync(frontierUrlKey(this.#scope, urlHash(url), id), MARK);
    this.#addWaiting(queue, dueMs, id);
  }

  /** Puts an entry back under its own id, leased or not, as a migration brings it from an older layout. */
  restore(id: number, entry: EntryRecord): void {
    const state = this.state;
    state.nextId = Math.max(state.nextId, id + 1);
    state.entries++;
    this.#put(id, entry);
    this.#db.putSync(frontierUrlKey(this.#scope, urlHash(entry.url), id), MARK);
    const queue = this.queue(entry.queue);
    if (entry.leaseUntilMs === 0) {
      this.#addWaiting(entry.queue, entry.dueMs, id);
    } else {
      this.#db.putSync(frontierLeaseKey(this.#scope, entry.leaseUntilMs, id), MARK);
      queue.leased++;
      state.leased++;
    }
  }

  lease(id: number, entry: EntryRecord, untilMs: number, owner: string | undefined): void {
    const queue = this.queue(entry.queue);
    this.#removeWaiting(entry.queue, entry.dueMs, id);
    this.#db.putSync(frontierLeaseKey(this.#scope, untilMs, id), MARK);
    entry.leaseUntilMs = untilMs;
    entry.attempts++;
    if (owner === undefined) delete entry.owner;
    else entry.owner = owner;
    queue.leased++;
    this.state.leased++;
    this.#put(id, entry);
  }

  /** The entry waits again (a no-op when it is not leased). */
  unlease(id: number, entry: EntryRecord): void {
    if (entry.leaseUntilMs === 0) return;
    const queue = this.queue(entry.queue);
    this.#db.removeSync(frontierLeaseKey(this.#scope, entry.leaseUntilMs, id));
    this.#addWaiting(entry.queue, entry.dueMs, id);
    entry.leaseUntilMs = 0;
    delete entry.owner;
    queue.leased--;
    this.state.leased--;
    this.#put(id, entry);
  }

  /** A waiting entry (unlease it first) is due at `dueMs`, in queue `queue`. */
  reschedule(id: number, entry: EntryRecord, queue: string, dueMs: number): void {
    if (entry.leaseUntilMs !== 0) throw new SeenStoreError('INTERNAL', 'invariant broken: a leased frontier entry is rescheduled');
    this.#removeWaiting(entry.queue, entry.dueMs, id);
    entry.queue = queue;
    entry.dueMs = dueMs;
    this.#addWaiting(queue, dueMs, id);
    this.#put(id, entry);
  }

  remove(id: number, entry: EntryRecord): void {
    const queue = this.queue(entry.queue);
    if (entry.leaseUntilMs !== 0) {
      this.#db.removeSync(frontierLeaseKey(this.#scope, entry.leaseUntilMs, id));
      queue.leased--;
      this.state.leased--;
    } else {
      this.#removeWaiting(entry.queue, entry.dueMs, id);
    }
    this.#db.removeSync(frontierUrlKey(this.#scope, urlHash(entry.url), id));
    this.#db.removeSync(frontierEntryKey(this.#scope, id));
    this.#entries.set(id, null);
    this.#dirtyEntries.delete(id);
    this.state.entries--;
  }

  /** Done: the entry leaves (or waits for its refetch time, its attempts from 0) and counts as completed in its queue. */
  finish(id: number, entry: EntryRecord, refetchAtMs: number, failed = false): void {
    this.queue(entry.queue).completed++;
    if (failed) this.state.failed = (this.state.failed ?? 0) + 1;
    else this.state.done++;
    if (refetchAtMs <= 0) {
      this.remove(id, entry);
      return;
    }
    this.unlease(id, entry);
    entry.attempts = 0;
    this.reschedule(id, entry, entry.queue, refetchAtMs);
  }

  /**
   * Gives back the leases that ran out by now (at most EXPIRED_LEASES_MAX, the oldest: the rest go
   * with the next writes): their entries wait again and their queues are re-indexed.
   */
  expireLeases(): void {
    const keys = [...this.#db.getKeys({ ...frontierLeaseRange(this.#scope, this.nowMs), limit: EXPIRED_LEASES_MAX })];
    for (const key of keys) {
      const id = (key as unknown as [string, string, number, number])[3];
      const entry = this.entry(id);
      if (entry === undefined) throw new SeenStoreError('STORE_CORRUPT', `frontier lease ${JSON.stringify(key)} of an entry that is not there`);
      this.unlease(id, entry);
    }
  }

  /** Ids of up to `limit` entries of a queue due by now, in take order. */
  dueIds(queue: string, limit: number): number[] {
    const ids: number[] = [];
    if (limit <= 0) return ids;
    for (const key of this.#db.getKeys({ ...frontierWaitRange(this.#scope, queue, this.nowMs), limit })) {
      ids.push((key as unknown as [string, string, string, number, number])[4]);
    }
    return ids;
  }

  /**
   * Ready queues by now for which `accept` is true, at most `limit` of them, in take order
   * (politeness.ts's compareReady, which the ready key encodes).
   */
  readyQueues(limit: number, accept: (queue: string) => boolean): string[] {
    const found: string[] = [];
    if (limit <= 0) return found;
    for (const key of this.#db.getKeys(frontierReadyRange(this.#scope, this.nowMs))) {
      const queue = (key as unknown as [string, string, number, number, string])[4];
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

  putOwner(owner: string): void {
    this.#db.putSync(frontierOwnerKey(this.#scope, owner), this.#env.encodeRecord({ v: 1, lastTakeMs: this.nowMs }));
  }

  /** Every queue record of the scope loaded to be re-indexed (after a change of the default delay or in-flight limit). */
  touchQueues(keys: Iterable<string>): void {
    for (const key of keys) this.queue(key);
  }

  /** Ids of every entry of a queue: waiting (in take order), then leased. */
  queueIds(queue: string): number[] {
    const ids: number[] = [];
    for (const key of this.#db.getKeys(frontierWaitRange(this.#scope, queue, Infinity))) ids.push((key as unknown as [string, string, string, number, number])[4]);
    for (const id of this.leasedIds()) if (this.entry(id)?.queue === queue) ids.push(id);
    return ids;
  }

  /** Ids of every leased entry, the leases that ran out included. */
  leasedIds(): number[] {
    return [...this.#db.getKeys(frontierLeaseRange(this.#scope, Infinity))].map((key) => (key as unknown as [string, string, number, number])[3]);
  }

  /** Removes a queue's record and settings (its entries removed first). */
  dropQueue(key: string): void {
    const slot = this.#queues.get(key);
    if (slot === undefined) return;
    this.#index(key, slot);
    this.#db.removeSync(frontierQueueKey(this.#scope, key));
    this.#queues.delete(key);
  }

  /** Writes what changed: entries, queues (moved in the ready and non-empty indexes), the state. */
  settle(): void {
    for (const id of this.#dirtyEntries) this.#db.putSync(frontierEntryKey(this.#scope, id), this.#env.encodeRecord(this.#entries.get(id)!));
    this.#dirtyEntries.clear();
    for (const [key, slot] of this.#queues) {
      if (!slot.dirty) continue;
      this.#index(key, slot);
      slot.dirty = false;
    }
    if (this.#state !== undefined) this.#db.putSync(frontierStateKey(this.#scope), this.#env.encodeRecord(this.#state));
  }

  #index(key: string, slot: QueueSlot): void {
    const queue = slot.record;
    const heldUrls = queue.waiting + queue.leased > 0;
    if (heldUrls !== slot.heldUrls) {
      if (heldUrls) this.#db.putSync(frontierNonEmptyKey(this.#scope, key), MARK);
      else this.#db.removeSync(frontierNonEmptyKey(this.#scope, key));
      this.state.queues += heldUrls ? 1 : -1;
      slot.heldUrls = heldUrls;
    }
    if (queue.waiting === 0) delete queue.firstDueMs;
    else if (slot.firstDueStale || queue.firstDueMs === undefined) queue.firstDueMs = this.#firstDueMs(key);
    slot.firstDueStale = false;
    const readyAt = readyAtMs(queue, queue.firstDueMs, this.state.settings.delayMs, this.room(queue));
    const takeMs = queue.lastTakeMs ?? NEVER_TAKEN_MS;
    if (readyAt !== queue.readyAtMs || (readyAt !== undefined && takeMs !== queue.indexedTakeMs)) {
      if (queue.readyAtMs !== undefined) this.#db.removeSync(frontierReadyKey(this.#scope, queue.readyAtMs, queue.indexedTakeMs ?? NEVER_TAKEN_MS, key));
      if (readyAt === undefined) {
        delete queue.readyAtMs;
        delete queue.indexedTakeMs;
      } else {
        this.#db.putSync(frontierReadyKey(this.#scope, readyAt, takeMs, key), MARK);
        queue.readyAtMs = readyAt;
        queue.indexedTakeMs = takeMs;
      }
    }
    this.#db.putSync(frontierQueueKey(this.#scope, key), this.#env.encodeRecord(queue));
  }

  /** The due time of the queue's first entry not leased (the queue has one). */
  #firstDueMs(key: string): number {
    for (const k of this.#db.getKeys({ ...frontierWaitRange(this.#scope, key, Infinity), limit: 1 })) {
      return (k as unknown as [string, string, string, number, number])[3];
    }
    throw new SeenStoreError('STORE_CORRUPT', `frontier queue ${this.#scope}/${JSON.stringify(key)} counts waiting URLs it does not hold`);
  }

  /** Entry `id` of `queue` joins the waiting index, due at `dueMs`. */
  #addWaiting(queue: string, dueMs: number, id: number): void {
    const record = this.queue(queue);
    this.#db.putSync(frontierWaitKey(this.#scope, queue, dueMs, id), MARK);
    record.waiting++;
    if (record.firstDueMs === undefined || dueMs < record.firstDueMs) record.firstDueMs = dueMs;
  }

  /** Entry `id` of `queue` leaves the waiting index; when it may have been the first, settle looks the first up again. */
  #removeWaiting(queue: string, dueMs: number, id: number): void {
    const record = this.queue(queue);
    this.#db.removeSync(frontierWaitKey(this.#scope, queue, dueMs, id));
    record.waiting--;
    if (record.firstDueMs === undefined || dueMs <= record.firstDueMs) this.#queues.get(queue)!.firstDueStale = true;
  }

  #load(key: string, record: QueueRecord): QueueSlot {
    const slot: QueueSlot = { record, heldUrls: record.waiting + record.leased > 0, dirty: false, firstDueStale: false };
    this.#queues.set(key, slot);
    return slot;
  }

  #put(id: number, entry: EntryRecord): void {
    this.#entries.set(id, entry);
    this.#dirtyEntries.add(id);
  }
}
