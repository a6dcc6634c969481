import { SeenStoreError, assert } from '../../errors.js';
import {
  DEFAULT_FRONTIER_SETTINGS,
  queueKeyFixedError,
  type Frontier,
  type FrontierSettings,
  type FrontierStats,
  type LeasedUrl,
  type QueueChange,
  type QueueItems,
  type QueueStats,
  type TakeRequest,
  type UrlStatus,
  type EntryPage,
} from '../backend.js';
import { faultPoint, type FaultPoint } from '../faults.js';
import type { StoreEnv } from './env.js';
import { FrontierReader } from './frontier-reads.js';
import { formatId, parseId, type EntryRecord, type EntryRef } from './frontier-records.js';
import { FrontierTxn } from './frontier-txn.js';
import { takeAllowance } from '../politeness.js';
import { FRONTIER_TAGS, KeyWriter, frontierPrefix } from './frontier-keys.js';

/**
 * Queues the URLs whose answer is true (inside the add's write transaction, after deciding): the
 * entries commit with the batch's journal record, or neither does.
 */
export function queueNew(
  env: StoreEnv,
  scope: string,
  epoch: number,
  items: QueueItems,
  answers: readonly boolean[],
  atMs: number,
): boolean {
  const db = env.frontierDb;
  if (db === undefined)
    throw new SeenStoreError('INTERNAL', 'invariant broken: the frontier database exists before an enqueue writes');
  if (!answers.includes(true)) return false;
  const txn = new FrontierTxn(env, db, scope, atMs);
  const { urls, queues, data } = items;
  for (let i = 0; i < urls.length; i++) if (answers[i]) txn.insert(urls[i]!, queues[i]!, epoch, atMs, data?.[i]);
  txn.settle();
  return true;
}

/**
 * The LMDB backend's frontier of one scope (docs/format.md): entries, queue records and their
 * indexes in the frontier database, every operation one write transaction (serialised across
 * processes, durable when it resolves). take reads the ready index up to now, so its cost grows
 * with what it hands out and the leases that ran out, not with the number of queues.
 */
export class LmdbFrontier implements Frontier {
  readonly #env: StoreEnv;
  readonly #scope: string;
  readonly #clock: () => number;

  constructor(env: StoreEnv, scope: string, clock: () => number) {
    this.#env = env;
    this.#scope = scope;
    this.#clock = clock;
  }

