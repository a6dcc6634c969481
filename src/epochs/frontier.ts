import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import type { EncodedSummary, SummarizeOptions } from '../setdiff/set-difference.js';
import type { Backend, FrontierStats, LeasedUrl, QueueItems } from '../store/backend.js';
import { toKey } from '../url/normalize.js';

export type { FrontierStats, LeasedUrl };

/** A lease's default length: long enough to fetch and parse a page, short enough that a dead crawler's URLs come back soon. */
export const DEFAULT_LEASE_MS = 5 * 60_000;
/** Most URLs one take hands out. */
export const MAX_TAKE = 65_536;
/** Largest payload kept with one queued URL, as JSON text. */
export const MAX_DATA_BYTES = 64 * 1024;
/** An owner name: what a crawler keeps across restarts to take back its own leases. */
const OWNER_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

interface FrontierContext {
  readonly backend: Backend;
  readonly hash: XxHash;
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
}

/**
 * A scope's frontier (Scope.frontier()): the URLs that Scope.enqueue found new wait here until a
 * crawler takes them under a lease and reports them done. Delivery is at least once: a URL whose
 * lease runs out (its crawler died) is taken again, with `attempts` counting the tries; discovery
 * is exactly once (a URL is queued by the add that found it new). Rotating the scope's epoch or
 * pruning epochs leaves queued URLs where they are (docs/frontier.md).
 */
export class ScopeFrontier {
  readonly scope: string;
  readonly #ctx: FrontierContext;

  /** @internal Frontiers come from Scope.frontier(). */
  constructor(ctx: FrontierContext, scope: string) {
    this.#ctx = ctx;
    this.scope = scope;
  }

  /** Up to `count` waiting URLs, oldest first, each leased to the caller; durable when it resolves. */
  async take(count: number, options: TakeOptions = {}): Promise<LeasedUrl[]> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('take from the frontier');
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_TAKE) {
      throw new SeenStoreError('USAGE', `take count must be a whole number from 1 to ${MAX_TAKE}, got ${String(count)}`);
    }
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isSafeInteger(leaseMs) || leaseMs < 1) throw new SeenStoreError('USAGE', `leaseMs must be a whole number of milliseconds >= 1, got ${String(leaseMs)}`);
    if (options.owner !== undefined) checkOwner(options.owner);
    return (await this.#frontier()).take(count, leaseMs, options.owner);
  }

  /** Gives back at once every running lease that `owner` took; resolves with how many. */
  async reclaim(owner: string): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('reclaim frontier leases');
    checkOwner(owner);
    return (await this.#frontier()).reclaim(owner);
  }

  /** Finishes URLs by the ids take gave; resolves with how many were still there to finish. */
  async done(ids: readonly string[]): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('finish frontier URLs');
    if (!Array.isArray(ids)) throw new TypeError('ids must be an array of strings');
    return (await this.#frontier()).done(ids);
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

  async stats(): Promise<FrontierStats> {
    this.#ctx.assertOpen();
    return (await this.#frontier()).stats();
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

  async #frontier() {
    return this.#ctx.backend.frontier(this.scope);
  }
}

function checkOwner(owner: string): void {
  if (typeof owner !== 'string' || !OWNER_PATTERN.test(owner)) {
    throw new SeenStoreError('USAGE', `owner must be 1-128 of A-Z a-z 0-9 . _ : -, got ${JSON.stringify(owner)}`);
  }
}

/** Payloads, one per URL, each JSON-like and at most MAX_DATA_BYTES as JSON: checked before anything is written. */
export function checkedData(data: readonly unknown[], count: number): readonly unknown[] {
  if (!Array.isArray(data) || data.length !== count) throw new SeenStoreError('USAGE', `data must be an array of ${count} payloads, one per URL`);
  data.forEach((item, i) => {
    let text: string | undefined;
    try {
      text = JSON.stringify(item);
    } catch (error) {
      throw new SeenStoreError('USAGE', `data[${i}] is not JSON-like: ${(error as Error).message}`);
    }
    if (text !== undefined && Buffer.byteLength(text) > MAX_DATA_BYTES) throw new SeenStoreError('USAGE', `data[${i}] is over ${MAX_DATA_BYTES} bytes as JSON`);
  });
  return data;
}

/** Items start..end - 1 of a call's queue items (one part of a call split into batches). */
/** The items of the keys at `indices`, in that order. */
export function pickQueue(items: QueueItems, indices: readonly number[]): QueueItems {
  return { urls: indices.map((i) => items.urls[i]!), ...(items.data === undefined ? {} : { data: indices.map((i) => items.data![i]) }) };
}

export function queuePart(items: QueueItems, start: number, end: number): QueueItems {
  return { urls: items.urls.slice(start, end), ...(items.data === undefined ? {} : { data: items.data.slice(start, end) }) };
}
