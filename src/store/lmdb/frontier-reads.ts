import { entryState } from '../entry-state.js';
import { SeenStoreError } from '../../errors.js';
import type { EntryPage, FrontierEntry, FrontierSettings, FrontierStats, QueueStats, UrlStatus } from '../backend.js';
import type { StoreEnv } from './env.js';
import { FrontierLookup, type FrontierDb, type Found } from './frontier-lookup.js';
import {
  formatId,
  parseId,
  readLocation,
  readOwner,
  readQueue,
  readState,
  type FrontierState,
  type QueueRecord,
} from './frontier-records.js';
import { queueRoom, readyAtMs } from '../politeness.js';

/** URLs per batch that forEachUrl hands over. */
const LIST_BATCH_URLS = 10_000;

/** Leases that ran out but no write has given back yet, per queue: reads count their entries as waiting. */
interface Lapsed {
  total: number;
  readonly byQueue: Map<string, { count: number; firstDueMs: number }>;
}

/**
 * The frontier's reads, outside a write transaction: what a write would find once it gave back the
 * leases that ran out (Frontier's rules count an entry whose lease ended as waiting at once).
 */
export class FrontierReader {
  readonly #env: StoreEnv;
  readonly #db: FrontierDb;
  readonly #scope: string;
  readonly #nowMs: number;
  readonly #lookup: FrontierLookup;
  #lapsed: Lapsed | undefined;

  constructor(env: StoreEnv, db: FrontierDb, scope: string, prefix: Buffer, nowMs: number) {
    this.#env = env;
    this.#db = db;
    this.#scope = scope;
    this.#nowMs = nowMs;
    this.#lookup = new FrontierLookup(env, db, scope, prefix);
  }

