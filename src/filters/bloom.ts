import { BLOCK_BITS, HASH_SCHEME_ID, Modulus, kmStep, modFast, stepGrowth, type HashSchemeId } from '../hash/scheme.js';
import { RegionedBytes, type SharedFilterMemory } from './regions.js';
import { estimateCardinality, fprFromFill } from './sizing.js';

/** How a URL's k positions are laid out: anywhere in the array, or inside one 64-byte block. */
export type Layout = 'classic' | 'blocked';

export const LAYOUTS: readonly Layout[] = ['classic', 'blocked'];

export interface FilterGeometry {
  readonly layout: Layout;
  /** Bits in the array; a multiple of 512. */
  readonly mBits: number;
  /** Positions set per URL. */
  readonly k: number;
}

export interface BloomFilterOptions {
  /**
   * Size of the regions whose changes are tracked (the store persists dirty regions as chunks).
   * Default: the whole array is one region.
   */
  readonly regionBytes?: number;
  /** The hash scheme mapping hashes to positions (the epoch's). Default: the one new epochs use. */
  readonly scheme?: HashSchemeId;
  /**
   * `true`: bytes and dirty flags in shared memory, so a bit thread can set bits in this filter
   * (SeenStoreOptions.threads). Shared buffers given: a view of such a filter (in the bit thread).
   */
  readonly memory?: boolean | SharedFilterMemory;
}

/** What the store persists of a filter: its bytes in regions (chunks), with change tracking. */
export interface StoredFilter {
  readonly geometry: FilterGeometry;
  readonly bytes: Uint8Array;
  readonly regionCount: number;
  region(index: number): Uint8Array;
  dirtyRegions(): number[];
  markClean(index: number): void;
  /** Loads stored bytes into a region; returns the set bits (non-zero counters) gained. */
  orRegion(index: number, stored: Uint8Array): number;
  readonly onesBits: number;
  readonly estimatedCount: number;
  readonly currentFpr: number;
}

/**
 * A seeded Bloom filter over a byte array, keyed by precomputed 64-bit hashes (hi, lo halves).
 * Bit p is bit (p mod 8) of byte floor(p / 8), least significant bit first. Pure: no I/O.
 */
export class BloomFilter extends RegionedBytes implements StoredFilter {
  readonly geometry: FilterGeometry;
  readonly scheme: HashSchemeId;
  readonly #modulus: Modulus;
  readonly #blocks: number;
  /** Below 2^31 bits, positions, steps and p + step - m all fit in int32. */
  readonly #int32: boolean;
  /** 1 under xxh64-km-v2, 0 under v1: how the steps grow between probes (scheme.ts stepGrowth). */
  readonly #growth: 0 | 1;
  #onesBits = 0;
  /** Positions computed ahead by prepare(), reused. */
  #positions = new Int32Array(0);
  /** Positions markRegions() computes, reused. */
  #spread = new Float64Array(0);
  /** Where warm() leaves what it read, so the compiler cannot drop the reads. */
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: written only, so that the reads it sums stay.
  #warmth = 0;
  /** Aligned copy of a stored region being ORed in. */
  #scratch = new Uint8Array(0);

  constructor(geometry: FilterGeometry, options: BloomFilterOptions = {}) {
    const { mBits, k, layout } = geometry;
    if (!Number.isSafeInteger(mBits) || mBits <= 0 || mBits % BLOCK_BITS !== 0) {
      throw new RangeError(`mBits must be a positive multiple of ${BLOCK_BITS}, got ${mBits}`);
    }
    if (!Number.isInteger(k) || k < 1 || k > 64) throw new RangeError(`k must be an integer in [1, 64], got ${k}`);
    if (layout !== 'classic' && layout !== 'blocked') throw new RangeError(`unknown layout ${String(layout)}`);
    const regionBytes = options.regionBytes ?? mBits / 8;
    if (regionBytes % 64 !== 0 && regionBytes !== mBits / 8) {
      throw new RangeError('regionBytes must be a multiple of 64 so blocks never straddle regions');
    }
    super(mBits / 8, regionBytes, options.memory ?? false);
    this.geometry = Object.freeze({ layout, mBits, k });
    this.#modulus = new Modulus(mBits);
    this.#blocks = mBits / BLOCK_BITS;
    this.#int32 = mBits < 2 ** 31;
    this.scheme = options.scheme ?? HASH_SCHEME_ID;
    this.#growth = stepGrowth(this.scheme);
  }

