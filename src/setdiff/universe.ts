import { freshSeedHex, seedFromHex } from '../hash/scheme.js';
import type { XxHash } from '../hash/xxhash.js';

/**
 * The set-difference hash scheme (docs/format.md, "Set-difference summary"): how a URL becomes an
 * element of the universe and a leaf of the Merkle tree. For tree t with seeds (u_t, l_t), the key
 * (the URL in the summary's normalisation, UTF-8) has the point xxh64(key, u_t), its place in the
 * universe [0, 2^64), and the leaf hash xxh64(key, l_t). A node's hash is the sum modulo 2^64 of
 * the leaf hashes below it, so equal sets have equal hashes whatever the tree's shape. The seed
 * asks for a universe of at least max(|A|, |B|)^2 so that the trees are balanced and the points
 * distinct; 2^64 is that for sets of up to 2^32 URLs.
 */
export const SETDIFF_SCHEME_ID = 'setdiff-xxh64-sum-v1';

/** Words per element per tree in ElementHashes: point lo, point hi, leaf lo, leaf hi. */
export const WORDS_PER_TREE = 4;

/** Most independent trees (boosting) a summary may carry. */
export const MAX_TREES = 16;

export interface TreeSeeds {
  /** 16 lower-case hex digits: the seed of the points. */
  readonly universeSeed: string;
  /** 16 lower-case hex digits: the seed of the leaf hashes. */
  readonly leafSeed: string;
}

/** Fresh seeds for `trees` independent trees, from the CSPRNG. */
export function freshTreeSeeds(trees: number): TreeSeeds[] {
  return Array.from({ length: trees }, () => Object.freeze({ universeSeed: freshSeedHex(), leafSeed: freshSeedHex() }));
}

/**
 * The hashes of a set's elements in the order they were added: for element i and tree t, the words
 * at (i * trees + t) * 4 are point lo, point hi, leaf lo, leaf hi. 16 bytes per element per tree;
 * the URL strings are not kept.
 */
export class ElementHashes {
  readonly trees: number;
  readonly #seeds: readonly bigint[];
  #words = new Uint32Array(0);
  #count = 0;

  constructor(seeds: readonly TreeSeeds[]) {
    if (seeds.length < 1 || seeds.length > MAX_TREES)
      throw new RangeError(`trees must be 1..${MAX_TREES}, got ${seeds.length}`);
    this.trees = seeds.length;
    this.#seeds = seeds.flatMap((s) => [seedFromHex(s.universeSeed), seedFromHex(s.leafSeed)]);
  }

  get count(): number {
    return this.#count;
  }

  /** The words of every element added so far (a view; valid until the next add). */
  get words(): Uint32Array {
    return this.#words.subarray(0, this.#count * this.trees * WORDS_PER_TREE);
  }

  /**
   * Hashes a batch of keys (already in the summary's normalisation) and appends them; with
   * `controls` (URL keys, normalisation `url`) a key with a control character is INVALID_URL, and
   * nothing is appended.
   */
  add(hash: XxHash, keys: readonly string[], controls: boolean): void {
    const stride = this.trees * WORDS_PER_TREE;
    this.#reserve(this.#count + keys.length);
    const out = this.#words.subarray(this.#count * stride);
    // One seed per pair of words: universe then leaf seed of tree 0, then tree 1, ...
    hash.hashKeys(keys, this.#seeds, out, stride, 0, controls);
    this.#count += keys.length;
  }

  #reserve(elements: number): void {
    const need = elements * this.trees * WORDS_PER_TREE;
    if (need <= this.#words.length) return;
    const grown = new Uint32Array(Math.max(need, 2 * this.#words.length, 1024));
    grown.set(this.#words);
    this.#words = grown;
  }
}
