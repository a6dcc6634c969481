import { BLOCK_BITS, MAX_FILTER_BITS } from '../hash/scheme.js';

/** Largest number of hash functions per filter; beyond this the FPR gain is nil and the cost linear. */
export const MAX_HASHES = 32;

export interface Sizing {
  /** Filter size in bits, a multiple of 512 (one cache line) so both layouts share chunking. */
  readonly mBits: number;
  /** Hash functions (bit positions) per URL. */
  readonly k: number;
}

/** Rounds a bit count up to whole 512-bit blocks. */
export function roundBits(mBits: number): number {
  return Math.max(BLOCK_BITS, Math.ceil(mBits / BLOCK_BITS) * BLOCK_BITS);
}

function checked(mBits: number, k: number): Sizing {
  if (mBits > MAX_FILTER_BITS) {
    throw new RangeError(`a filter of ${mBits} bits exceeds the format's maximum of 2^40 bits`);
  }
  return Object.freeze({ mBits, k });
}

/**
 * The classic optimum for n items at false-positive rate p: m = -n ln p / (ln 2)^2 and
 * k = (m / n) ln 2, k rounded and clamped to [1, 32]; then m grown, if need be, to 2·sqrt(n / p).
 *
 * Why the growth: every position of a URL follows from two values, h1 in [0, m) and h2 in [1, m)
 * (hash scheme xxh64-km-v2), so a query whose pair equals a stored URL's is a false positive
 * whatever k is: a floor of n / (m (m - 1)) per query, about 1 / (n b^2) at b bits per URL. At
 * everyday targets it is far below p; at very low targets on small filters it is not (3,000 URLs
 * at 1e-9 with the optimal m: 1.7e-7). m >= 2·sqrt(n / p) keeps it at most p / 4. k stays the
 * target's: the larger m only lowers the rate further.
 */
export function sizeForFpr(capacityUrls: number, fprTarget: number): Sizing {
  if (!(capacityUrls >= 1) || !Number.isFinite(capacityUrls))
    throw new RangeError(`capacity must be >= 1, got ${capacityUrls}`);
  if (!(fprTarget > 0 && fprTarget < 1)) throw new RangeError(`fpr must be in (0, 1), got ${fprTarget}`);
  const optimalBits = roundBits(Math.ceil((-capacityUrls * Math.log(fprTarget)) / (Math.LN2 * Math.LN2)));
  const k = Math.min(MAX_HASHES, Math.max(1, Math.round((optimalBits / capacityUrls) * Math.LN2)));
  const mBits = Math.max(optimalBits, roundBits(Math.ceil(2 * Math.sqrt(capacityUrls / fprTarget))));
  return checked(mBits, k);
}

/** The false-positive floor of two-value positions: a query's (h1, h2) equal to a stored URL's. */
export function pairFloorFpr(mBits: number, n: number): number {
  return n / (mBits * (mBits - 1));
}

/**
 * The thesis's sizing (its equation 5.1): m = n * k * M, where M is the bit-size multiplier
 * ("bits per hash"). Used to reproduce its tables; not optimal in general.
 */
export function sizeByMultiplier(capacityUrls: number, k: number, bitsPerHash: number): Sizing {
  if (!(capacityUrls >= 1)) throw new RangeError(`capacity must be >= 1, got ${capacityUrls}`);
  if (!Number.isInteger(k) || k < 1 || k > MAX_HASHES)
    throw new RangeError(`k must be an integer in [1, ${MAX_HASHES}], got ${k}`);
  if (!(bitsPerHash > 0)) throw new RangeError(`bits per hash must be > 0, got ${bitsPerHash}`);
  return checked(roundBits(Math.ceil(capacityUrls * k * bitsPerHash)), k);
}

