import { seedFromHex } from '../hash/scheme.js';
import type { Keys, XxHash } from '../hash/xxhash.js';
import { keyCount } from '../hash/xxhash.js';
import { hashSlice, type Keying } from './keying.js';
import { foldLow, partitionOf, PARTITIONED_LAYOUT, type Partitioning } from './partitions.js';

/** What hashing needs of a slice: its seeds (16 hex digits each), what its filters hash, and (partitioned) its size. */
export interface HashedSlice {
  readonly seeds: readonly string[];
  readonly keying?: Keying;
  readonly layout?: string;
  readonly mBits?: number;
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
 *
 * A partitioned epoch (filters/partitions.ts) also hashes each key under its partition seed: the
 * key's partition (`partition(i)` after `hash`) and every filter's low word folded into it.
 *
 * Under normalisation `url` a key is the URL as given (trimmed), and one that holds a control
 * character is refused (INVALID_URL) by the pass that hashes it: the keys' callers leave that check
 * to the hashing (src/url/url-keys.ts), which looks at every byte anyway.
 */
export class EpochHasher {
  readonly #hash: XxHash;
  readonly #slices: {
    readonly keying: Keying | undefined;
    readonly seeds: bigint[];
    readonly at: number;
    readonly blocksPerPartition: number;
  }[] = [];
  #filterCount = 0;
  readonly #partitions: { readonly count: number; readonly seeds: readonly bigint[] } | undefined;
  /** Per key of the last batch: its partition hash (two words), then its partition. */
  #partitionHash = new Uint32Array(0);
  #partitionOf = new Uint32Array(0);
  /** Keys are URLs as given (normalisation `url`): a control character refuses the batch. */
  readonly #controls: boolean;

  /** `normalize` is the epoch's normalisation (its header's `normalize`). */
  constructor(hash: XxHash, normalize: string, slices: readonly HashedSlice[] = [], partitions?: Partitioning) {
    this.#hash = hash;
    this.#controls = normalize === 'url';
    this.#partitions =
      partitions === undefined ? undefined : { count: partitions.count, seeds: [seedFromHex(partitions.seed)] };
    this.extend(slices);
  }

  /** Adds slices after the ones the hasher has (an epoch that grew); earlier offsets stay. */
  extend(slices: readonly HashedSlice[]): void {
    for (const slice of slices) {
      let blocksPerPartition = 0;
      if (this.#partitions !== undefined) {
        if (slice.layout !== PARTITIONED_LAYOUT || slice.mBits === undefined)
          throw new RangeError(`a partitioned epoch's slice has layout ${slice.layout}`);
        blocksPerPartition = slice.mBits / 512 / this.#partitions.count;
      }
      this.#slices.push({
        keying: slice.keying,
        seeds: slice.seeds.map(seedFromHex),
        at: 2 * this.#filterCount,
        blocksPerPartition,
      });
      this.#filterCount += slice.seeds.length;
    }
  }

  /** Partitions of the epoch (1 when it is not partitioned). */
  get partitionCount(): number {
    return this.#partitions?.count ?? 1;
  }

  /** The partition of key i of the last batch hashed (0 when the epoch is not partitioned). */
  partition(i: number): number {
    return this.#partitions === undefined ? 0 : this.#partitionOf[i]!;
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

  /**
   * Hashes every key for every filter of every slice into `words` (at least stride × keys long).
   * Throws INVALID_URL for a key the epoch cannot take (see the class); `words` is then garbage.
   */
  hash(keys: Keys, words: Uint32Array): void {
    const stride = this.stride;
    // The first slice's pass looks for control characters: the keys are the same for every slice.
    let controls = this.#controls;
    for (const slice of this.#slices) {
      hashSlice(this.#hash, slice.keying, keys, slice.seeds, words, stride, slice.at, controls);
      controls = false;
    }
    if (this.#partitions !== undefined) this.#fold(keys, words, stride, this.#partitions);
  }

  /** Partitions every key and folds each filter's low word into its partition (filters/partitions.ts). */
  #fold(
    keys: Keys,
    words: Uint32Array,
    stride: number,
    partitions: { readonly count: number; readonly seeds: readonly bigint[] },
  ): void {
    const count = keyCount(keys);
    if (this.#partitionOf.length < count) {
      this.#partitionHash = new Uint32Array(2 * count);
      this.#partitionOf = new Uint32Array(count);
    }
    this.#hash.hashKeys(keys, partitions.seeds, this.#partitionHash, 2, 0);
    for (let i = 0; i < count; i++) {
      const p = partitionOf(hashHigh(this.#partitionHash, 2 * i), partitions.count);
      this.#partitionOf[i] = p;
      for (const slice of this.#slices) {
        for (let f = 0; f < slice.seeds.length; f++) {
          const at = i * stride + slice.at + 2 * f;
          words[at] = foldLow(hashLow(words, at), p, slice.blocksPerPartition);
        }
      }
    }
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