  async take({ count, leaseMs, owner, perQueue, maxQueues, queue, owns }: TakeRequest): Promise<LeasedUrl[]> {
    const taken = this.#write('frontier:take-before-commit', (txn) => {
      txn.expireLeases();
      if (owner !== undefined) txn.putOwner(owner);
      txn.settle();
      const accept = owns ?? (() => true);
      const ready =
        queue === undefined
          ? txn.readyQueues(maxQueues > 0 ? Math.min(maxQueues, count) : count, accept)
          : readyOne(txn, queue, accept);
      const out: LeasedUrl[] = [];
      for (const key of ready) {
        if (out.length >= count) break;
        const record = txn.queue(key);
        for (const { ref, entry } of txn.dueEntries(
          key,
          takeAllowance(perQueue, count - out.length, txn.room(record)),
        )) {
          txn.lease(ref, entry, txn.nowMs + leaseMs, owner);
          out.push(leasedUrl(ref, entry));
        }
        record.lastTakeMs = txn.nowMs;
      }
      return out;
    });
    await this.#env.flushed();
    faultPoint('frontier:take-after-commit');
    return taken;
  }

  async done(ids: readonly string[], refetchAtMs?: readonly number[], failed = false): Promise<number> {
    return this.#eachEntry(ids, (txn, ref, entry, i) => {
      txn.finish(ref, entry, refetchAtMs?.[i] ?? 0, failed);
      return true;
    });
  }

  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    assert(
      data === undefined || data.length === ids.length,
      'release: one payload per id (ScopeFrontier.release checks)',
    );
    return this.#eachEntry(ids, (txn, ref, entry, i) => {
      if (entry.leaseUntilMs === 0) return false;
      txn.unlease(ref, entry);
      if (data?.[i] !== undefined) {
        entry.data = data[i];
        txn.changed(ref);
      }
      return true;
    });
  }

  async reclaim(owner: string): Promise<number> {
    if (this.#env.frontierDb === undefined) return 0;
    return this.#change((txn) => {
      txn.expireLeases();
      let n = 0;
      for (const { ref, entry } of txn.leasedEntries()) {
        if (entry.owner !== owner) continue;
        txn.unlease(ref, entry);
        n++;
      }
      return n;
    });
  }

  async schedule(items: QueueItems, atMs: readonly number[]): Promise<number> {
    return this.#change((txn) => {
      txn.expireLeases();
      let waiting = 0;
      items.urls.forEach((url, i) => {
        const at = atMs[i]!;
        const found = txn.findUrl(url);
        if (at === 0) {
          if (found !== undefined) txn.finish(found.ref, found.entry, 0);
          return;
        }
        waiting++;
        if (found === undefined) {
          txn.insert(url, items.queues[i]!, 0, at, items.data?.[i]);
          return;
        }
        txn.unlease(found.ref, found.entry);
        txn.reschedule(found.ref, found.entry, items.queues[i]!, at);
        if (items.data?.[i] !== undefined) {
          found.entry.data = items.data[i];
          txn.changed(found.ref);
        }
      });
      return waiting;
    });
  }

  async urlStatus(url: string): Promise<UrlStatus | undefined> {
    return this.#read(undefined, (reader) => reader.urlStatus(url));
  }

  async settings(): Promise<FrontierSettings> {
    return this.#read(DEFAULT_FRONTIER_SETTINGS, (reader) => reader.state().settings);
  }

  async pinnedSettings(): Promise<FrontierSettings> {
    // Pinned once, in a write; every later read needs none (a pinned key never changes).
    const pinned = this.#read(undefined, (reader) => {
      const state = reader.state();
      return state.queueKeyPinned === true ? state.settings : undefined;
    });
    if (pinned !== undefined) return pinned;
    return this.#change((txn) => {
      txn.state.queueKeyPinned = true;
      return txn.state.settings;
    });
  }

  async configure(change: Partial<FrontierSettings>): Promise<FrontierSettings> {
    return this.#change((txn) => {
      const state = txn.state;
      const old = state.settings;
      if (
        change.queueKey !== undefined &&
        change.queueKey !== old.queueKey &&
        (state.nextSeq > 1 || state.queueKeyPinned === true)
      ) {
        throw queueKeyFixedError(old.queueKey);
      }
      state.settings = { ...old, ...change };
      // Every queue's ready time depends on the default delay and the in-flight limit.
      if (state.settings.delayMs !== old.delayMs || state.settings.maxInFlightPerQueue !== old.maxInFlightPerQueue) {
        txn.expireLeases();
        txn.touchQueues();
      }
      return state.settings;
    });
  }

  async setQueue(key: string, change: QueueChange): Promise<void> {
    await this.#change((txn) => {
      txn.expireLeases();
      const queue = txn.queue(key);
      if (change.delayMs === null) delete queue.delayMs;
      else if (change.delayMs !== undefined) queue.delayMs = change.delayMs;
      if (change.blockedUntilMs !== undefined) queue.blockedUntilMs = change.blockedUntilMs;
      if (change.crawlLimit === null) delete queue.crawlLimit;
      else if (change.crawlLimit !== undefined) queue.crawlLimit = change.crawlLimit;
    });
  }

  async queues(options: { readonly after?: string; readonly limit: number }): Promise<QueueStats[]> {
    return this.#read([], (reader) => reader.queues(options.after, options.limit));
  }

  async queue(key: string): Promise<QueueStats | undefined> {
    return this.#read(undefined, (reader) => reader.queue(key));
  }

  async deleteQueue(key: string): Promise<number> {
    if (this.#env.frontierDb === undefined) return 0;
    return this.#change((txn) => {
      if (txn.peekQueue(key) === undefined) return 0;
      const entries = txn.queueEntries(key);
      for (const { ref, entry } of entries) txn.remove(ref, entry);
      txn.dropQueue(key);
      return entries.length;
    });
  }

  async clear(options: { readonly completed?: boolean } = {}): Promise<number> {
    if (this.#env.frontierDb === undefined) return 0;
    const db = this.#env.frontierDb;
    return this.#change((txn) => {
      const state = txn.state;
      const held = state.entries;
      const keys = new KeyWriter(frontierPrefix(db, this.#scope, true)!);
      // Owners stay (they are takers, not queued URLs), and so do the settings and the counters.
      for (const tag of FRONTIER_TAGS) {
        if (tag === 's' || tag === 'o') continue;
        for (const key of [...db.getKeys(keys.tagRange(tag))]) db.removeSync(key);
      }
      Object.assign(
        state,
        { entries: 0, leased: 0, queues: 0 },
        options.completed === true ? { done: 0, failed: 0 } : {},
      );
      return held;
    });
  }

  async owners(sinceMs: number): Promise<string[]> {
    return this.#read([], (reader) => reader.owners(sinceMs));
  }

  async stats(): Promise<FrontierStats> {
    return this.#read({ pending: 0, leased: 0, done: 0, failed: 0, queues: 0 }, (reader) => reader.stats());
  }

  async entries(options: {
    readonly cursor?: string;
    readonly limit: number;
    readonly queue?: string;
  }): Promise<EntryPage> {
    return this.#read({ entries: [] }, (reader) => reader.entries(options.cursor, options.limit, options.queue));
  }

  async purge(ids: readonly string[], beforeMs: number): Promise<number> {
    return this.#eachEntry(ids, (txn, ref, entry) => {
      if (entry.createdMs >= beforeMs) return false;
      txn.remove(ref, entry);
      return true;
    });
  }

  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    this.#read(undefined, (reader) => reader.forEachUrl(onBatch));
  }

  /** Applies `change` to each entry of `ids` that is there, in one change; resolves with how many it changed. */
  async #eachEntry(
    ids: readonly string[],
    change: (txn: FrontierTxn, ref: EntryRef, entry: EntryRecord, index: number) => boolean,
  ): Promise<number> {
    const refs = ids.map(parseId);
    return this.#change((txn) => {
      txn.expireLeases();
      let n = 0;
      refs.forEach((ref, i) => {
        const entry = txn.entry(ref);
        if (entry !== undefined && change(txn, ref, entry, i)) n++;
      });
      return n;
    });
  }

  /** A read of what every process committed so far; `empty` when the store has no frontier yet. */
  #read<T>(empty: T, read: (reader: FrontierReader) => T): T {
    const env = this.#env;
    env.refresh();
    const db = env.frontierDb;
    const prefix = db === undefined ? undefined : frontierPrefix(db, this.#scope, false);
    return prefix === undefined ? empty : read(new FrontierReader(env, db!, this.#scope, prefix, this.#clock()));
  }

  /** A change other than take: one write transaction, durable when it resolves. */
  async #change<T>(action: (txn: FrontierTxn) => T): Promise<T> {
    const result = this.#write('frontier:change-before-commit', action);
    await this.#env.flushed();
    return result;
  }

  #write<T>(point: FaultPoint, action: (txn: FrontierTxn) => T): T {
    const env = this.#env;
    const db = env.ensureFrontierDb();
    return env.write(() => {
      const txn = new FrontierTxn(env, db, this.#scope, this.#clock());
      const result = action(txn);
      txn.settle();
      faultPoint(point);
      return result;
    });
  }
}

/** The queue asked for, when it is ready now and accepted. */
function readyOne(txn: FrontierTxn, key: string, accept: (queue: string) => boolean): string[] {
  const queue = txn.peekQueue(key);
  return queue?.readyAtMs !== undefined && queue.readyAtMs <= txn.nowMs && accept(key) ? [key] : [];
}

function leasedUrl(ref: EntryRef, entry: EntryRecord): LeasedUrl {
  const { url, queue, epoch, attempts, leaseUntilMs, data } = entry;
  return { id: formatId(ref), url, queue, epoch, attempts, leaseUntilMs, ...(data === undefined ? {} : { data }) };
}