/**
 * The blocked layout's sizing: the smallest m (whole 512-bit blocks, at least the classic m) whose
 * closed-form rate at capacity is at most p, for k from the classic optimum - 1 to + 2, the k with
 * the smallest m. Blocks fill unevenly, so the classic m errs above p (1.19 % at a 1 % target);
 * under xxh64-km-v2 the measured rate equals this closed form (docs/strategies.md), so sizing by it
 * keeps the promise.
 */
export function sizeBlockedForFpr(capacityUrls: number, fprTarget: number): Sizing {
  const classic = sizeForFpr(capacityUrls, fprTarget);
  let best: Sizing | undefined;
  for (let k = Math.max(1, classic.k - 1); k <= Math.min(MAX_HASHES, classic.k + 2); k++) {
    const errs = (blocks: number): boolean => blockedFprCurve(blocks * BLOCK_BITS, k)(capacityUrls) > fprTarget;
    let low = classic.mBits / BLOCK_BITS;
    let high = low;
    while (errs(high) && high * BLOCK_BITS <= MAX_FILTER_BITS) high *= 2;
    if (errs(high)) continue;
    // The smallest block count that does not err lies in (low, high] (or is low itself).
    if (!errs(low)) high = low;
    while (high - low > 1) {
      const mid = Math.floor((low + high) / 2);
      if (errs(mid)) low = mid;
      else high = mid;
    }
    if (best === undefined || high * BLOCK_BITS < best.mBits) best = { mBits: high * BLOCK_BITS, k };
  }
  if (best === undefined)
    throw new RangeError(`no blocked filter within 2^40 bits reaches ${fprTarget} for ${capacityUrls} URLs`);
  return checked(best.mBits, best.k);
}

/** The closed-form FPR of a classic filter of m bits and k hashes, as a function of distinct adds n. */
export function classicFprCurve(mBits: number, k: number): (n: number) => number {
  const keep = Math.log1p(-1 / mBits);
  return (n) => (-Math.expm1(k * n * keep)) ** k;
}

/**
 * The closed-form FPR of a blocked filter as a function of n: a Poisson mixture over the number of
 * URLs in the query's block, each setting k of its 512 bits independently.
 */
export function blockedFprCurve(mBits: number, k: number): (n: number) => number {
  const blocks = mBits / BLOCK_BITS;
  const keep = Math.log1p(-k / BLOCK_BITS);
  return (n) => {
    const lambda = n / blocks;
    // Poisson weights from the mode outwards until they vanish.
    let sum = 0;
    const top = Math.floor(lambda);
    const logAt = (j: number): number => -lambda + j * Math.log(lambda || 1) - logFactorial(j);
    for (const direction of [1, -1]) {
      for (let j = direction === 1 ? top : top - 1; j >= 0; j += direction) {
        const weight = lambda === 0 ? (j === 0 ? 1 : 0) : Math.exp(logAt(j));
        sum += weight * (-Math.expm1(j * keep)) ** k;
        if (weight < 1e-18 && Math.abs(j - lambda) > 10) break;
      }
    }
    return sum;
  };
}

const logFactorials: number[] = [0];
function logFactorial(j: number): number {
  for (let i = logFactorials.length; i <= j; i++) logFactorials.push(logFactorials[i - 1]! + Math.log(i));
  return logFactorials[j]!;
}

/** Expected false-positive rate of a classic filter of m bits and k hashes after n distinct adds. */
export function expectedFpr(mBits: number, k: number, n: number): number {
  return (1 - Math.exp((-k * n) / mBits)) ** k;
}

/** False-positive rate implied by the fraction of set bits: a query hits k set bits at random. */
export function fprFromFill(fillRatio: number, k: number): number {
  return fillRatio ** k;
}

/**
 * Distinct items estimated from the number of set bits (Swamidass & Baldi 2007):
 * n ≈ -(m / k) ln(1 - X / m). Infinite when every bit is set.
 */
export function estimateCardinality(onesBits: number, mBits: number, k: number): number {
  if (onesBits >= mBits) return Number.POSITIVE_INFINITY;
  return (-mBits / k) * Math.log1p(-onesBits / mBits);
}
