import type { BloomFilter } from '../../filters/bloom.js';

/** Loads stored chunk `region` of filter `index` into memory (ORs it in; nothing when none is stored). */
export type ChunkLoader = (index: number, region: number) => void;

/**
 * Which chunks of an epoch's Bloom filters this process holds in memory: an open reads headers,
 * not bits, and a chunk comes in (its stored bytes ORed into the filter's array) the first time a
 * query or an add touches it. The filter arrays are allocated whole but zero-filled by the
 * kernel on first touch, so chunks never loaded cost no memory.
 *
 * Bits set in memory before their chunk is loaded (journal replay, adds) stay: loading ORs, it
 * never overwrites. A chunk whose stored bytes changed under this process (another process's
 * checkpoint, a slice another process added) is forgotten and ORed in again at its next touch.
 */
export class ResidentChunks {
  readonly #load: ChunkLoader;
  /** Per filter index: 1 for each chunk whose stored bytes are in memory. */
  #flags: Uint8Array[] = [];
  /** Per filter index: chunks not yet in memory (0: the filter is complete). */
  #missing: number[] = [];
  /** Per filter index: reused scratch of the chunks one batch touches. */
  #touched: Uint8Array[] = [];
  #missingTotal = 0;
  /** Chunks loaded since the last takeLoaded() (for the bench and tests). */
  #loaded = 0;

  constructor(load: ChunkLoader) {
    this.#load = load;
  }

  /** Every chunk of every filter is in memory: queries and adds need nothing loaded. */
  get complete(): boolean {
    return this.#missingTotal === 0;
  }

  /** Whether chunk `region` of filter `index` is in memory. */
  has(index: number, region: number): boolean {
    return this.#flags[index]?.[region] === 1;
  }

  /** Chunks loaded since the last call; resets. */
  takeLoaded(): number {
    const loaded = this.#loaded;
    this.#loaded = 0;
    return loaded;
  }

  /**
   * Forgets the chunks of filters `fromIndex`.. (their stored bytes changed, or they are new to
   * this copy); `regionCounts` gives every filter's chunk count, by filter index.
   */
  forget(fromIndex: number, regionCounts: readonly number[]): void {
    this.#flags.length = Math.min(this.#flags.length, fromIndex, regionCounts.length);
    this.#missing.length = this.#flags.length;
    this.#touched.length = this.#flags.length;
    for (let index = this.#flags.length; index < regionCounts.length; index++) {
      this.#flags.push(new Uint8Array(regionCounts[index]!));
      this.#missing.push(regionCounts[index]!);
      this.#touched.push(new Uint8Array(regionCounts[index]!));
    }
    this.#missingTotal = this.#missing.reduce((sum, n) => sum + n, 0);
  }

  /** Covers filters added since (new slices), their chunks not in memory. */
  extend(regionCounts: readonly number[]): void {
    this.forget(this.#flags.length, regionCounts);
  }

  /**
   * Loads the chunks of `filter` (filter `index`) that hashes first..last - 1 touch, their words
   * at `at` in `words` with `stride` (as BloomFilter.markRegions reads them).
   */
  ensure(
    index: number,
    filter: BloomFilter,
    words: Uint32Array,
    at: number,
    stride: number,
    first: number,
    last: number,
  ): void {
    if (this.#missing[index] === 0) return;
    const touched = this.#touched[index]!;
    filter.markRegions(words, at, stride, first, last, touched);
    for (let region = 0; region < touched.length; region++) {
      if (touched[region] === 0) continue;
      touched[region] = 0;
      this.#loadOnce(index, region);
    }
  }

  /** Loads every chunk not yet in memory (a summary, an export, a merge read the whole filter). */
  ensureAll(): void {
    for (let index = 0; index < this.#flags.length; index++) {
      for (let region = 0; this.#missing[index]! > 0 && region < this.#flags[index]!.length; region++)
        this.#loadOnce(index, region);
    }
  }

  #loadOnce(index: number, region: number): void {
    const flags = this.#flags[index]!;
    if (flags[region] === 1) return;
    this.#load(index, region);
    flags[region] = 1;
    this.#missing[index]!--;
    this.#missingTotal--;
    this.#loaded++;
  }
}
