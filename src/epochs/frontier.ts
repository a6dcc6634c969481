import { SeenStoreError } from '../errors.js';
import { controlKey, type XxHash } from '../hash/xxhash.js';
import type { EncodedSummary, SummarizeOptions } from '../setdiff/set-difference.js';
import type {
  Backend,
  EntryPage,
  Frontier,
  FrontierEntry,
  FrontierSettings,
  FrontierStats,
  LeasedUrl,
  QueueItems,
  QueueStats,
  UrlStatus,
} from '../store/backend.js';
import { toKey, type NormalizeMode } from '../url/normalize.js';
import { MAX_QUEUE_KEY_LENGTH, QUEUE_KEY_MODES, queueKeyOf, type QueueKeyMode } from '../url/queue-key.js';
import { holdsControlString } from '../url/url-shape.js';
import { OwnerRing } from './owner-ring.js';

export { DEFAULT_FRONTIER_SETTINGS } from '../store/backend.js';
export type { EntryPage, FrontierEntry, FrontierSettings, FrontierStats, LeasedUrl, QueueStats, UrlStatus };

/** A lease's default length: long enough to fetch and parse a page, short enough that a dead crawler's URLs come back soon. */
export const DEFAULT_LEASE_MS = 5 * 60_000;
/** Most URLs one take hands out. */
export const MAX_TAKE = 65_536;
/** Largest payload kept with one queued URL, as JSON text. */
export const MAX_DATA_BYTES = 64 * 1024;
/** Longest delay, block or schedule ahead accepted: 10 years, past which a number is a mistake (seconds for ms). */
const MAX_AHEAD_MS = 10 * 365 * 24 * 3600_000;
/** The queue of a URL that has no host to be polite to (`mailto:`, `data:`), under `host` and `domain` keys. */
export const HOSTLESS_QUEUE = '';
/** An owner name: what a crawler keeps across restarts to take back its own leases. */
const OWNER_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

interface FrontierContext {
  readonly backend: Backend;
  readonly hash: XxHash;
  readonly clock: () => number;
  readonly assertOpen: () => void;
  readonly assertWritable: (doing: string) => void;
}

export interface TakeOptions {
  /** How long the URLs are the taker's (default 5 minutes): past it, unfinished URLs are taken again. */
  readonly leaseMs?: number;
  /**
   * Who takes (1-128 of A-Z a-z 0-9 . _ : -): a crawler that keeps its owner name across restarts
   * gives its dead predecessor's leases back at once with `reclaim(owner)` instead of waiting
   * for them to run out.
   */
  readonly owner?: string;
  /** Most URLs of one queue in this take (default 1). */
  readonly perQueue?: number;
  /** Most queues in this take (default 0: no limit but `count`). */
  readonly maxQueues?: number;
  /** Only URLs of this queue. */
  readonly queue?: string;
  /**
   * Host affinity (needs `owner`): only queues this owner owns on a consistent-hash ring of the
   * live owners (those that took within the lease time), so a host stays with one crawler.
   */
  readonly affinity?: boolean;
}

export interface QueueOptions {
  /** queues[i]: the queue of URL i, instead of the one its URL gives (FrontierSettings.queueKey). */
  readonly queues?: readonly string[];
  /** data[i] is kept with URL i and handed back by take. */
  readonly data?: readonly unknown[];
}

/**
 * A scope's frontier (Scope.frontier()): the URLs that Scope.enqueue found new, and revisits
 * scheduled with `schedule`, wait here in per-host queues until a crawler takes them under a
 * lease and reports them done. `take` hands out a queue only when its politeness allows
 * (docs/frontier.md "Queues and politeness"). Delivery is at least once: a URL whose lease runs out
 * (its crawler died) is taken again, with `attempts` counting the tries; discovery is exactly
 * once (a URL is queued by the add that found it new). Rotating the scope's epoch or pruning
 * epochs leaves queued URLs where they are (docs/frontier.md).
 */
export class ScopeFrontier {
  readonly scope: string;
  readonly #ctx: FrontierContext;
  /** The scope's normalisation (Scope.normalizeMode): whether its keys are URLs. */
  readonly #normalizeMode: () => Promise<NormalizeMode>;

  /** @internal Frontiers come from Scope.frontier(). */
  constructor(ctx: FrontierContext, scope: string, normalizeMode: () => Promise<NormalizeMode>) {
    this.#ctx = ctx;
    this.scope = scope;
    this.#normalizeMode = normalizeMode;
  }

