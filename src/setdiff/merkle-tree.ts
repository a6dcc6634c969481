import type { BloomFilter } from '../filters/bloom.js';
import { WORDS_PER_TREE } from './universe.js';

/** Patricia depth is at most 64 (one level per bit of a point); a visit's stack holds two per level. */
const STACK_ENTRIES_MAX = 2 * 66;

export interface ReconcileCounts {
  /** Nodes of this tree whose hash was looked up in the other side's filter. */
  visitedNodes: number;
  /** Leaves reached whose hash the filter does not hold: elements judged not in A. */
  reportedLeaves: number;
}

/**
 * The Merkle tree of seed 004 over one set: a Patricia tree of the elements' points (a binary trie
 * of the 64-bit points without unary nodes) whose every node carries the hash of its subtree's set.
 * It is stored implicitly: the distinct points sorted, an internal node being a range [i, j) of
 * them, named by its split s (the first leaf of its right child; every s in 1..L-1 is the split of
 * exactly one node). Per node the sum hash and the splits of its two children; per leaf its hash
 * and the elements (by index) that share its point. About 40 bytes per element; no strings.
 */
export class MerkleTree {
  /** Distinct points: the tree's leaves. */
  readonly leafCount: number;
  readonly #leafHi: Uint32Array;
  readonly #leafLo: Uint32Array;
  /** Element indices sorted by point; leaf l holds order[first[l]] .. order[first[l + 1] - 1]. */
  readonly #order: Uint32Array;
  readonly #first: Uint32Array;
  readonly #nodeHi: Uint32Array;
  readonly #nodeLo: Uint32Array;
  /** Split of the left / right child of node s; 0 when that child is a leaf. */
  readonly #left: Uint32Array;
  readonly #right: Uint32Array;
  /** Split of the root; 0 when the tree has at most one leaf. */
  readonly #root: number;

  /**
   * Builds tree `tree` over `count` elements of `words` (ElementHashes's layout, `trees` per
   * element): a radix sort by point, then one pass that names each node and sums its hash.
   */
  constructor(words: Uint32Array, count: number, trees: number, tree: number) {
    const stride = trees * WORDS_PER_TREE;
    const at = tree * WORDS_PER_TREE;
    this.#order = sortByPoint(words, count, stride, at);
    const order = this.#order;
    const first = new Uint32Array(count + 1);
    const pointHi = new Uint32Array(count);
    const pointLo = new Uint32Array(count);
    const leafHi = new Uint32Array(count);
    const leafLo = new Uint32Array(count);
    let leaves = 0;
    for (let q = 0; q < count; q++) {
      const w = order[q]! * stride + at;
      const lo = words[w]!;
      const hi = words[w + 1]!;
      // Elements with one point (the same URL twice; distinct URLs with probability n^2 / 2^65) are one leaf.
      if (leaves > 0 && pointLo[leaves - 1] === lo && pointHi[leaves - 1] === hi) continue;
      first[leaves] = q;
      pointLo[leaves] = lo;
      pointHi[leaves] = hi;
      leafLo[leaves] = words[w + 2]!;
      leafHi[leaves] = words[w + 3]!;
      leaves++;
    }
    first[leaves] = count;
    this.leafCount = leaves;
    this.#first = first.subarray(0, leaves + 1);
    this.#leafHi = leafHi.subarray(0, leaves);
    this.#leafLo = leafLo.subarray(0, leaves);
    this.#nodeHi = new Uint32Array(Math.max(1, leaves));
    this.#nodeLo = new Uint32Array(Math.max(1, leaves));
    this.#left = new Uint32Array(Math.max(1, leaves));
    this.#right = new Uint32Array(Math.max(1, leaves));
    this.#root = leaves > 1 ? this.#build(pointHi, pointLo, 0, leaves) : 0;
  }

  /** Nodes of the tree: leaves plus internal nodes (2L - 1 for L >= 1 leaves). */
  get nodeCount(): number {
    return this.leafCount === 0 ? 0 : 2 * this.leafCount - 1;
  }