  get onesBits(): number {
    return this.#onesBits;
  }

  /**
   * Counts bits that another thread set in this filter's shared memory (through its own view of
   * it, which counted them there).
   */
  countSetBits(bits: number): void {
    this.#onesBits += bits;
  }

  get fillRatio(): number {
    return this.#onesBits / this.geometry.mBits;
  }

  /** Distinct URLs estimated from the fill. */
  get estimatedCount(): number {
    return estimateCardinality(this.#onesBits, this.geometry.mBits, this.geometry.k);
  }

  /** False-positive rate of a query right now, from the fill. */
  get currentFpr(): number {
    return fprFromFill(this.fillRatio, this.geometry.k);
  }

  /**
   * Reads the array front to back, one byte per 64-byte line, when it has no more lines than
   * `probes`, the positions a batch is about to touch. Between two batches the process sleeps (in
   * the commit's fsync, or waiting for input), and other processes on the machine may evict the
   * filter from the caches; the batch would then fetch it back one random miss at a time. A
   * sequential sweep is streamed by the hardware prefetcher at memory bandwidth instead. Measured
   * (docs/benchmarks.md): durable adds in batches of 10,000 into a 2 MB filter, median 925 -> 714 ms
   * on a busy 2-core VM; on a quiet one it costs nothing measurable.
   */
  warm(probes: number): void {
    const bytes = this.bytes;
    if (bytes.length / 64 > probes) return;
    let any = 0;
    for (let at = 0; at < bytes.length; at += 64) any |= bytes[at]!;
    this.#warmth = any;
  }

  /**
   * Computes the positions of hashes first..last - 1 ahead, hash i at words[at + i * stride] (low
   * half) and the word after it (high half), for addPrepared(). Only classic filters below 2^31
   * bits prepare (false otherwise: use add()), and at most `preparedRun` hashes at a time.
   *
   * Why: in add()'s loop each position waits on the step arithmetic before its byte can be
   * fetched, which limits how many cache misses are in flight. With the positions computed ahead,
   * setting them has no arithmetic chain, and the CPU overlaps many more misses.
   */
  prepare(words: Uint32Array, at: number, stride: number, first: number, last: number): boolean {
    if (!this.positionsAhead) return false;
    if (last - first > this.preparedRun)
      throw new RangeError(`prepare takes at most ${this.preparedRun} hashes, got ${last - first}`);
    const k = this.geometry.k;
    if (this.#positions.length < this.preparedRun * k) this.#positions = new Int32Array(this.preparedRun * k);
    this.positionsInto(words, at, stride, first, last, this.#positions, 0, k);
    return true;
  }

  /** True when positions can be computed ahead (prepare, positionsInto): classic filters below 2^31 bits. */
  get positionsAhead(): boolean {
    return this.geometry.layout === 'classic' && this.#int32;
  }

  /**
   * The k positions of hashes first..last - 1 (laid out as for prepare) into `out`: hash i's at
   * out[outAt + (i - first) * outStride] onwards. For filters with positionsAhead only. Pure
   * arithmetic: a thread that does not set this filter's bits may compute them (the bit thread's
   * caller does, SeenStoreOptions.threads).
   */
  positionsInto(
    words: Uint32Array,
    at: number,
    stride: number,
    first: number,
    last: number,
    out: Int32Array,
    outAt: number,
    outStride: number,
  ): void {
    const k = this.geometry.k;
    const m = this.geometry.mBits;
    const growth = this.#growth;
    for (let i = first; i < last; i++) {
      const hi = words[at + i * stride + 1]!;
      let step = kmStep(m, hi) | 0;
      let p = this.#modulus.reduce(hi, words[at + i * stride]!) | 0;
      let grow = 0;
      let n = outAt + (i - first) * outStride;
      for (let j = 0; j < k; j++) {
        out[n++] = p;
        p = nextPosition(p, step, m);
        grow += growth;
        step = nextPosition(step, grow, m);
      }
    }
  }

  /**
   * The k bit positions has() tests for hashes first..last - 1 (laid out as for prepare()), hash
   * i's at out[(i - first) * k]: to read the bits elsewhere (a stored chunk) or find their regions.
   */
  positionsOf(words: Uint32Array, at: number, stride: number, first: number, last: number, out: Float64Array): void {
    const k = this.geometry.k;
    const growth = this.#growth;
    let n = 0;
    if (this.geometry.layout === 'blocked') {
      for (let i = first; i < last; i++) {
        const hi = words[at + i * stride + 1]!;
        const base = modFast(words[at + i * stride]!, this.#blocks) * BLOCK_BITS;
        const e = ((hi >>> 18) & (BLOCK_BITS - 1)) * growth;
        let q = hi & (BLOCK_BITS - 1);
        let step = ((hi >>> 9) & (BLOCK_BITS - 1)) | (1 - growth);
        for (let j = 0; j < k; j++) {
          out[n++] = base + q;
          q = (q + step) & (BLOCK_BITS - 1);
          step = (step + e + growth * (j + 1)) & (BLOCK_BITS - 1);
        }
      }
      return;
    }
    const m = this.geometry.mBits;
    for (let i = first; i < last; i++) {
      const hi = words[at + i * stride + 1]!;
      let step = kmStep(m, hi);
      let p = this.#modulus.reduce(hi, words[at + i * stride]!);
      for (let j = 0; j < k; j++) {
        out[n++] = p;
        p += step;
        if (p >= m) p -= m;
        step += growth * (j + 1);
        if (step >= m) step -= m;
      }
    }
  }

  /** Sets touched[r] to 1 for each region r a position of hashes first..last - 1 falls in. */
  markRegions(words: Uint32Array, at: number, stride: number, first: number, last: number, touched: Uint8Array): void {
    const k = this.geometry.k;
    const run = this.preparedRun;
    if (this.#spread.length < run * k) this.#spread = new Float64Array(run * k);
    const regionBits = 8 * this.regionBytes;
    for (let from = first; from < last; from += run) {
      const to = Math.min(last, from + run);
      this.positionsOf(words, at, stride, from, to, this.#spread);
      for (let q = 0; q < (to - from) * k; q++) touched[Math.floor(this.#spread[q]! / regionBits)] = 1;
    }
  }

  /** Hashes prepare() takes at once: 64k positions (256 KB, well inside L2). */
  get preparedRun(): number {
    return Math.max(1, Math.floor(PREPARED_POSITIONS / this.geometry.k));
  }

  /** add() of hash `first + j` of the last prepare(): the same bits, count, dirty regions and answer. */
  addPrepared(j: number): boolean {
    const k = this.geometry.k;
    return this.#setPrepared(this.#positions, j * k, j * k + k) !== 0;
  }

  /** add() of the hash whose k positions positionsInto() wrote at positions[from]: the same bits, count and answer. */
  addPositions(positions: Int32Array, from: number): boolean {
    return this.#setPrepared(positions, from, from + this.geometry.k) !== 0;
  }

  /**
   * Adds `count` hashes laid out as for prepare(), without telling which were new: journal
   * replay. Sets exactly the bits, counts and dirty regions that add() would; the bits of a whole
   * run go in one flat loop.
   */
  addAll(words: Uint32Array, at: number, stride: number, count: number): void {
    const run = this.preparedRun;
    for (let first = 0; first < count; first += run) {
      const last = Math.min(count, first + run);
      if (this.prepare(words, at, stride, first, last))
        this.#setPrepared(this.#positions, 0, (last - first) * this.geometry.k);
      else for (let i = first; i < last; i++) this.add(words[at + i * stride + 1]!, words[at + i * stride]!);
    }
  }

  /** Sets positions[from..to - 1]; returns the bits newly set. */
  #setPrepared(positions: Int32Array, from: number, to: number): number {
    const bytes = this.bytes;
    const dirty = this.dirty;
    const regionPerByte = this.regionPerByte;
    let setBits = 0;
    for (let q = from; q < to; q++) setBits += setBit(bytes, dirty, regionPerByte, positions[q]!);
    this.#onesBits += setBits;
    return setBits;
  }

  /** True when every position of the hash is set (the URL was probably added). */
  has(hi: number, lo: number): boolean {
    return this.geometry.layout === 'classic' ? this.#hasClassic(hi, lo) : this.#hasBlocked(hi, lo);
  }

  /** Sets every position of the hash; true when at least one was clear (the URL was absent). */
  add(hi: number, lo: number): boolean {
    return this.geometry.layout === 'classic' ? this.#addClassic(hi, lo) : this.#addBlocked(hi, lo);
  }

  #hasClassic(hi: number, lo: number): boolean {
    if (!this.#int32) return this.#hasClassicWide(hi, lo);
    const bytes = this.bytes;
    const m = this.geometry.mBits;
    const k = this.geometry.k;
    const growth = this.#growth;
    let step = kmStep(m, hi) | 0;
    let p = this.#modulus.reduce(hi, lo) | 0;
    let grow = 0;
    for (let i = 0; i < k; i++) {
      if ((bytes[p >>> 3]! & (1 << (p & 7))) === 0) return false;
      p = nextPosition(p, step, m);
      grow += growth;
      step = nextPosition(step, grow, m);
    }
    return true;
  }

  /**
   * The hot path of every add. Positions stay int32 (the filter is below 2^31 bits), and the loop
   * has no data-dependent branch: every byte is written back ORed with its bit, the bit's old value
   * counts it and marks its region dirty, and the wrap modulo m is arithmetic. With a branch per
   * probe, on a filter filling up the CPU guessed wrong about half the time (profiled: the
   * branch-free loop takes 0.4-0.6 of the time on a 2 MB filter).
   */
  #addClassic(hi: number, lo: number): boolean {
    if (!this.#int32) return this.#addClassicWide(hi, lo);
    const bytes = this.bytes;
    const dirty = this.dirty;
    const regionPerByte = this.regionPerByte;
    const m = this.geometry.mBits;
    const k = this.geometry.k;
    const growth = this.#growth;
    let step = kmStep(m, hi) | 0;
    let p = this.#modulus.reduce(hi, lo) | 0;
    let grow = 0;
    let setBits = 0;
    for (let i = 0; i < k; i++) {
      setBits += setBit(bytes, dirty, regionPerByte, p);
      p = nextPosition(p, step, m);
      grow += growth;
      step = nextPosition(step, grow, m);
    }
    this.#onesBits += setBits;
    return setBits !== 0;
  }

  /** #hasClassic for filters of 2^31 bits or more: positions as doubles. */
  #hasClassicWide(hi: number, lo: number): boolean {
    const bytes = this.bytes;
    const m = this.geometry.mBits;
    const k = this.geometry.k;
    const growth = this.#growth;
    let step = kmStep(m, hi);
    let p = this.#modulus.reduce(hi, lo);
    for (let i = 0; i < k; i++) {
      if ((bytes[Math.floor(p / 8)]! & (1 << (p & 7))) === 0) return false;
      p += step;
      if (p >= m) p -= m;
      step += growth * (i + 1);
      if (step >= m) step -= m;
    }
    return true;
  }

  /** #addClassic for filters of 2^31 bits or more: positions as doubles. */
  #addClassicWide(hi: number, lo: number): boolean {
    const bytes = this.bytes;
    const dirty = this.dirty;
    const regionBytes = this.regionBytes;
    const m = this.geometry.mBits;
    const k = this.geometry.k;
    const growth = this.#growth;
    let step = kmStep(m, hi);
    let p = this.#modulus.reduce(hi, lo);
    let setBits = 0;
    for (let i = 0; i < k; i++) {
      const at = Math.floor(p / 8);
      const mask = 1 << (p & 7);
      const old = bytes[at]!;
      if ((old & mask) === 0) {
        bytes[at] = old | mask;
        dirty[Math.floor(at / regionBytes)] = 1;
        setBits++;
      }
      p += step;
      if (p >= m) p -= m;
      step += growth * (i + 1);
      if (step >= m) step -= m;
    }
    this.#onesBits += setBits;
    return setBits !== 0;
  }

  #hasBlocked(hi: number, lo: number): boolean {
    const bytes = this.bytes;
    const k = this.geometry.k;
    const growth = this.#growth;
    const base = modFast(lo, this.#blocks) * (BLOCK_BITS / 8);
    const e = ((hi >>> 18) & (BLOCK_BITS - 1)) * growth;
    let q = hi & (BLOCK_BITS - 1);
    let step = ((hi >>> 9) & (BLOCK_BITS - 1)) | (1 - growth);
    for (let i = 0; i < k; i++) {
      if ((bytes[base + (q >>> 3)]! & (1 << (q & 7))) === 0) return false;
      q = (q + step) & (BLOCK_BITS - 1);
      step = (step + e + growth * (i + 1)) & (BLOCK_BITS - 1);
    }
    return true;
  }

  /** Branch-free like #addClassic; the block's region is marked once. */
  #addBlocked(hi: number, lo: number): boolean {
    const bytes = this.bytes;
    const k = this.geometry.k;
    const growth = this.#growth;
    const base = modFast(lo, this.#blocks) * (BLOCK_BITS / 8);
    const e = ((hi >>> 18) & (BLOCK_BITS - 1)) * growth;
    let q = hi & (BLOCK_BITS - 1);
    let step = ((hi >>> 9) & (BLOCK_BITS - 1)) | (1 - growth);
    let setBits = 0;
    for (let i = 0; i < k; i++) {
      const at = base + (q >>> 3);
      const shift = q & 7;
      const old = bytes[at]!;
      const wasClear = (~old >>> shift) & 1;
      bytes[at] = old | (1 << shift);
      setBits += wasClear;
      q = (q + step) & (BLOCK_BITS - 1);
      step = (step + e + growth * (i + 1)) & (BLOCK_BITS - 1);
    }
    if (setBits !== 0) this.dirty[Math.floor(base / this.regionBytes)] = 1;
    this.#onesBits += setBits;
    return setBits !== 0;
  }

  /**
   * ORs stored bytes into region `index` (loading a checkpoint, or catching up with one written
   * by another process). Returns the number of bits that were newly set. The region is not marked
   * dirty: its new bits came from storage.
   */
  orRegion(index: number, stored: Uint8Array): number {
    const target = this.region(index);
    if (stored.length !== target.length) {
      throw new RangeError(`region ${index} holds ${target.length} bytes, stored data has ${stored.length}`);
    }
    // 32 bits at a time (a 131 MB filter loads in a tenth of the time of a byte loop). Regions are
    // multiples of 64 bytes at multiples of 64; the stored bytes may sit anywhere, so they are
    // copied to an aligned scratch first.
    if (this.#scratch.length < stored.length) this.#scratch = new Uint8Array(stored.length);
    this.#scratch.set(stored);
    const words = target.length >>> 2;
    const into = new Uint32Array(target.buffer, target.byteOffset, words);
    const from = new Uint32Array(this.#scratch.buffer, 0, words);
    let gained = 0;
    for (let i = 0; i < words; i++) {
      const before = into[i]!;
      const after = (before | from[i]!) >>> 0;
      if (after !== before) {
        into[i] = after;
        gained += popcount32(after) - popcount32(before);
      }
    }
    this.#onesBits += gained;
    return gained;
  }
}

/** Positions prepare() computes ahead: 256 KB of them, well inside L2. */
const PREPARED_POSITIONS = 65_536;

/**
 * Sets bit p (int32) without a data-dependent branch: the byte is written back ORed with its bit,
 * and the bit's old value marks the byte's region dirty and is returned (1 when it was clear).
 */
function setBit(bytes: Uint8Array, dirty: Uint8Array, regionPerByte: number, p: number): number {
  const at = p >>> 3;
  const shift = p & 7;
  const old = bytes[at]!;
  const wasClear = (~old >>> shift) & 1;
  bytes[at] = old | (1 << shift);
  dirty[(at * regionPerByte) | 0]! |= wasClear;
  return wasClear;
}

/**
 * (p + step) mod m for int32 p and step in [0, m) with m < 2^31 (the next position, or the next
 * step of enhanced double hashing): p + step - m lies in (-m, m), and is negative exactly when no
 * wrap is due; its sign bit, spread by >> 31, selects whether m is added back. No branch for the
 * CPU to guess.
 */
function nextPosition(p: number, step: number, m: number): number {
  const q = (p + step - m) | 0;
  return q + ((q >> 31) & m);
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}