  state(): FrontierState {
    return readState(this.#env, this.#db.getBinary(this.#lookup.keys.state()), this.#scope);
  }

  stats(): FrontierStats {
    const state = this.state();
    const leased = state.leased - this.#lapsedLeases().total;
    return { pending: state.entries - leased, leased, done: state.done, failed: state.failed, queues: state.queues };
  }

  queue(key: string): QueueStats | undefined {
    const record = this.#queueRecord(key);
    return record === undefined ? undefined : this.#queueStats(key, record, this.state().settings);
  }

  queues(after: string | undefined, limit: number): QueueStats[] {
    const settings = this.state().settings;
    const out: QueueStats[] = [];
    for (const key of this.#db.getKeys({ ...this.#lookup.keys.nonEmptyRange(after), limit })) {
      const name = this.#lookup.parts.text(key as Buffer);
      const record = this.#queueRecord(name);
      if (record === undefined)
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `frontier queue ${this.#scope}/${JSON.stringify(name)} is listed but has no record`,
        );
      out.push(this.#queueStats(name, record, settings));
    }
    return out;
  }

  urlStatus(url: string): UrlStatus | undefined {
    const found = this.#lookup.byUrl(url);
    if (found === undefined) return undefined;
    const { entry } = found;
    return {
      id: formatId(found.ref),
      queue: entry.queue,
      ...entryState(entry.leaseUntilMs, entry.dueMs, this.#nowMs),
      attempts: entry.attempts,
      epoch: entry.epoch,
      createdMs: entry.createdMs,
    };
  }

  owners(sinceMs: number): string[] {
    const out: string[] = [];
    for (const { key, value } of this.#db.getRange(this.#lookup.keys.tagRange('o'))) {
      const owner = this.#lookup.parts.text(key as Buffer);
      if (readOwner(this.#env, value, this.#scope, owner).lastTakeMs >= sinceMs) out.push(owner);
    }
    return out;
  }

  /**
   * A page of entries, of one queue or all, in the order of their ids' hashes (the location
   * index: an entry's place there never changes while it is queued, so a listing across pages
   * misses none that stayed, whatever was taken or rescheduled meanwhile). The cursor is the last
   * id listed. A queue's entries are picked out by the queue number each location holds.
   */
  entries(cursor: string | undefined, limit: number, queue: string | undefined): EntryPage {
    const entries: FrontierEntry[] = [];
    let queueNo: number | undefined;
    if (queue !== undefined) {
      queueNo = this.#queueRecord(queue)?.no;
      if (queueNo === undefined) return { entries };
    }
    const after = cursor === undefined ? undefined : parseId(cursor);
    const keys = this.#lookup.keys;
    const range = keys.locationsAfter(
      after === undefined ? undefined : keys.copy(keys.location(after.hash, after.seq)),
    );
    for (const { key, value } of this.#db.getRange(range)) {
      const { hash, seq } = this.#lookup.parts.location(key as Buffer);
      if (queueNo !== undefined && readLocation(value, seq, `frontier location ${this.#scope}/${seq}`).q !== queueNo)
        continue;
      const found = this.#lookup.byRef({ seq, hash });
      if (found === undefined)
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `frontier location ${this.#scope}/${seq} names an entry that is not there`,
        );
      if (entries.length === limit) return { entries, cursor: entries[entries.length - 1]!.id };
      entries.push(this.#listed(found));
    }
    return { entries };
  }

  /** Every queued URL, waiting ones in queue order, then leased ones. */
  forEachUrl(onBatch: (urls: string[]) => void): void {
    let batch: string[] = [];
    const add = (found: Found): void => {
      batch.push(found.entry.url);
      if (batch.length < LIST_BATCH_URLS) return;
      onBatch(batch);
      batch = [];
    };
    for (const { key, value } of this.#db.getRange(this.#lookup.keys.tagRange('w')))
      this.#lookup.entriesOf(this.#lookup.blockOf(key as Buffer, value)).forEach(add);
    for (const key of this.#db.getKeys(this.#lookup.keys.tagRange('l')))
      add(this.#lookup.leased(this.#lookup.parts.leased(key as Buffer))!);
    if (batch.length > 0) onBatch(batch);
  }

  #listed({ ref, entry }: Found): FrontierEntry {
    return {
      id: formatId(ref),
      url: entry.url,
      queue: entry.queue,
      ...entryState(entry.leaseUntilMs, entry.dueMs, this.#nowMs),
      createdMs: entry.createdMs,
      ...(entry.data === undefined ? {} : { data: entry.data }),
    };
  }

  #queueRecord(name: string): QueueRecord | undefined {
    const bytes = this.#db.getBinary(this.#lookup.keys.queue(name));
    if (bytes === undefined) return undefined;
    const record = readQueue(this.#env, bytes, this.#scope, name);
    this.#lookup.knowQueue(record.no, name);
    return record;
  }

  #queueStats(key: string, queue: QueueRecord, settings: FrontierSettings): QueueStats {
    const lapsed = this.#lapsedLeases().byQueue.get(key);
    const leased = queue.leased - (lapsed?.count ?? 0);
    const waiting = queue.waiting + queue.leased - leased;
    const firstDueMs = Math.min(lapsed?.firstDueMs ?? Infinity, queue.firstDueMs ?? Infinity);
    const room = queueRoom({ ...queue, leased }, settings.maxInFlightPerQueue);
    const readyAt = readyAtMs(queue, firstDueMs === Infinity ? undefined : firstDueMs, settings.delayMs, room);
    return {
      key,
      waiting,
      leased,
      completed: queue.completed,
      blockedUntilMs: queue.blockedUntilMs,
      ...(queue.delayMs === undefined ? {} : { delayMs: queue.delayMs }),
      ...(queue.crawlLimit === undefined ? {} : { crawlLimit: queue.crawlLimit }),
      ...(readyAt === undefined ? {} : { readyAtMs: readyAt }),
    };
  }

  #lapsedLeases(): Lapsed {
    if (this.#lapsed !== undefined) return this.#lapsed;
    const lapsed: Lapsed = { total: 0, byQueue: new Map() };
    for (const key of this.#db.getKeys(this.#lookup.keys.leaseRange(this.#nowMs))) {
      const found = this.#lookup.leased(this.#lookup.parts.lease(key as Buffer).seq);
      if (found === undefined) continue;
      const { entry } = found;
      const queue = lapsed.byQueue.get(entry.queue) ?? { count: 0, firstDueMs: Infinity };
      queue.count++;
      queue.firstDueMs = Math.min(queue.firstDueMs, entry.dueMs);
      lapsed.byQueue.set(entry.queue, queue);
      lapsed.total++;
    }
    this.#lapsed = lapsed;
    return lapsed;
  }
}
