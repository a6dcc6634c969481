import type { Layout } from '../filters/bloom.js';
import type { KeyMode, NormalizeMode } from '../url/normalize.js';
import type { EpochDetails, EpochStats } from './epoch-stats.js';
import type { EpochSpec, MembershipMode } from './epoch-spec.js';

/** The options and results of Scope's methods. */

export interface ScopeOptions {
  /** URLs the first epoch is sized for (default 1,000,000). Used only when the epoch is created. */
  readonly capacityUrls?: number;
  /** Target false-positive rate of the epoch (default 0.01). Used only when the epoch is created. */
  readonly fprTarget?: number;
  /**
   * How the epochs answer (docs/strategies.md): `classic` (default), `blocked` (one cache line per
   * URL: faster on large filters, slightly higher FPR) or `spatial:S` (S filters with their own
   * seeds, seen only if all hold the URL). Used when the scope is created; rotations keep it
   * unless RotateOptions.strategy says otherwise.
   */
  readonly strategy?: string;
  /** The older spelling of `strategy: 'classic' | 'blocked'`. */
  readonly layout?: Layout;
  /**
   * How URLs become keys: `none` (default: the exact bytes, trimmed of surrounding whitespace with
   * `keys: 'url'`), `whatwg` (URL-standard serialisation) or `crawler` (whatwg, no fragment, query
   * sorted: what a crawler should choose; it costs a URL parse per key, docs/format.md).
   */
  readonly normalize?: NormalizeMode;
  /**
   * What the scope accepts, fixed when it is created (ignored afterwards, like the capacity) and
   * kept by rotations: `url` (default) only
   * keys that start like absolute URLs (`scheme://host`, a check of a few bytes), so stray lines
   * (HTML, relative paths, blank or mailto: lines) are refused with INVALID_URL (the CLI counts
   * and skips them) instead of being recorded and printed as new; `raw` any string (a scope of
   * fingerprints or IDs). Scopes created before format 4 stay `raw`.
   */
  readonly keys?: KeyMode;
  /**
   * Seeds of the first epoch (16 hex digits each, as `epoch show` prints them) instead of fresh
   * ones, so parallel crawlers can merge their exports. Used only when the scope is created.
   */
  readonly seeds?: readonly string[];
  /**
   * Whether a write to a scope that does not exist yet creates it (default true). With false, an
   * add, enqueue or rotate of a missing scope fails with NOT_FOUND: a mistyped scope name then
   * stops the crawl instead of starting it over in a new, empty scope.
   */
  readonly create?: boolean;
}

export interface AddOptions {
  /**
   * Only add to this epoch: if it is not (or no longer) the open one, fail with EPOCH_SEALED
   * instead of following a rotation into the next epoch.
   */
  readonly epoch?: number;
}

export interface QueryOptions {
  /** Epochs to look in (default `current`). */
  readonly epochs?: EpochSpec;
  /** `any` (default): seen in at least one of them; `all`: seen in every one. */
  readonly mode?: MembershipMode;
}

export interface AddSummary {
  /** URLs in the call. */
  readonly submitted: number;
  /** URLs that were new. */
  readonly added: number;
}

export type Classification = 'new' | 'revisit';
export type DiffCategory = 'both' | 'only-from' | 'only-to' | 'neither';

export interface DiffResult {
  readonly from: number;
  readonly to: number;
  readonly categories: DiffCategory[];
  readonly counts: Readonly<Record<DiffCategory, number>>;
}

/** Each URL's category from its membership in `from` (inA) and `to` (inB), and how many fell in each. */
export function diffCategories(
  inA: readonly boolean[],
  inB: readonly boolean[],
): Pick<DiffResult, 'categories' | 'counts'> {
  const counts: Record<DiffCategory, number> = { both: 0, 'only-from': 0, 'only-to': 0, neither: 0 };
  const categories = inA.map((a, i): DiffCategory => {
    const category = a ? (inB[i] ? 'both' : 'only-from') : inB[i] ? 'only-to' : 'neither';
    counts[category]++;
    return category;
  });
  return { categories, counts };
}

export interface RotateResult {
  readonly sealed: EpochStats;
  readonly opened: EpochDetails;
}

export interface EnqueueOptions extends AddOptions {
  /**
   * data[i] is kept with URL i in the frontier and handed back by take (e.g. a crawler's request:
   * its label, depth and retries). JSON-like values (msgpack), at most 64 KiB each.
   */
  readonly data?: readonly unknown[];
  /**
   * queues[i]: the frontier queue of URL i (at most 512 characters), instead of the one its URL
   * gives by the frontier's queue key (URLFrontier's URLInfo.key).
   */
  readonly queues?: readonly string[];
}
