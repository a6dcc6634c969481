import { seedFromHex } from '../hash/scheme.js';
import type { Keys, XxHash } from '../hash/xxhash.js';
import { hashSlice, type Keying } from './keying.js';

/** What hashing needs of a slice: its seeds (16 hex digits each) and what its filters hash. */
export interface HashedSlice {
  readonly seeds: readonly string[];
  readonly keying?: Keying;
}

/**
 * How an epoch's keys become hash words: the one place that knows the layout, which the journal
 * stores as it is (docs/format.md) and every filter reads.
 *
 * For key i and filter f, counted over every filter of every slice (F of them), the 64-bit xxh64
 * of the key (or of the key the slice's keying derives for that filter) under the filter's seed is
 * two 32-bit words: the low half at words[i * stride + 2f] and the high half right after it,
 * stride = 2F. Slice j's filters start at word `sliceAt(j)` of a key's words. Filters read a hash
 * as (high, low): `hashHigh(words, at)` and `hashLow(words, at)` name the two places.
 */
export class EpochHasher {
  readonly #hash: XxHash;
  readonly #slices: { readonly keying: Keying | undefined; readonly seeds: bigint[]; readonly at: number }[] = [];
  #filterCount = 0;

  constructor(hash: XxHash, slices: readonly HashedSlice[] = []) {
    this.#hash = hash;
    this.extend(slices);
  }

  /** Adds slices after the ones the hasher has (an epoch that grew); earlier offsets stay. */
  extend(slices: readonly HashedSlice[]): void {
    for (const slice of slices) {
      this.#slices.push({ keying: slice.keying, seeds: slice.seeds.map(seedFromHex), at: 2 * this.#filterCount });
      this.#filterCount += slice.seeds.length;
    }
  }

  /** Filters over all slices: hashes computed per key. */
  get filterCount(): number {
    return this.#filterCount;
  }

  get sliceCount(): number {
    return this.#slices.length;
  }

  /** Words per key. */
  get stride(): number {
    return 2 * this.#filterCount;
  }

  /** Offset of slice j's first filter among a key's words. */
  sliceAt(j: number): number {
    return this.#slices[j]!.at;
  }

  /** Hashes every key for every filter of every slice into `words` (at least stride × keys long). */
  hash(keys: Keys, words: Uint32Array): void {
    const stride = this.stride;
    for (const slice of this.#slices) hashSlice(this.#hash, slice.keying, keys, slice.seeds, words, stride, slice.at);
  }
}

/** The high 32 bits of the hash whose words start at `at`. */
export function hashHigh(words: Uint32Array, at: number): number {
  return words[at + 1]!;
}

/** The low 32 bits of the hash whose words start at `at`. */
export function hashLow(words: Uint32Array, at: number): number {
  return words[at]!;
}