  /** Up to `count` due URLs of ready queues, each leased to the caller; durable when it resolves. */
  async take(count: number, options: TakeOptions = {}): Promise<LeasedUrl[]> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('take from the frontier');
    checkWhole('take count', count, 1, MAX_TAKE);
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    checkWhole('leaseMs', leaseMs, 1, MAX_AHEAD_MS);
    const perQueue = options.perQueue ?? 1;
    checkWhole('perQueue', perQueue, 1, MAX_TAKE);
    const maxQueues = options.maxQueues ?? 0;
    checkWhole('maxQueues', maxQueues, 0, Number.MAX_SAFE_INTEGER);
    if (options.owner !== undefined) checkOwner(options.owner);
    if (options.queue !== undefined) checkQueueKey(options.queue);
    const frontier = await this.#frontier();
    let owns: ((queue: string) => boolean) | undefined;
    if (options.affinity === true) {
      if (options.owner === undefined)
        throw new SeenStoreError('USAGE', 'affinity needs an owner: the ring is of owner names');
      const owner = options.owner;
      const live = await frontier.owners(this.#ctx.clock() - leaseMs);
      const ring = new OwnerRing([...live, owner], this.#ctx.hash);
      owns = (queue) => ring.ownerOf(queue) === owner;
    }
    return frontier.take({
      count,
      leaseMs,
      perQueue,
      maxQueues,
      ...(options.owner === undefined ? {} : { owner: options.owner }),
      ...(options.queue === undefined ? {} : { queue: options.queue }),
      ...(owns === undefined ? {} : { owns }),
    });
  }

  /** Gives back at once every running lease that `owner` took; resolves with how many. */
  async reclaim(owner: string): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('reclaim frontier leases');
    checkOwner(owner);
    return (await this.#frontier()).reclaim(owner);
  }

  /**
   * Finishes URLs by the ids take gave; resolves with how many were still there to finish. With
   * `refetchAtMs` (one time per id, ms since the Unix epoch; 0 for none), those URLs are scheduled
   * to be fetched again then instead of leaving the frontier. With `failed: true` they were given up
   * on (a crawler's failed request): finished all the same, counted in `stats().failed`, not `done`.
   */
  async done(
    ids: readonly string[],
    options: { readonly refetchAtMs?: readonly number[]; readonly failed?: boolean } = {},
  ): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('finish frontier URLs');
    if (!Array.isArray(ids)) throw new TypeError('ids must be an array of strings');
    const refetch = options.refetchAtMs;
    if (refetch !== undefined) checkTimes('refetchAtMs', refetch, ids.length, this.#ctx.clock());
    if (options.failed !== undefined && typeof options.failed !== 'boolean')
      throw new TypeError('failed must be a boolean');
    return (await this.#frontier()).done(ids, refetch, options.failed === true);
  }

  /**
   * Gives leased URLs back before their lease runs out, to be taken again (a crawler that stops
   * early, or retries a failed page later); `data[i]`, when given, replaces what is kept with
   * URL i (a retry count, an error message).
   */
  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('release frontier URLs');
    if (!Array.isArray(ids)) throw new TypeError('ids must be an array of strings');
    return (await this.#frontier()).release(ids, data === undefined ? undefined : checkedData(data, ids.length));
  }

  /**
   * Revisits: URL i waits, not takeable, until `atMs[i]` (ms since the Unix epoch; one time for
   * all when a number), queued before or not; an `atMs` of 0 finishes the URL instead. The URLs
   * are not added to the seen-filter: discovery stays with `enqueue`. Resolves with how many wait.
   * A scope whose keys are URLs refuses one with a control character (INVALID_URL, nothing
   * scheduled), as its adds do.
   */
  async schedule(
    urls: readonly string[],
    atMs: number | readonly number[],
    options: QueueOptions = {},
  ): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('schedule frontier URLs');
    if (!Array.isArray(urls) || urls.some((url) => typeof url !== 'string'))
      throw new TypeError('urls must be an array of strings');
    // Scheduled URLs are not hashed (where an add's URL keys are refused a control character): checked here.
    const control = urls.find((url) => holdsControlString(url, 0, url.length));
    if (control !== undefined && (await this.#normalizeMode()) !== 'none') throw controlKey(control);
    const times = typeof atMs === 'number' ? urls.map(() => atMs) : atMs;
    checkTimes('atMs', times, urls.length, this.#ctx.clock());
    return (await this.#frontier()).schedule(await this.queueItems(urls, options), times);
  }

  /** Where a URL is in the frontier: waiting, scheduled or leased; undefined when it is not queued. */
  async urlStatus(url: string): Promise<UrlStatus | undefined> {
    this.#ctx.assertOpen();
    if (typeof url !== 'string') throw new TypeError('url must be a string');
    return (await this.#frontier()).urlStatus(url);
  }

  async settings(): Promise<FrontierSettings> {
    this.#ctx.assertOpen();
    return (await this.#frontier()).settings();
  }

  /**
   * The queue key that enqueues use, pinned: from now on `configure` refuses to change it, so a
   * caller that computes its URLs' queues itself may keep the key for as long as it runs (the
   * Crawlee manager, URLFrontier's PutURLs). Every enqueue and schedule that derives queues from
   * URLs pins it too.
   */
  async pinnedQueueKey(): Promise<QueueKeyMode> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('pin the queue key');
    return (await (await this.#frontier()).pinnedSettings()).queueKey;
  }

  /** Changes the frontier's default delay, in-flight limit or (before any URL was queued and before an enqueue read it) its queue key. */
  async configure(change: Partial<FrontierSettings>): Promise<FrontierSettings> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('configure the frontier');
    if (change.queueKey !== undefined && !QUEUE_KEY_MODES.includes(change.queueKey)) {
      throw new SeenStoreError(
        'USAGE',
        `queueKey must be one of ${QUEUE_KEY_MODES.join(', ')}, got ${JSON.stringify(change.queueKey)}`,
      );
    }
    if (change.delayMs !== undefined) checkWhole('delayMs', change.delayMs, 0, MAX_AHEAD_MS);
    if (change.maxInFlightPerQueue !== undefined)
      checkWhole('maxInFlightPerQueue', change.maxInFlightPerQueue, 0, MAX_TAKE);
    return (await this.#frontier()).configure(change);
  }

  /** A queue's own delay between two takes (null: the frontier's default again). */
  async setDelay(queue: string, delayMs: number | null): Promise<void> {
    if (delayMs !== null) checkWhole('delayMs', delayMs, 0, MAX_AHEAD_MS);
    await this.#setQueue(queue, { delayMs });
  }

  /** A queue hands out nothing before `untilMs` (ms since the Unix epoch; 0 unblocks): a 429 or 503 with Retry-After (a robots Crawl-delay is setDelay). */
  async blockUntil(queue: string, untilMs: number): Promise<void> {
    checkWhole('untilMs', untilMs, 0, this.#ctx.clock() + MAX_AHEAD_MS);
    await this.#setQueue(queue, { blockedUntilMs: untilMs });
  }

  /** Once `limit` URLs of the queue are completed, it hands out no more (null: no limit). */
  async setCrawlLimit(queue: string, limit: number | null): Promise<void> {
    if (limit !== null) checkWhole('crawl limit', limit, 0, Number.MAX_SAFE_INTEGER);
    await this.#setQueue(queue, { crawlLimit: limit });
  }

  /** Queues that hold URLs, in key order, after `after` (exclusive); at most `limit` (default 1,000). */
  async listQueues(options: { readonly after?: string; readonly limit?: number } = {}): Promise<QueueStats[]> {
    this.#ctx.assertOpen();
    const limit = options.limit ?? 1_000;
    checkWhole('limit', limit, 1, MAX_TAKE);
    if (options.after !== undefined) checkQueueKey(options.after);
    return (await this.#frontier()).queues({ limit, ...(options.after === undefined ? {} : { after: options.after }) });
  }

  /** One queue's counts and settings; undefined when it holds nothing and has no settings. */
  async queue(key: string): Promise<QueueStats | undefined> {
    this.#ctx.assertOpen();
    checkQueueKey(key);
    return (await this.#frontier()).queue(key);
  }

  /** Removes a queue with its URLs and settings; resolves with how many URLs it held. */
  async deleteQueue(key: string): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('delete a frontier queue');
    checkQueueKey(key);
    return (await this.#frontier()).deleteQueue(key);
  }

  /** Removes every queue; resolves with how many URLs they held. `completed`: the count of finished URLs starts again from 0 too. */
  async clear(options: { readonly completed?: boolean } = {}): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('clear the frontier');
    return (await this.#frontier()).clear(options);
  }

  async stats(): Promise<FrontierStats> {
    this.#ctx.assertOpen();
    return (await this.#frontier()).stats();
  }

  /**
   * A page of the frontier's entries (waiting, scheduled, leased) with their queue, due or lease
   * time, creation time and payload, of one queue or all: pass the page's `cursor` back for the
   * next; none comes back with the last. About `limit` (default 1,000) per page. A read.
   */
  async entries(
    options: { readonly cursor?: string; readonly limit?: number; readonly queue?: string } = {},
  ): Promise<EntryPage> {
    this.#ctx.assertOpen();
    const limit = options.limit ?? 1_000;
    checkWhole('limit', limit, 1, MAX_TAKE);
    if (options.queue !== undefined) checkQueueKey(options.queue);
    if (options.cursor !== undefined && typeof options.cursor !== 'string')
      throw new TypeError('cursor must be a string from an earlier page');
    return (await this.#frontier()).entries({
      limit,
      ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      ...(options.queue === undefined ? {} : { queue: options.queue }),
    });
  }

  /**
   * Removes the entries of `ids` (FrontierEntry.id) that were created before `beforeMs`, checked
   * in the same atomic step, without counting them completed (URLFrontier's PurgeURLs); resolves
   * with how many. Their URLs stay seen in the filter.
   */
  async purge(ids: readonly string[], beforeMs: number): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('purge frontier URLs');
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      throw new TypeError('ids must be an array of strings');
    checkWhole('beforeMs', beforeMs, 0, Number.MAX_SAFE_INTEGER);
    if (ids.length === 0) return 0;
    return (await this.#frontier()).purge(ids, beforeMs);
  }

  /**
   * The set-difference summary of the frontier's URLs, waiting and leased (src/setdiff/): the
   * exact set a store holds as records (its Bloom filters cannot list their URLs). URLs that
   * are not usable keys in `options.normalize` are left out.
   */
  async setdiffSummary(options: SummarizeOptions = {}): Promise<EncodedSummary> {
    this.#ctx.assertOpen();
    const frontier = await this.#frontier();
    const hash = this.#ctx.hash;
    // Loaded here: src/setdiff/ and its file codecs are not needed by any other step of a scope.
    const { SetSummaryBuilder, encodeSetSummary } = await import('../setdiff/set-difference.js');
    const builder = new SetSummaryBuilder(hash, options);
    const mode = options.normalize ?? 'none';
    await frontier.forEachUrl((urls) => builder.add(urls.filter((url) => toKey(url, mode) !== undefined)));
    return encodeSetSummary(hash, builder.finish());
  }

  /** @internal The queue items of URLs: their queues as given, or by the frontier's queue key. */
  async queueItems(urls: readonly string[], options: QueueOptions): Promise<QueueItems> {
    let queues = options.queues;
    if (queues === undefined && urls.length === 0) queues = [];
    if (queues === undefined) {
      // Pinned: a configure by another process between this read and the add cannot change the key these queues come from.
      const mode = (await (await this.#frontier()).pinnedSettings()).queueKey;
      queues = urls.map((url) => queueOf(url, mode));
    } else {
      if (!Array.isArray(queues) || queues.length !== urls.length)
        throw new SeenStoreError('USAGE', `queues must be an array of ${urls.length} queue keys, one per URL`);
      queues.forEach(checkQueueKey);
    }
    return { urls, queues, ...(options.data === undefined ? {} : { data: checkedData(options.data, urls.length) }) };
  }

  async #setQueue(queue: string, change: Parameters<Frontier['setQueue']>[1]): Promise<void> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('change a frontier queue');
    checkQueueKey(queue);
    await (await this.#frontier()).setQueue(queue, change);
  }

  async #frontier() {
    return this.#ctx.backend.frontier(this.scope);
  }
}

/** The queue of a URL by the frontier's queue key; URLs without a host share HOSTLESS_QUEUE. */
export function queueOf(url: string, mode: QueueKeyMode): string {
  return queueKeyOf(url, mode) ?? HOSTLESS_QUEUE;
}

function checkQueueKey(key: string): void {
  if (typeof key !== 'string' || key.length > MAX_QUEUE_KEY_LENGTH)
    throw new SeenStoreError('USAGE', `a queue key must be a string of at most ${MAX_QUEUE_KEY_LENGTH} characters`);
}

function checkWhole(name: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new SeenStoreError('USAGE', `${name} must be a whole number from ${min} to ${max}, got ${String(value)}`);
  }
}

/** Times in ms since the Unix epoch, one per item: 0 (none) or within MAX_AHEAD_MS of now. */
function checkTimes(name: string, times: readonly number[], count: number, nowMs: number): void {
  if (!Array.isArray(times) || times.length !== count)
    throw new SeenStoreError('USAGE', `${name} must be an array of ${count} times, one per URL`);
  for (const time of times) checkWhole(name, time, 0, nowMs + MAX_AHEAD_MS);
}

function checkOwner(owner: string): void {
  if (typeof owner !== 'string' || !OWNER_PATTERN.test(owner)) {
    throw new SeenStoreError('USAGE', `owner must be 1-128 of A-Z a-z 0-9 . _ : -, got ${JSON.stringify(owner)}`);
  }
}

/** Payloads, one per URL, each JSON-like and at most MAX_DATA_BYTES as JSON: checked before anything is written. */
export function checkedData(data: readonly unknown[], count: number): readonly unknown[] {
  if (!Array.isArray(data) || data.length !== count)
    throw new SeenStoreError('USAGE', `data must be an array of ${count} payloads, one per URL`);
  data.forEach((item, i) => {
    let text: string | undefined;
    try {
      text = JSON.stringify(item);
    } catch (error) {
      throw new SeenStoreError('USAGE', `data[${i}] is not JSON-like: ${(error as Error).message}`);
    }
    if (text !== undefined && Buffer.byteLength(text) > MAX_DATA_BYTES)
      throw new SeenStoreError('USAGE', `data[${i}] is over ${MAX_DATA_BYTES} bytes as JSON`);
  });
  return data;
}
