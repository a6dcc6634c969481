import { SeenStoreError } from '../../errors.js';
import type { EntryPage, FrontierEntry, FrontierSettings, FrontierStats, QueueStats, UrlStatus } from '../backend.js';
import type { StoreEnv } from './env.js';
import {
  frontierEntryKey, frontierLeaseRange, frontierNonEmptyRange, frontierQueueKey, frontierStateKey, frontierTagRange,
  frontierUrlRange,
} from './keys.js';
import { createdMsOf, readEntry, readOwner, readQueue, readState, urlHash, type EntryRecord, type FrontierState, type QueueRecord } from './frontier-records.js';
import type { FrontierDb } from './frontier-txn.js';
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
  #lapsed: Lapsed | undefined;

  constructor(env: StoreEnv, db: FrontierDb, scope: string, nowMs: number) {
    this.#env = env;
    this.#db = db;
    this.#scope = scope;
    this.#nowMs = nowMs;
  }

  state(): FrontierState {
    return readState(this.#env, this.#db.getBinary(frontierStateKey(this.#scope)), this.#scope);
  }

  stats(): FrontierStats {
    const state = this.state();
    const leased = state.leased - this.#lapsedLeases().total;
    return { pending: state.entries - leased, leased, done: state.done, failed: state.failed ?? 0, queues: state.queues };
  }

  queue(key: string): QueueStats | undefined {
    const bytes = this.#db.getBinary(frontierQueueKey(this.#scope, key));
    return bytes === undefined ? undefined : this.#queueStats(key, readQueue(this.#env, bytes, this.#scope, key), this.state().settings);
  }

  queues(after: string | undefined, limit: number): QueueStats[] {
    const settings = this.state().settings;
    const out: QueueStats[] = [];
    for (const key of this.#db.getKeys({ ...frontierNonEmptyRange(this.#scope, after), limit })) {
      const queue = (key as unknown as [string, string, string])[2];
      const bytes = this.#db.getBinary(frontierQueueKey(this.#scope, queue));
      if (bytes === undefined) throw new SeenStoreError('STORE_CORRUPT', `frontier queue ${this.#scope}/${JSON.stringify(queue)} is listed but has no record`);
      out.push(this.#queueStats(queue, readQueue(this.#env, bytes, this.#scope, queue), settings));
    }
    return out;
  }

  urlStatus(url: string): UrlStatus | undefined {
    for (const key of this.#db.getKeys(frontierUrlRange(this.#scope, urlHash(url)))) {
      const id = (key as unknown as [string, string, number, number])[3];
      const entry = this.#entry(id);
      if (entry?.url !== url) continue;
      const now = this.#nowMs;
      const state = entry.leaseUntilMs > now ? 'leased' : entry.dueMs > now ? 'scheduled' : 'waiting';
      return { id: String(id), queue: entry.queue, state, atMs: state === 'leased' ? entry.leaseUntilMs : entry.dueMs, attempts: entry.attempts, epoch: entry.epoch, createdMs: createdMsOf(entry) };
    }
    return undefined;
  }

  owners(sinceMs: number): string[] {
    const out: string[] = [];
    for (const { key, value } of this.#db.getRange(frontierTagRange(this.#scope, 'o'))) {
      const owner = (key as unknown as [string, string, string])[2];
      if (readOwner(this.#env, value, this.#scope, owner).lastTakeMs >= sinceMs) out.push(owner);
    }
    return out;
  }

  /** A page of entries in id order after `afterId`, of one queue or all (a queue's are found by scanning: ListURLs of one queue is rare). */
  entries(afterId: number, limit: number, queue: string | undefined): EntryPage {
    const entries: FrontierEntry[] = [];
    const range = frontierTagRange(this.#scope, 'e');
    for (const { key, value } of this.#db.getRange({ ...range, start: frontierEntryKey(this.#scope, afterId + 1) })) {
      const id = (key as unknown as [string, string, number])[2];
      const entry = readEntry(this.#env, value, this.#scope, id);
      if (queue !== undefined && entry.queue !== queue) continue;
      if (entries.length === limit) return { entries, cursor: entries[entries.length - 1]!.id };
      const now = this.#nowMs;
      const state = entry.leaseUntilMs > now ? 'leased' : entry.dueMs > now ? 'scheduled' : 'waiting';
      entries.push({ id: String(id), url: entry.url, queue: entry.queue, state, atMs: state === 'leased' ? entry.leaseUntilMs : entry.dueMs, createdMs: createdMsOf(entry), ...(entry.data === undefined ? {} : { data: entry.data }) });
    }
    return { entries };
  }

  forEachUrl(onBatch: (urls: string[]) => void): void {
    let batch: string[] = [];
    for (const { key, value } of this.#db.getRange(frontierTagRange(this.#scope, 'e'))) {
      batch.push(readEntry(this.#env, value, this.#scope, (key as unknown as [string, string, number])[2]).url);
      if (batch.length < LIST_BATCH_URLS) continue;
      onBatch(batch);
      batch = [];
    }
    if (batch.length > 0) onBatch(batch);
  }

  #queueStats(key: string, queue: QueueRecord, settings: FrontierSettings): QueueStats {
    const lapsed = this.#lapsedLeases().byQueue.get(key);
    const leased = queue.leased - (lapsed?.count ?? 0);
    const waiting = queue.waiting + queue.leased - leased;
    const firstDueMs = Math.min(lapsed?.firstDueMs ?? Infinity, queue.firstDueMs ?? Infinity);
    const room = queueRoom({ ...queue, leased }, settings.maxInFlightPerQueue);
    const readyAt = readyAtMs(queue, firstDueMs === Infinity ? undefined : firstDueMs, settings.delayMs, room);
    return {
      key, waiting, leased, completed: queue.completed, blockedUntilMs: queue.blockedUntilMs,
      ...(queue.delayMs === undefined ? {} : { delayMs: queue.delayMs }),
      ...(queue.crawlLimit === undefined ? {} : { crawlLimit: queue.crawlLimit }),
      ...(readyAt === undefined ? {} : { readyAtMs: readyAt }),
    };
  }

  #lapsedLeases(): Lapsed {
    if (this.#lapsed !== undefined) return this.#lapsed;
    const lapsed: Lapsed = { total: 0, byQueue: new Map() };
    for (const key of this.#db.getKeys(frontierLeaseRange(this.#scope, this.#nowMs))) {
      const entry = this.#entry((key as unknown as [string, string, number, number])[3]);
      if (entry === undefined) continue;
      const queue = lapsed.byQueue.get(entry.queue) ?? { count: 0, firstDueMs: Infinity };
      queue.count++;
      queue.firstDueMs = Math.min(queue.firstDueMs, entry.dueMs);
      lapsed.byQueue.set(entry.queue, queue);
      lapsed.total++;
    }
    this.#lapsed = lapsed;
    return lapsed;
  }

  #entry(id: number): EntryRecord | undefined {
    const bytes = this.#db.getBinary(frontierEntryKey(this.#scope, id));
    return bytes === undefined ? undefined : readEntry(this.#env, bytes, this.#scope, id);
  }
}