  /** Names node [i, j) and its descendants, sums their hashes; returns its split (0 for a leaf). */
  #build(pointHi: Uint32Array, pointLo: Uint32Array, i: number, j: number): number {
    if (j - i === 1) return 0;
    const s = split(pointHi, pointLo, i, j);
    const left = this.#build(pointHi, pointLo, i, s);
    const right = this.#build(pointHi, pointLo, s, j);
    this.#left[s] = left;
    this.#right[s] = right;
    const aLo = left === 0 ? this.#leafLo[i]! : this.#nodeLo[left]!;
    const aHi = left === 0 ? this.#leafHi[i]! : this.#nodeHi[left]!;
    const bLo = right === 0 ? this.#leafLo[s]! : this.#nodeLo[right]!;
    const bHi = right === 0 ? this.#leafHi[s]! : this.#nodeHi[right]!;
    const lo = aLo + bLo;
    this.#nodeLo[s] = lo >>> 0;
    this.#nodeHi[s] = (aHi + bHi + (lo > 0xffffffff ? 1 : 0)) >>> 0;
    return s;
  }

  /** Adds the hash of every node, leaves included, to `filter`: BF(MT_A). */
  addNodesTo(filter: BloomFilter): void {
    for (let l = 0; l < this.leafCount; l++) filter.add(this.#leafHi[l]!, this.#leafLo[l]!);
    for (let s = 1; s < this.leafCount; s++) filter.add(this.#nodeHi[s]!, this.#nodeLo[s]!);
  }

  /**
   * Seed 004's visit: top down, a node whose hash `filter` holds is taken to be in A and its
   * subtree skipped; a leaf reached is judged not in A, and marks[e] set to 1 for its elements.
   * The cost is the nodes visited, about |B − A| · depth, not the size of the tree. Internal nodes
   * above `skipDepth` are not looked up, only descended through (at most 2^skipDepth of them): near the
   * root a node almost never is in A, and one false positive there would hide a large part of B − A.
   */
  reconcile(filter: BloomFilter, marks: Uint8Array, counts: ReconcileCounts, skipDepth = 0): void {
    if (this.leafCount === 0) return;
    const stack = new Uint32Array(4 * STACK_ENTRIES_MAX);
    stack[0] = 0;
    stack[1] = this.leafCount;
    stack[2] = this.#root;
    stack[3] = 0;
    let top = 4;
    while (top > 0) {
      top -= 4;
      const i = stack[top]!;
      const j = stack[top + 1]!;
      const s = stack[top + 2]!;
      const depth = stack[top + 3]!;
      // A leaf is always looked up: it is the element itself, and skipping it would report one of A.
      const leaf = j - i === 1;
      const lookUp = leaf || depth >= skipDepth;
      if (lookUp) counts.visitedNodes++;
      if (leaf) {
        if (filter.has(this.#leafHi[i]!, this.#leafLo[i]!)) continue;
        counts.reportedLeaves++;
        for (let q = this.#first[i]!; q < this.#first[i + 1]!; q++) marks[this.#order[q]!] = 1;
        continue;
      }
      if (lookUp && filter.has(this.#nodeHi[s]!, this.#nodeLo[s]!)) continue;
      stack[top] = s;
      stack[top + 1] = j;
      stack[top + 2] = this.#right[s]!;
      stack[top + 3] = depth + 1;
      stack[top + 4] = i;
      stack[top + 5] = s;
      stack[top + 6] = this.#left[s]!;
      stack[top + 7] = depth + 1;
      top += 8;
    }
  }

  /**
   * The depth of every element's leaf (the root's depth is 0), by element index: for the
   * theory's (1 − ε)^(d + 1), the chance that none of the d + 1 nodes on the path is a false
   * positive. A full walk of the tree: for experiments, not for reconciliation.
   */
  elementDepths(count: number): Uint8Array {
    const depths = new Uint8Array(count);
    const walk = (i: number, j: number, s: number, depth: number): void => {
      if (j - i === 1) {
        for (let q = this.#first[i]!; q < this.#first[i + 1]!; q++) depths[this.#order[q]!] = depth;
        return;
      }
      walk(i, s, this.#left[s]!, depth + 1);
      walk(s, j, this.#right[s]!, depth + 1);
    };
    if (this.leafCount > 0) walk(0, this.leafCount, this.#root, 0);
    return depths;
  }
}

/**
 * The split of node [i, j) (i + 1 < j): its points share the bits above the highest bit where the
 * first and last differ, and the right child starts at the first point with that bit set.
 */
function split(pointHi: Uint32Array, pointLo: Uint32Array, i: number, j: number): number {
  const hiDiff = pointHi[i]! ^ pointHi[j - 1]!;
  const inHi = hiDiff !== 0;
  const mask = inHi ? 1 << (31 - Math.clz32(hiDiff)) : 1 << (31 - Math.clz32(pointLo[i]! ^ pointLo[j - 1]!));
  const words = inHi ? pointHi : pointLo;
  let low = i + 1;
  let high = j - 1;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((words[mid]! & mask) !== 0) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * Element indices sorted by their 64-bit point (hi, lo) at words[e * stride + at]: an LSD radix
 * sort in four passes of 16 bits, linear in the elements.
 */
function sortByPoint(words: Uint32Array, count: number, stride: number, at: number): Uint32Array {
  let order = new Uint32Array(count);
  for (let e = 0; e < count; e++) order[e] = e;
  let next = new Uint32Array(count);
  const buckets = new Uint32Array(65_537);
  for (let pass = 0; pass < 4; pass++) {
    const word = at + (pass >>> 1);
    const shift = (pass & 1) * 16;
    buckets.fill(0);
    for (let q = 0; q < count; q++) buckets[((words[order[q]! * stride + word]! >>> shift) & 0xffff) + 1]!++;
    for (let d = 1; d < buckets.length; d++) buckets[d]! += buckets[d - 1]!;
    for (let q = 0; q < count; q++) {
      const e = order[q]!;
      next[buckets[(words[e * stride + word]! >>> shift) & 0xffff]!++] = e;
    }
    [order, next] = [next, order];
  }
  return order;
}
