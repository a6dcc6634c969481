import { entryState } from '../entry-state.js';
import { assert } from '../../errors.js';
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
  type FrontierEntry,
} from '../backend.js';
import { parseFrontierId } from '../frontier-id.js';
import { compareKeys, compareReady, queueRoom, readyAtMs, takeAllowance } from '../politeness.js';

/** One queued URL: waiting from `dueMs` on; leased while `leaseUntilMs` is in the future. */
interface Entry {
  readonly id: number;
  readonly url: string;
  queue: string;
  readonly epoch: number;
  dueMs: number;
  leaseUntilMs: number;
  attempts: number;
  owner: string | undefined;
  data: unknown;
  readonly createdMs: number;
}

/** A queue's entries (in the order they were queued) and its politeness state. */
interface Queue {
  readonly key: string;
  readonly entries: Set<Entry>;
  completed: number;
  delayMs: number | undefined;
  blockedUntilMs: number;
  crawlLimit: number | undefined;
  /** When take last handed the queue out; -Infinity before. */
  lastTakeMs: number;
}

/**
 * A scope's frontier in memory, the reference for the other drivers: each rule of Frontier
 * (backend.ts) is written here the plainest way. It scans every queue per take (the stored drivers
 * keep an index of ready times instead); a frontier of a process's lifetime does not need one.
 */
export class MemoryFrontier implements Frontier {
  readonly #entries = new Map<number, Entry>();
  readonly #byUrl = new Map<string, Entry>();
  readonly #queues = new Map<string, Queue>();
  readonly #owners = new Map<string, number>();
  readonly #now: () => number;
  #settings: FrontierSettings = DEFAULT_FRONTIER_SETTINGS;
  #nextId = 1;
  /** Whether the queue key was pinned (pinnedSettings): configure no longer changes it. */
  #queueKeyPinned = false;
  #done = 0;
  #failed = 0;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Queues the URLs whose answer is true, in the add's step. */
  enqueue(epoch: number, items: QueueItems, answers: readonly boolean[]): void {
    const now = this.#now();
    items.urls.forEach((url, i) => {
      if (answers[i]) this.#insert(url, items.queues[i]!, epoch, now, items.data?.[i]);
    });
  }

  async take(request: TakeRequest): Promise<LeasedUrl[]> {
    const now = this.#now();
    if (request.owner !== undefined) this.#owners.set(request.owner, now);
    const ready: Array<{ queue: Queue; key: string; readyAtMs: number; lastTakeMs: number }> = [];
    for (const queue of this.#queues.values()) {
      if (request.queue !== undefined && queue.key !== request.queue) continue;
      const readyAt = this.#readyAt(queue, now);
      if (readyAt !== undefined && readyAt <= now)
        ready.push({ queue, key: queue.key, readyAtMs: readyAt, lastTakeMs: queue.lastTakeMs });
    }
    ready.sort(compareReady);
    const out: LeasedUrl[] = [];
    let queues = 0;
    for (const { queue } of ready) {
      if (out.length >= request.count || (request.maxQueues > 0 && queues >= request.maxQueues)) break;
      if (request.owns !== undefined && !request.owns(queue.key)) continue;
      const room = takeAllowance(request.perQueue, request.count - out.length, this.#room(queue, now));
      const due = [...queue.entries]
        .filter((entry) => entry.leaseUntilMs <= now && entry.dueMs <= now)
        .sort(byDue)
        .slice(0, room);
      for (const entry of due) {
        entry.leaseUntilMs = now + request.leaseMs;
        entry.attempts++;
        entry.owner = request.owner;
        out.push(leased(entry));
      }
      queue.lastTakeMs = now;
      queues++;
    }
    return out;
  }

  async done(ids: readonly string[], refetchAtMs?: readonly number[], failed = false): Promise<number> {
    let n = 0;
    ids.map(parseFrontierId).forEach((id, i) => {
      const entry = this.#entries.get(id);
      if (entry === undefined) return;
      n++;
      this.#finish(entry, refetchAtMs?.[i] ?? 0, failed);
    });
    return n;
  }

  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    assert(
      data === undefined || data.length === ids.length,
      'release: one payload per id (ScopeFrontier.release checks)',
    );
    const now = this.#now();
    let n = 0;
    ids.map(parseFrontierId).forEach((id, i) => {
      const entry = this.#entries.get(id);
      if (entry === undefined || entry.leaseUntilMs <= now) return;
      unlease(entry);
      if (data?.[i] !== undefined) entry.data = data[i];
      n++;
    });
    return n;
  }

  async reclaim(owner: string): Promise<number> {
    const now = this.#now();
    let n = 0;
    for (const entry of this.#entries.values()) {
      if (entry.owner !== owner || entry.leaseUntilMs <= now) continue;
      unlease(entry);
      n++;
    }
    return n;
  }

