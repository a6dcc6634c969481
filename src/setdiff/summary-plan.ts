import { roundBits, sizeForFpr } from '../filters/sizing.js';

/**
 * Mean depth of a leaf in a Patricia tree of n uniform points is log2 n + γ/ln 2 − 1/2 + (a tiny
 * oscillation) ≈ log2 n + 0.33; a visit looks up that many nodes plus the leaf itself.
 */
const PATH_NODES_OVER_LOG2 = 1.33;

/** Hashes per node tried when choosing the compressed summary's geometry. */
const K_MAX = 8;

/** Rice coding's header per filter (count and parameter), in bits. */
const RICE_HEADER_BITS = 40;

export interface SummaryPlanInput {
  /** Distinct elements of A (leaves of each tree). */
  readonly elements: number;
  /** Independent trees, each with its own filter (boosting). */
  readonly trees: number;
  /** Fraction of B − A to report at least, in expectation. */
  readonly recallTarget: number;
  /** |B| assumed when planning the depth of B's tree. */
  readonly bUrls: number;
  /** Largest filter, in bits. */
  readonly maxFilterBits: number;
  /** Depth above which B's visit looks no internal node up (default: half of log2 |B|). */
  readonly skipDepth?: number;
  /** ε itself instead of the one the recall target asks for (e.g. seed 004's 1 / log2 |B|). */
  readonly fprTarget?: number;
}

export interface SummaryPlan {
  /** Nodes of each tree: 2|A| − 1. */
  readonly nodes: number;
  /** Nodes on the path of a leaf of B's tree, root and leaf included: (1 − ε)^pathNodes found per tree. */
  readonly pathNodes: number;
  /** Internal nodes above this depth of B's tree are descended through without a lookup. */
  readonly skipDepth: number;
  /** ε: the false-positive rate each filter is sized for. */
  readonly fprTarget: number;
  readonly mBits: number;
  readonly k: number;
  /** Model of the Rice-coded size, bits. */
  readonly compressedBitsModel: number;
  /** The classic optimum for the same ε (what an uncompressed summary would take), bits. */
  readonly uncompressedOptimumBits: number;
}

/**
 * Expected nodes looked up on the path from the root of a tree of n leaves to one of them: all of
 * them, root and leaf included, but those above skipDepth (the leaf always).
 */
export function pathNodes(n: number, skipDepth: number): number {
  return Math.max(1, Math.log2(Math.max(1, n)) + PATH_NODES_OVER_LOG2 - skipDepth);
}

/**
 * The default skip depth: half of log2 |B| levels, at most 2^that ≈ sqrt(|B|) nodes descended
 * through without a lookup (a thousand at a million URLs: microseconds), while one false positive
 * can hide at most a 2^-skipDepth share of B − A instead of half of it.
 */
export function defaultSkipDepth(bUrls: number): number {
  return Math.floor(Math.log2(Math.max(1, bUrls)) / 2);
}

/**
 * ε per filter so that the union of `trees` visits finds a leaf of B − A with probability at least
 * `recallTarget`: one tree misses it with probability (1 − recall)^(1/R), and finds it when none of
 * the path's nodes is a false positive, (1 − ε)^pathNodes. Planned with the mean depth, which by
 * Jensen's inequality errs on the safe side.
 */
export function fprForRecall(recallTarget: number, trees: number, nodesOnPath: number): number {
  const missPerTree = (1 - recallTarget) ** (1 / trees);
  return 1 - (1 - missPerTree) ** (1 / nodesOnPath);
}

/**
 * Rice-coded bits of a filter of m bits with a fraction `fill` set, in expectation: the gaps are
 * geometric with mean g; with parameter r = floor(log2(g ln 2)) each costs r low bits, a stop bit
 * and a unary quotient of mean p / (1 − p), p = (g / (g + 1))^(2^r) the chance a gap reaches 2^r.
 */
export function riceBitsModel(mBits: number, fill: number): number {
  const ones = Math.max(1, mBits * fill);
  const gap = (mBits - ones) / ones;
  const r = Math.max(0, Math.floor(Math.log2(Math.max(1, gap * Math.LN2))));
  const reach = (gap / (gap + 1)) ** (2 ** r);
  return RICE_HEADER_BITS + ones * (r + 1 + reach / (1 - reach));
}

/**
 * Seed 004's other idea for a filter that travels: choose m and k for the *compressed* size. For
 * each k, the fill q with q^k = ε needs m = −k·nodes / ln(1 − q); a sparser filter with fewer
 * hashes codes smaller than the classic optimum (k = 1 comes within ~1.5 bits per node of
 * log2(1/ε)). The smallest model that fits maxFilterBits wins.
 */
export function planSummary(input: SummaryPlanInput): SummaryPlan {
  const nodes = input.elements === 0 ? 0 : 2 * input.elements - 1;
  const skipDepth = input.skipDepth ?? defaultSkipDepth(input.bUrls);
  const onPath = pathNodes(input.bUrls, skipDepth);
  const fprTarget = input.fprTarget ?? fprForRecall(input.recallTarget, input.trees, onPath);
  const best = compressedGeometry(nodes, fprTarget, input.maxFilterBits);
  return Object.freeze({
    nodes,
    pathNodes: onPath,
    skipDepth,
    fprTarget,
    ...best,
    uncompressedOptimumBits: sizeForFpr(Math.max(1, nodes), fprTarget).mBits,
  });
}

/**
 * The geometry of `items` at false-positive rate `fpr` whose Rice-coded size is the smallest,
 * among filters of at most maxFilterBits (past that even at k = 8: the classic optimum).
 */
export function compressedGeometry(
  items: number,
  fpr: number,
  maxFilterBits: number,
): { mBits: number; k: number; compressedBitsModel: number } {
  let best: { mBits: number; k: number; compressedBitsModel: number } | undefined;
  for (let k = 1; k <= K_MAX; k++) {
    const fill = fpr ** (1 / k);
    const mBits = roundBits(Math.ceil((-k * Math.max(1, items)) / Math.log1p(-fill)));
    if (mBits > maxFilterBits) continue;
    const bits = Math.min(mBits, riceBitsModel(mBits, fill));
    if (best === undefined || bits < best.compressedBitsModel) best = { mBits, k, compressedBitsModel: bits };
  }
  if (best !== undefined) return best;
  const optimum = sizeForFpr(Math.max(1, items), fpr);
  return { mBits: optimum.mBits, k: optimum.k, compressedBitsModel: optimum.mBits };
}
