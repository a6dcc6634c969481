import { randomBytes } from 'node:crypto';

/**
 * The URL-to-bits mappings this version implements; docs/format.md specifies each exactly, with
 * test vectors. They differ in where a URL's positions go once its hash is known. v1's are
 * arithmetic progressions: classic h1 + i·h2 mod m (Kirsch–Mitzenmacher), blocked c + i·d mod 512.
 * A step sharing a large factor with m repeats positions (h2 = m/2 gives two), and a query with a
 * stored URL's step and a start a few steps off shares most of its positions; both put a floor
 * under the false-positive rate whatever k is (a few times 1/m classic; far worse blocked, where
 * a block holds only 2^17 progressions). v2 adds (i³ − i)/6 (enhanced double hashing, Dillinger
 * and Manolios) and, blocked, a third value e·i(i − 1)/2, which breaks both patterns. An epoch
 * header names its scheme; a header naming another one is refused, never reinterpreted.
 */
export const HASH_SCHEMES = ['xxh64-km-v1', 'xxh64-km-v2'] as const;

export type HashSchemeId = (typeof HASH_SCHEMES)[number];

/** The scheme new epochs are created with. Epochs keep the scheme they were created with. */
export const HASH_SCHEME_ID: HashSchemeId = 'xxh64-km-v2';

export function isHashScheme(id: string): id is HashSchemeId {
  return (HASH_SCHEMES as readonly string[]).includes(id);
}

/**
 * 1 under v2, 0 under v1: the classic step grows by g·(i + 1) after probe i, which makes position i
 * h1 + i·h2 + (i³ − i)/6 under v2; the blocked step likewise (plus e). Filters compute it once, so
 * the hot loops do the same arithmetic for both schemes instead of branching on the scheme.
 */
export function stepGrowth(scheme: HashSchemeId): 0 | 1 {
  return scheme === 'xxh64-km-v1' ? 0 : 1;
}

/** Largest filter, in bits, that the scheme addresses exactly with double-precision arithmetic. */
export const MAX_FILTER_BITS = 2 ** 40;

/** Bits in one block of the blocked layout: one 64-byte cache line. */
export const BLOCK_BITS = 512;

/**
 * x mod m for integers 0 <= x and 1 <= m with x + m <= 2^53, by one division instead of `%`
 * (V8 computes `%` of doubles with a slow fmod call). The rounded quotient is at least the true
 * floor (rounding is monotonic and integers are exact) and at most one more, so one correction
 * makes the remainder exact; the product q * m <= x + m stays exact.
 */
export function modFast(x: number, m: number): number {
  const r = x - Math.floor(x / m) * m;
  return r < 0 ? r + m : r;
}

/**
 * Precomputed constants for reducing a 64-bit hash modulo `m` with doubles only, every
 * intermediate below 2^52 so that modFast stays exact. Up to m = 2^26 (filters of 8 MB; the common
 * case) one multiplication by 2^32 mod m does it; above, multiplying the high half by 2^32 is split
 * into shifts small enough for the products to stay exact.
 */
export class Modulus {
  readonly m: number;
  /** 2^32 mod m when m <= 2^26 (then (m - 1) * it + 2^32 < 2^52), else 0. */
  readonly #twoTo32: number;
  /** 2^s per shift step, for larger m. */
  readonly #factors: Float64Array;

  constructor(m: number) {
    if (!Number.isSafeInteger(m) || m < 2 || m > MAX_FILTER_BITS) {
      throw new RangeError(`modulus must be an integer in [2, 2^40], got ${m}`);
    }
    this.m = m;
    this.#twoTo32 = m <= 2 ** 26 ? 2 ** 32 % m : 0;
    const stepBits = 52 - Math.ceil(Math.log2(m));
    const factors: number[] = [];
    for (let left = 32; left > 0; left -= stepBits) factors.push(2 ** Math.min(stepBits, left));
    this.#factors = Float64Array.from(factors);
  }

  /** (hi * 2^32 + lo) mod m, exactly. */
  reduce(hi: number, lo: number): number {
    const m = this.m;
    if (this.#twoTo32 !== 0) return modFast(modFast(hi, m) * this.#twoTo32 + lo, m);
    let r = modFast(hi, m);
    const factors = this.#factors;
    for (let i = 0; i < factors.length; i++) r = modFast(r * factors[i]!, m);
    return modFast(r + lo, m);
  }
}

/** First Kirsch–Mitzenmacher index: the whole 64-bit hash modulo m. */
export function kmStart(modulus: Modulus, hi: number, lo: number): number {
  return modulus.reduce(hi, lo);
}

/** Kirsch–Mitzenmacher step: 1 + (hi mod (m - 1)), in [1, m - 1], so it is never zero mod m. */
export function kmStep(m: number, hi: number): number {
  return 1 + modFast(hi, m - 1);
}

/**
 * Writes the k bit positions of one hash for the classic layout into `out` (for tests, docs and
 * tools; the filters inline the same arithmetic in their loops).
 */
export function classicPositions(
  modulus: Modulus,
  k: number,
  hi: number,
  lo: number,
  out: Float64Array,
  scheme: HashSchemeId = HASH_SCHEME_ID,
): void {
  const m = modulus.m;
  const growth = stepGrowth(scheme);
  let step = kmStep(m, hi);
  let p = kmStart(modulus, hi, lo);
  for (let i = 0; i < k; i++) {
    out[i] = p;
    p += step;
    if (p >= m) p -= m;
    step += growth * (i + 1);
    if (step >= m) step -= m;
  }
}

/**
 * Blocked layout: the block is lo mod (m / 512); inside it, with c = hi mod 512,
 * d = (hi >> 9) mod 512 and e = (hi >> 18) mod 512, position i is
 * (c + i·d + e·i(i − 1)/2 + (i³ − i)/6) mod 512 under v2, and (c + i·(d | 1)) mod 512 under v1.
 * Computed incrementally: the step starts at d and grows by e + i + 1 after probe i (v1: by 0).
 */
export function blockedPositions(
  blocks: number,
  k: number,
  hi: number,
  lo: number,
  out: Float64Array,
  scheme: HashSchemeId = HASH_SCHEME_ID,
): void {
  const growth = stepGrowth(scheme);
  const base = (lo % blocks) * BLOCK_BITS;
  const e = ((hi >>> 18) & (BLOCK_BITS - 1)) * growth;
  let p = hi & (BLOCK_BITS - 1);
  let step = ((hi >>> 9) & (BLOCK_BITS - 1)) | (1 - growth);
  for (let i = 0; i < k; i++) {
    out[i] = base + p;
    p = (p + step) & (BLOCK_BITS - 1);
    step = (step + e + growth * (i + 1)) & (BLOCK_BITS - 1);
  }
}

/** A fresh 64-bit seed from the operating system's CSPRNG, as 16 lower-case hex digits. */
export function freshSeedHex(): string {
  return randomBytes(8).toString('hex');
}

/** Whether `text` is a seed as epoch headers and `epoch show` write it: 16 lower-case hex digits. */
export function isSeedHex(text: unknown): text is string {
  return typeof text === 'string' && /^[0-9a-f]{16}$/.test(text);
}

export function seedFromHex(hex: string): bigint {
  if (!isSeedHex(hex)) throw new RangeError(`a seed is 16 lower-case hex digits, got ${JSON.stringify(hex)}`);
  return BigInt(`0x${hex}`);
}
