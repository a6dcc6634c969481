import { HASH_SCHEME_ID, Modulus, classicPositions, type HashSchemeId } from '../hash/scheme.js';
import { hashHigh, hashLow } from './epoch-hasher.js';
import type { FilterGeometry, StoredFilter } from './bloom.js';
import { RegionedBytes } from './regions.js';
import { estimateCardinality, fprFromFill } from './sizing.js';

/**
 * Counters of a spectral Bloom filter: one byte each, saturating at COUNTER_MAX. A saturated
 * counter is sticky — never incremented past the maximum and never decremented — so a count can be
 * over-estimated after 255 additions to one cell but a deletion can never produce a false
 * negative. (Wrapping would turn 256 additions into 0: a URL seen 256 times would read as new.)
 */
export const COUNTER_MAX = 255;

/**
 * A counting filter (Cohen and Matias's spectral Bloom filter, seeds 003/004): m one-byte counters,
 * k positions per URL by the same Kirsch–Mitzenmacher double hashing as the classic layout. Adding
 * increments the k counters, deleting decrements them, and the count of a URL is the minimum of its
 * counters ("minimum selection"): never below the true count, above it only when every counter is
 * shared with another URL — the Bloom filter's false-positive event. Pure: no I/O.
 */
export class CountingFilter extends RegionedBytes implements StoredFilter {
  readonly cells: number;
  readonly k: number;
  /** Storage geometry: 8 bits per counter (the store sizes chunks by it). */
  readonly geometry: FilterGeometry;
  readonly #modulus: Modulus;
  readonly #at: Float64Array;
  readonly #scheme: HashSchemeId;
  #nonZero = 0;

  constructor(
    cells: number,
    k: number,
    options: { readonly regionBytes?: number; readonly scheme?: HashSchemeId } = {},
  ) {
    if (!Number.isSafeInteger(cells) || cells < 2) throw new RangeError(`cells must be an integer >= 2, got ${cells}`);
    if (!Number.isInteger(k) || k < 1 || k > 64) throw new RangeError(`k must be an integer in [1, 64], got ${k}`);
    super(cells, options.regionBytes);
    this.cells = cells;
    this.k = k;
    this.geometry = Object.freeze({ layout: 'classic', mBits: cells * 8, k });
    this.#modulus = new Modulus(cells);
    this.#at = new Float64Array(k);
    this.#scheme = options.scheme ?? HASH_SCHEME_ID;
  }

  /** Counters that are not zero (the "set bits" of the equivalent Bloom filter). */
  get nonZero(): number {
    return this.#nonZero;
  }

  /** The counters: one byte each (the stored bytes). */
  get counters(): Uint8Array {
    return this.bytes;
  }

  get onesBits(): number {
    return this.#nonZero;
  }

