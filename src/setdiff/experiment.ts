import { BloomFilter } from '../filters/bloom.js';
import { sizeForFpr } from '../filters/sizing.js';
import { seedFromHex } from '../hash/scheme.js';
import type { XxHash } from '../hash/xxhash.js';
import { MerkleTree } from './merkle-tree.js';
import { SetDifference, SetSummary, SetSummaryBuilder, encodeSetSummary } from './set-difference.js';
import { MAX_SUMMARY_FILTER_BITS } from './summary-file.js';
import { compressedGeometry } from './summary-plan.js';
import { ElementHashes, freshTreeSeeds } from './universe.js';

/**
 * Seed 004's experiment on real URLs, in memory: A = common + onlyA, B = common + onlyB (B in a
 * shuffled order), A's summary built and encoded, B's difference computed from the decoded bytes,
 * and beside it what `diff --against` does: a plain BF(A) at the false-positive rate that gives the
 * same recall, queried with every URL of B.
 */
export interface SetdiffExperimentInput {
  readonly common: readonly string[];
  readonly onlyA: readonly string[];
  readonly onlyB: readonly string[];
}

export interface SetdiffExperimentConfig {
  /** Trees (boosting). */
  readonly trees: number;
  readonly recallTarget?: number;
  /** ε per filter instead of the recall target's (seed 004's parameters: 1 / log2 |B|). */
  readonly fprTarget?: number;
  /** 0: seed 004's visit, every node looked up (default: half of log2 |B|). */
  readonly skipDepth?: number;
}

export interface SetdiffExperimentResult {
  readonly aUrls: number;
  readonly bUrls: number;
  readonly differenceUrls: number;
  readonly trees: number;
  readonly skipDepth: number;
  readonly mBits: number;
  readonly k: number;
  /** ε planned, and as the filters' fill gives it (mean over trees). */
  readonly fprTarget: number;
  readonly fprMeasured: number;
  readonly summaryBytes: number;
  readonly uncompressedBytes: number;
  /** Summary bits over |A| · log2 log2 |B|: the constant in front of seed 004's bound. */
  readonly bitsOverLogLog: number;
  readonly bitsPerUrl: number;
  readonly aBuildMs: number;
  /** B: hashing its URLs, Θ(|B|). */
  readonly bHashMs: number;
  /** B: sorting and summing its trees, Θ(|B|). */
  readonly bBuildMs: number;
  /** B: the visits, ∝ |B − A|. */
  readonly reconcileMs: number;
  readonly visitedNodes: number;
  /** reconcileMs per |B − A| · log2 |B|, in nanoseconds: flat when the time follows the difference. */
  readonly reconcileNsPerDiffLog: number;
  readonly reported: number;
  readonly recall: number;
  readonly falseReports: number;
  /**
   * Mean over B − A of 1 − Π_t (1 − (1 − ε_t)^L_t), L_t the lookups on the leaf's path in tree t:
   * d_t + 1 for a leaf at depth d_t, less the internal nodes above the skip depth.
   */
  readonly recallTheory: number;
  readonly meanDepth: number;
  /** A plain BF(A) at FPR 1 − recall: what diff --against needs for the same recall. */
  readonly plain: {
    readonly fpr: number;
    readonly bitsPerUrl: number;
    readonly compressedBitsPerUrl: number;
    readonly recall: number;
    readonly queryMs: number;
  };
}

