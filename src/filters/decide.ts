import type { BloomFilter } from './bloom.js';

/**
 * The Bloom slices of an epoch as the add-if-absent decision sees them: the older slices only
 * answer (a URL one of them holds was seen before), the newest takes the new URLs. Hashes are
 * URL-major: URL i's hash for a slice's filter f is words[i * stride + at + 2f] (low half) and the
 * word after it (high half).
 */
export interface DecideTarget {
  readonly older: readonly { readonly filters: readonly BloomFilter[]; readonly at: number }[];
  readonly newest: readonly BloomFilter[];
  readonly newestAt: number;
  readonly stride: number;
}

/**
 * The newest slice's positions computed ahead by another thread (BloomFilter.positionsInto): URL
 * i's positions in filter f start at positions[i * perUrl + offsets[f]].
 */
export interface PositionsAhead {
  readonly positions: Int32Array;
  readonly perUrl: number;
  readonly offsets: readonly number[];
}

export interface Decided {
  /** URLs decided, from the first one given. */
  readonly consumed: number;
  /** Of those, the new ones. */
  readonly fresh: number;
}

/**
 * Decides URLs from `from` until `to`, or until `room` of them were new: URL i is new when no
 * slice holds it, and is then added to the newest slice; flags[i] = 1 when it was new, else 0. In
 * input order, so a URL given twice is new the first time only. The same code decides on the
 * calling thread and on the bit thread (SeenStoreOptions.threads).
 */
export function decideRange(
  target: DecideTarget,
  words: Uint32Array,
  from: number,
  to: number,
  room: number,
  flags: Uint8Array,
  ahead?: PositionsAhead,
): Decided {
  const { older, newest, newestAt, stride } = target;
  // Without positions from another thread, the newest slice's positions are computed a run ahead
  // where its filters can (BloomFilter prepare): bits are then set without waiting on the
  // arithmetic. Same answers as add(). (Filters of one slice can differ in k: eigen's feature
  // filter. The run suits them all.)
  let run = Infinity;
  if (ahead === undefined) for (const filter of newest) run = Math.min(run, filter.preparedRun);
  let prepared = false;
  let runStart = from;
  let runEnd = from;
  let fresh = 0;
  let i = from;
  for (; i < to && fresh < room; i++) {
    if (i === runEnd) {
      runStart = i;
      runEnd = Math.min(to, i + run);
      prepared = ahead === undefined;
      for (let f = 0; f < newest.length && prepared; f++)
        prepared = newest[f]!.prepare(words, newestAt + 2 * f, stride, runStart, runEnd);
    }
    const base = i * stride;
    let seenBefore = false;
    for (let j = 0; j < older.length && !seenBefore; j++)
      seenBefore = allHold(older[j]!.filters, words, base + older[j]!.at);
    let absent = false;
    if (!seenBefore) {
      const at = base + newestAt;
      for (let f = 0; f < newest.length; f++) {
        const filter = newest[f]!;
        const wasAbsent =
          ahead !== undefined
            ? filter.addPositions(ahead.positions, i * ahead.perUrl + ahead.offsets[f]!)
            : prepared
              ? filter.addPrepared(i - runStart)
              : filter.add(words[at + 2 * f + 1]!, words[at + 2 * f]!);
        if (wasAbsent) absent = true;
      }
    }
    if (absent) fresh++;
    flags[i] = absent ? 1 : 0;
  }
  return { consumed: i - from, fresh };
}

/**
 * True when every filter holds its hash: filter f's hash is words[at + 2f] (low half) and
 * words[at + 2f + 1] (high half). A group of filters with their own seeds (a slice) holds a URL
 * only when all of them do.
 */
export function allHold(filters: readonly BloomFilter[], words: Uint32Array, at: number): boolean {
  for (let f = 0; f < filters.length; f++) {
    if (!filters[f]!.has(words[at + 2 * f + 1]!, words[at + 2 * f]!)) return false;
  }
  return true;
}
