import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import type { Backend, FrontierStats, LeasedUrl } from '../store/backend.js';

export type { FrontierStats, LeasedUrl };

/** A lease's default length: long enough to fetch and parse a page, short enough that a dead crawler's URLs come back soon. */
export const DEFAULT_LEASE_MS = 5 * 60_000;
/** Most URLs one take hands out. */
export const MAX_TAKE = 65_536;

interface FrontierContext {
  readonly backend: Backend;
  readonly hash: XxHash;
  readonly assertOpen: () => void;
  readonly assertWritable: (doing: string) => void;
}

export interface TakeOptions {
  /** How long the URLs are the taker's (default 5 minutes): past it, unfinished URLs are taken again. */
  readonly leaseMs?: number;
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
    return (await this.#frontier()).take(count, leaseMs);
  }

  /** Finishes URLs by the ids take gave; resolves with how many were still there to finish. */
  async done(ids: readonly string[]): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('finish frontier URLs');
    if (!Array.isArray(ids)) throw new TypeError('ids must be an array of strings');
    return (await this.#frontier()).done(ids);
  }

  /** Gives leased URLs back before their lease runs out, to be taken again (a crawler that stops early). */
  async release(ids: readonly string[]): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('release frontier URLs');
    if (!Array.isArray(ids)) throw new TypeError('ids must be an array of strings');
    return (await this.#frontier()).release(ids);
  }

  async stats(): Promise<FrontierStats> {
    this.#ctx.assertOpen();
    return (await this.#frontier()).stats();
  }

  async #frontier() {
    return this.#ctx.backend.frontier(this.scope);
  }
}