  /** Distinct URLs estimated from the non-zero counters, as a Bloom filter's from its set bits. */
  get estimatedCount(): number {
    return estimateCardinality(this.#nonZero, this.cells, this.k);
  }

  /** Rate at which a URL never added reads as present now. */
  get currentFpr(): number {
    return fprFromFill(this.#nonZero / this.cells, this.k);
  }

  /**
   * Loads stored counters into region `index`, which must still be all zero (a fresh load: counters
   * are never OR-ed into live state, where that would double counts). Returns the non-zero counters
   * gained.
   */
  orRegion(index: number, stored: Uint8Array): number {
    const target = this.region(index);
    if (stored.length !== target.length)
      throw new RangeError(`region ${index} holds ${target.length} counters, stored data has ${stored.length}`);
    let gained = 0;
    for (let i = 0; i < target.length; i++) {
      if (target[i] !== 0) throw new RangeError(`region ${index} of a counting filter is loaded twice`);
      target[i] = stored[i]!;
      if (stored[i] !== 0) gained++;
    }
    this.#nonZero += gained;
    return gained;
  }

  /** The minimum of the URL's counters: its count, or more (never less). */
  count(hi: number, lo: number): number {
    const n = this.#positions(hi, lo);
    const at = this.#at;
    let min = COUNTER_MAX;
    for (let i = 0; i < n; i++) min = Math.min(min, this.counters[at[i]!]!);
    return min;
  }

  /**
   * True when the minimum occurs at two or more of the URL's counters (a "recurring minimum"): then
   * the minimum is very likely the true count, since an error needs every minimal counter shared.
   */
  recurringMinimum(hi: number, lo: number): boolean {
    const n = this.#positions(hi, lo);
    const at = this.#at;
    let min = COUNTER_MAX + 1;
    let times = 0;
    for (let i = 0; i < n; i++) {
      const c = this.counters[at[i]!]!;
      if (c < min) {
        min = c;
        times = 1;
      } else if (c === min) {
        times++;
      }
    }
    return times >= 2;
  }

  /** Adds `by` to each of the URL's counters, saturating. */
  increment(hi: number, lo: number, by = 1): void {
    const n = this.#positions(hi, lo);
    const at = this.#at;
    for (let i = 0; i < n; i++) {
      const p = at[i]!;
      const c = this.counters[p]!;
      if (c === 0) this.#nonZero++;
      this.counters[p] = Math.min(COUNTER_MAX, c + by);
      this.dirty[Math.floor(p / this.regionBytes)] = 1;
    }
  }

  /**
   * Takes one from each of the URL's counters that is neither zero nor saturated. Call it only for
   * a URL whose count is at least one (the caller checks), so no other URL's count can drop.
   */
  decrement(hi: number, lo: number): void {
    const n = this.#positions(hi, lo);
    const at = this.#at;
    for (let i = 0; i < n; i++) {
      const p = at[i]!;
      const c = this.counters[p]!;
      if (c > 0 && c < COUNTER_MAX) {
        this.counters[p] = c - 1;
        if (c === 1) this.#nonZero--;
        this.dirty[Math.floor(p / this.regionBytes)] = 1;
      }
    }
  }

  /**
   * The URL's distinct counter positions, by the classic layout's double hashing over the cells,
   * into a scratch array reused by every call (no allocation per URL); returns how many there are.
   * A Bloom filter does not mind a position that repeats; a counter would be counted twice per add,
   * so a position equal to an earlier one is dropped. (Under xxh64-km-v1 positions repeat when the
   * step's period m / gcd(step, m) is below k, and then from the first return on, so this keeps
   * the positions before the first repeat; under v2 a repeat is rare and can fall anywhere.)
   */
  #positions(hi: number, lo: number): number {
    const at = this.#at;
    classicPositions(this.#modulus, this.k, hi, lo, at, this.#scheme);
    let n = 0;
    for (let i = 0; i < this.k; i++) {
      const p = at[i]!;
      let seen = false;
      for (let j = 0; j < n; j++) seen ||= at[j] === p;
      if (!seen) at[n++] = p;
    }
    return n;
  }
}

/**
 * A spectral Bloom filter with the recurring-minimum refinement (seed 004): a primary counting
 * filter and a smaller secondary one for URLs whose minimum in the primary is single (those are
 * the likely errors).
 *
 * - add: increment the URL in the primary; if its minimum there is single, increment it in the
 *   secondary when the secondary holds it, else put it there with the primary's minimum.
 * - count: a recurring minimum in the primary is the answer; else the secondary's minimum when it
 *   is not zero (capped by the primary's, which is never below the truth); else the primary's.
 *   Zero comes only from the primary, so membership has no false negatives; a count may come out
 *   low when the secondary missed increments while the URL had a recurring minimum.
 * - Delete only what was added: deleting a URL that merely looks present (a false positive) takes
 *   counts from the URLs it collides with, which can then read as absent.
 * - delete: decrement in the primary; if the minimum there is single and the secondary holds the
 *   URL, decrement it there too. A URL whose count is zero is not deleted (nothing to take away).
 *
 * Both filters hash the same 64-bit value; the secondary's different size makes its positions
 * unrelated to the primary's. Deterministic: replaying the same operations in the same order from
 * the same state gives the same counters, which is what the store's journal relies on.
 */
export class SpectralFilter {
  readonly primary: CountingFilter;
  readonly secondary: CountingFilter;

  constructor(primary: CountingFilter, secondary: CountingFilter) {
    this.primary = primary;
    this.secondary = secondary;
  }

  static create(cells: number, k: number, secondaryCells: number): SpectralFilter {
    return new SpectralFilter(new CountingFilter(cells, k), new CountingFilter(secondaryCells, k));
  }

  /**
   * Adds one occurrence; true when the URL's count was zero before (it was new). (hi, lo) is the
   * URL's hash for the primary, (hi2, lo2) for the secondary (its own seed; default the same).
   */
  add(hi: number, lo: number, hi2 = hi, lo2 = lo): boolean {
    const wasNew = this.primary.count(hi, lo) === 0;
    this.primary.increment(hi, lo);
    if (!this.primary.recurringMinimum(hi, lo)) {
      if (this.secondary.count(hi2, lo2) > 0) this.secondary.increment(hi2, lo2);
      else this.secondary.increment(hi2, lo2, this.primary.count(hi, lo));
    }
    return wasNew;
  }

  /** Estimated occurrences: 0 means certainly never added (or all deleted). */
  count(hi: number, lo: number, hi2 = hi, lo2 = lo): number {
    const primary = this.primary.count(hi, lo);
    if (primary === 0 || this.primary.recurringMinimum(hi, lo)) return primary;
    const secondary = this.secondary.count(hi2, lo2);
    return secondary > 0 ? Math.min(secondary, primary) : primary;
  }

  /**
   * The same three operations on a URL's hashes as an epoch hasher lays them out: the primary's
   * hash at `at`, the secondary's right after it (see filters/epoch-hasher.ts).
   */
  addAt(words: Uint32Array, at: number): boolean {
    return this.add(hashHigh(words, at), hashLow(words, at), hashHigh(words, at + 2), hashLow(words, at + 2));
  }

  countAt(words: Uint32Array, at: number): number {
    return this.count(hashHigh(words, at), hashLow(words, at), hashHigh(words, at + 2), hashLow(words, at + 2));
  }

  deleteAt(words: Uint32Array, at: number): boolean {
    return this.delete(hashHigh(words, at), hashLow(words, at), hashHigh(words, at + 2), hashLow(words, at + 2));
  }

  /** True when the primary holds the URL whose hashes start at `at` (how a counting slice answers "seen"). */
  holdsAt(words: Uint32Array, at: number): boolean {
    return this.primary.count(hashHigh(words, at), hashLow(words, at)) > 0;
  }

  /** Removes one occurrence; false (and nothing changed) when the count is already zero. */
  delete(hi: number, lo: number, hi2 = hi, lo2 = lo): boolean {
    if (this.primary.count(hi, lo) === 0) return false;
    this.primary.decrement(hi, lo);
    if (!this.primary.recurringMinimum(hi, lo) && this.secondary.count(hi2, lo2) > 0)
      this.secondary.decrement(hi2, lo2);
    return true;
  }
}