export function runSetdiffExperiment(
  hash: XxHash,
  input: SetdiffExperimentInput,
  config: SetdiffExperimentConfig,
): SetdiffExperimentResult {
  const a = [...input.common, ...input.onlyA];
  const b = shuffled([...input.common, ...input.onlyB]);
  const onlyB = new Set(input.onlyB);
  const seeds = freshTreeSeeds(config.trees);
  const aStarted = performance.now();
  const builder = new SetSummaryBuilder(hash, {
    trees: config.trees,
    seeds,
    bUrls: b.length,
    ...(config.recallTarget === undefined ? {} : { recallTarget: config.recallTarget }),
    ...(config.fprTarget === undefined ? {} : { fprTarget: config.fprTarget }),
    ...(config.skipDepth === undefined ? {} : { skipDepth: config.skipDepth }),
  });
  builder.add(a);
  const encoded = encodeSetSummary(hash, builder.finish());
  const aBuildMs = performance.now() - aStarted;
  const summary = SetSummary.decode(hash, encoded.bytes);
  const difference = new SetDifference(hash, summary);
  const hashStarted = performance.now();
  difference.add(b);
  const bHashMs = performance.now() - hashStarted;
  const result = difference.finish();
  let truePositives = 0;
  for (let i = 0; i < b.length; i++) if (result.marks[i] === 1 && onlyB.has(b[i]!)) truePositives++;
  const theory = theoryOf(hash, b, onlyB, summary);
  const recall = onlyB.size === 0 ? 1 : truePositives / onlyB.size;
  const tree = summary.header.trees[0]!;
  const logLog = Math.log2(Math.max(2, Math.log2(Math.max(2, b.length))));
  return {
    aUrls: a.length,
    bUrls: b.length,
    differenceUrls: onlyB.size,
    trees: config.trees,
    skipDepth: summary.header.skipDepth,
    mBits: tree.mBits,
    k: tree.k,
    fprTarget: summary.header.plan.fprTarget,
    fprMeasured: summary.filters.reduce((sum, _, t) => sum + summary.fpr(t), 0) / config.trees,
    summaryBytes: encoded.compressedBytes,
    uncompressedBytes: encoded.uncompressedBytes,
    bitsOverLogLog: (8 * encoded.compressedBytes) / (Math.max(1, a.length) * logLog),
    bitsPerUrl: (8 * encoded.compressedBytes) / Math.max(1, a.length),
    aBuildMs,
    bHashMs,
    bBuildMs: result.buildMs,
    reconcileMs: result.reconcileMs,
    visitedNodes: result.visitedNodes,
    reconcileNsPerDiffLog:
      onlyB.size === 0 ? 0 : (1e6 * result.reconcileMs) / (onlyB.size * Math.log2(Math.max(2, b.length))),
    reported: result.reported,
    recall,
    falseReports: result.reported - truePositives,
    recallTheory: theory.recall,
    meanDepth: theory.meanDepth,
    plain: plainBloom(hash, a, b, onlyB, Math.min(1 - 1e-9, Math.max(1e-9, 1 - recall))),
  };
}

/** The seed's (1 − ε)^(d + 1) per tree over B − A (less the skipped lookups), with each filter's measured ε and B's real depths. */
function theoryOf(
  hash: XxHash,
  b: readonly string[],
  onlyB: ReadonlySet<string>,
  summary: SetSummary,
): { recall: number; meanDepth: number } {
  const elements = new ElementHashes(summary.header.trees);
  elements.add(hash, b, false);
  const missAll = new Float64Array(b.length).fill(1);
  let depthSum = 0;
  const skip = summary.header.skipDepth;
  summary.filters.forEach((_, t) => {
    const depths = new MerkleTree(elements.words, elements.count, elements.trees, t).elementDepths(elements.count);
    const found = 1 - summary.fpr(t);
    for (let i = 0; i < b.length; i++) {
      if (!onlyB.has(b[i]!)) continue;
      missAll[i]! *= 1 - found ** (depths[i]! + 1 - Math.min(skip, depths[i]!));
      if (t === 0) depthSum += depths[i]!;
    }
  });
  let recall = 0;
  for (let i = 0; i < b.length; i++) if (onlyB.has(b[i]!)) recall += 1 - missAll[i]!;
  return {
    recall: onlyB.size === 0 ? 1 : recall / onlyB.size,
    meanDepth: onlyB.size === 0 ? 0 : depthSum / onlyB.size,
  };
}

/** BF(A) at `fpr`, queried with every URL of B as diff --against does: Θ(|B|). */
function plainBloom(
  hash: XxHash,
  a: readonly string[],
  b: readonly string[],
  onlyB: ReadonlySet<string>,
  fpr: number,
): SetdiffExperimentResult['plain'] {
  const sizing = sizeForFpr(Math.max(1, a.length), fpr);
  const filter = new BloomFilter({ layout: 'classic', mBits: sizing.mBits, k: sizing.k });
  const seed = [seedFromHex(freshTreeSeeds(1)[0]!.universeSeed)];
  const aWords = new Uint32Array(2 * a.length);
  hash.hashKeys(a, seed, aWords, 2, 0);
  for (let i = 0; i < a.length; i++) filter.add(aWords[2 * i + 1]!, aWords[2 * i]!);
  const started = performance.now();
  const bWords = new Uint32Array(2 * b.length);
  hash.hashKeys(b, seed, bWords, 2, 0);
  const absent = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) absent[i] = filter.has(bWords[2 * i + 1]!, bWords[2 * i]!) ? 0 : 1;
  const queryMs = performance.now() - started;
  let found = 0;
  for (let i = 0; i < b.length; i++) if (absent[i] === 1 && onlyB.has(b[i]!)) found++;
  const compressed = compressedGeometry(a.length, fpr, MAX_SUMMARY_FILTER_BITS);
  return {
    fpr,
    bitsPerUrl: sizing.mBits / Math.max(1, a.length),
    compressedBitsPerUrl: compressed.compressedBitsModel / Math.max(1, a.length),
    recall: onlyB.size === 0 ? 1 : found / onlyB.size,
    queryMs,
  };
}

/** A copy of `items` in a random order (Fisher–Yates): B's input order owes nothing to A's. */
function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