  async schedule(items: QueueItems, atMs: readonly number[]): Promise<number> {
    let waiting = 0;
    items.urls.forEach((url, i) => {
      const at = atMs[i]!;
      const entry = this.#byUrl.get(url);
      if (at === 0) {
        if (entry !== undefined) this.#finish(entry, 0);
        return;
      }
      waiting++;
      if (entry === undefined) {
        this.#insert(url, items.queues[i]!, 0, at, items.data?.[i]);
        return;
      }
      this.#move(entry, items.queues[i]!);
      entry.dueMs = at;
      unlease(entry);
      if (items.data?.[i] !== undefined) entry.data = items.data[i];
    });
    return waiting;
  }

  async urlStatus(url: string): Promise<UrlStatus | undefined> {
    const entry = this.#byUrl.get(url);
    if (entry === undefined) return undefined;
    return {
      id: String(entry.id),
      queue: entry.queue,
      ...entryState(entry.leaseUntilMs, entry.dueMs, this.#now()),
      attempts: entry.attempts,
      epoch: entry.epoch,
      createdMs: entry.createdMs,
    };
  }

  async settings(): Promise<FrontierSettings> {
    return this.#settings;
  }

  async pinnedSettings(): Promise<FrontierSettings> {
    this.#queueKeyPinned = true;
    return this.#settings;
  }

  async configure(change: Partial<FrontierSettings>): Promise<FrontierSettings> {
    if (
      change.queueKey !== undefined &&
      change.queueKey !== this.#settings.queueKey &&
      (this.#nextId > 1 || this.#queueKeyPinned)
    ) {
      throw queueKeyFixedError(this.#settings.queueKey);
    }
    this.#settings = { ...this.#settings, ...change };
    return this.#settings;
  }

  async setQueue(key: string, change: QueueChange): Promise<void> {
    const queue = this.#queue(key);
    if (change.delayMs !== undefined) queue.delayMs = change.delayMs ?? undefined;
    if (change.blockedUntilMs !== undefined) queue.blockedUntilMs = change.blockedUntilMs;
    if (change.crawlLimit !== undefined) queue.crawlLimit = change.crawlLimit ?? undefined;
  }

  async queues(options: { readonly after?: string; readonly limit: number }): Promise<QueueStats[]> {
    const now = this.#now();
    const after = options.after;
    return [...this.#queues.values()]
      .filter((queue) => queue.entries.size > 0 && (after === undefined || compareKeys(queue.key, after) > 0))
      .sort((a, b) => compareKeys(a.key, b.key))
      .slice(0, options.limit)
      .map((queue) => this.#stats(queue, now));
  }

  async queue(key: string): Promise<QueueStats | undefined> {
    const queue = this.#queues.get(key);
    return queue === undefined ? undefined : this.#stats(queue, this.#now());
  }

  async deleteQueue(key: string): Promise<number> {
    const queue = this.#queues.get(key);
    if (queue === undefined) return 0;
    const held = queue.entries.size;
    for (const entry of queue.entries) this.#remove(entry);
    this.#queues.delete(key);
    return held;
  }

  async clear(options: { readonly completed?: boolean } = {}): Promise<number> {
    const n = this.#entries.size;
    if (options.completed === true) [this.#done, this.#failed] = [0, 0];
    this.#entries.clear();
    this.#byUrl.clear();
    this.#queues.clear();
    return n;
  }

  async owners(sinceMs: number): Promise<string[]> {
    return [...this.#owners].filter(([, lastMs]) => lastMs >= sinceMs).map(([owner]) => owner);
  }

  async stats(): Promise<FrontierStats> {
    const now = this.#now();
    let leased = 0;
    for (const entry of this.#entries.values()) if (entry.leaseUntilMs > now) leased++;
    let queues = 0;
    for (const queue of this.#queues.values()) if (queue.entries.size > 0) queues++;
    return { pending: this.#entries.size - leased, leased, done: this.#done, failed: this.#failed, queues };
  }

  async entries(options: {
    readonly cursor?: string;
    readonly limit: number;
    readonly queue?: string;
  }): Promise<EntryPage> {
    const now = this.#now();
    const after = options.cursor === undefined ? 0 : Number(options.cursor);
    const source =
      options.queue === undefined
        ? this.#entries.values()
        : [...(this.#queues.get(options.queue)?.entries ?? [])].sort((a, b) => a.id - b.id);
    const entries: FrontierEntry[] = [];
    for (const entry of source) {
      if (entry.id <= after) continue;
      if (entries.length === options.limit) return { entries, cursor: String(entries[entries.length - 1]!.id) };
      entries.push({
        id: String(entry.id),
        url: entry.url,
        queue: entry.queue,
        ...entryState(entry.leaseUntilMs, entry.dueMs, now),
        createdMs: entry.createdMs,
        ...(entry.data === undefined ? {} : { data: entry.data }),
      });
    }
    return { entries };
  }

  async purge(ids: readonly string[], beforeMs: number): Promise<number> {
    let n = 0;
    for (const id of ids) {
      const entry = this.#entries.get(parseFrontierId(id));
      if (entry === undefined || entry.createdMs >= beforeMs) continue;
      this.#remove(entry);
      n++;
    }
    return n;
  }

  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    onBatch([...this.#entries.values()].map((entry) => entry.url));
  }

  /** When take may next hand the queue out, or undefined when nothing in it could be. */
  #readyAt(queue: Queue, now: number): number | undefined {
    const room = this.#room(queue, now);
    if (room === 0) return undefined;
    let dueMs = Infinity;
    for (const entry of queue.entries) if (entry.leaseUntilMs <= now && entry.dueMs < dueMs) dueMs = entry.dueMs;
    const lastTakeMs = queue.lastTakeMs === -Infinity ? undefined : queue.lastTakeMs;
    return readyAtMs(
      { lastTakeMs, delayMs: queue.delayMs, blockedUntilMs: queue.blockedUntilMs },
      dueMs === Infinity ? undefined : dueMs,
      this.#settings.delayMs,
      room,
    );
  }

  /** How many more URLs of the queue may be out on lease (politeness.ts's queueRoom). */
  #room(queue: Queue, now: number): number {
    let leased = 0;
    for (const entry of queue.entries) if (entry.leaseUntilMs > now) leased++;
    return queueRoom(
      { leased, completed: queue.completed, crawlLimit: queue.crawlLimit },
      this.#settings.maxInFlightPerQueue,
    );
  }

  #stats(queue: Queue, now: number): QueueStats {
    let leased = 0;
    for (const entry of queue.entries) if (entry.leaseUntilMs > now) leased++;
    const readyAtMs = this.#readyAt(queue, now);
    return {
      key: queue.key,
      waiting: queue.entries.size - leased,
      leased,
      completed: queue.completed,
      blockedUntilMs: queue.blockedUntilMs,
      ...(queue.delayMs === undefined ? {} : { delayMs: queue.delayMs }),
      ...(queue.crawlLimit === undefined ? {} : { crawlLimit: queue.crawlLimit }),
      ...(readyAtMs === undefined ? {} : { readyAtMs }),
    };
  }

  #insert(url: string, key: string, epoch: number, dueMs: number, data: unknown): void {
    const entry: Entry = {
      id: this.#nextId++,
      url,
      queue: key,
      epoch,
      dueMs,
      leaseUntilMs: 0,
      attempts: 0,
      owner: undefined,
      data,
      createdMs: this.#now(),
    };
    this.#entries.set(entry.id, entry);
    this.#byUrl.set(url, entry);
    this.#queue(key).entries.add(entry);
  }

  /** Done: the entry leaves (or waits for its refetch time), and counts as completed in its queue. */
  #finish(entry: Entry, refetchAtMs: number, failed = false): void {
    this.#queue(entry.queue).completed++;
    if (failed) this.#failed++;
    else this.#done++;
    if (refetchAtMs > 0) {
      entry.dueMs = refetchAtMs;
      entry.attempts = 0;
      unlease(entry);
    } else {
      this.#remove(entry);
    }
  }

  #remove(entry: Entry): void {
    this.#entries.delete(entry.id);
    this.#byUrl.delete(entry.url);
    this.#queues.get(entry.queue)?.entries.delete(entry);
  }

  #move(entry: Entry, key: string): void {
    if (entry.queue === key) return;
    this.#queues.get(entry.queue)?.entries.delete(entry);
    entry.queue = key;
    this.#queue(key).entries.add(entry);
  }

  #queue(key: string): Queue {
    let queue = this.#queues.get(key);
    if (queue === undefined) {
      queue = {
        key,
        entries: new Set(),
        completed: 0,
        delayMs: undefined,
        blockedUntilMs: 0,
        crawlLimit: undefined,
        lastTakeMs: -Infinity,
      };
      this.#queues.set(key, queue);
    }
    return queue;
  }
}

function leased(entry: Entry): LeasedUrl {
  const { url, queue, epoch, attempts, leaseUntilMs, data } = entry;
  return { id: String(entry.id), url, queue, epoch, attempts, leaseUntilMs, ...(data === undefined ? {} : { data }) };
}

function byDue(a: Entry, b: Entry): number {
  return a.dueMs - b.dueMs || a.id - b.id;
}

function unlease(entry: Entry): void {
  entry.leaseUntilMs = 0;
  entry.owner = undefined;
}
