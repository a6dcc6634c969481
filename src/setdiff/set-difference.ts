import { SeenStoreError } from '../errors.js';
import { BloomFilter } from '../filters/bloom.js';
import { fprFromFill } from '../filters/sizing.js';
import { XxHash } from '../hash/xxhash.js';
import { urlKeys } from '../url/url-keys.js';
import type { NormalizeMode } from '../url/normalize.js';
import { MerkleTree, type ReconcileCounts } from './merkle-tree.js';
import {
  MAX_SUMMARY_FILTER_BITS,
  decodeSummary,
  readSummaryFile,
  encodeFilter,
  encodeSummary,
  type SummaryHeader,
  type SummaryTree,
} from './summary-file.js';
import { planSummary } from './summary-plan.js';
import { ElementHashes, MAX_TREES, SETDIFF_SCHEME_ID, freshTreeSeeds, type TreeSeeds } from './universe.js';

/**
 * Fraction of B − A reported that the default geometry aims at, in expectation. Above 0.9 so that
 * single runs, whose recall scatters around the expectation (misses come in subtrees), report at
 * least 90 % on real URLs (docs/results.md).
 */
export const DEFAULT_RECALL_TARGET = 0.93;

export interface SummarizeOptions {
  /** How URLs become keys (default `none`); B's side uses the summary's. */
  readonly normalize?: NormalizeMode;
  /** Independent trees and filters (boosting; default 1): each raises the recall, and costs a filter. */
  readonly trees?: number;
  /** Fraction of B − A to report, in expectation (default 0.93): sets ε. */
  readonly recallTarget?: number;
  /** |B| to plan the depth of B's tree for (default |A|): a larger B has deeper paths and needs a smaller ε. */
  readonly bUrls?: number;
  /** Largest filter, bits (default and most 2^31 − 512): past it, more hashes per node instead of a sparser filter. */
  readonly maxFilterBits?: number;
  /**
   * Depth of B's tree above which its visit looks no internal node up (default half of log2 |B|;
   * 0 is seed 004's visit): fewer lookups per path, so a larger ε for the same recall, and no
   * false positive near the root that hides half of B − A.
   */
  readonly skipDepth?: number;
  /** ε of each filter, instead of the one recallTarget asks for (experiments: seed 004's 1 / log2 |B|). */
  readonly fprTarget?: number;
  /** Seeds per tree instead of fresh ones (tests, reproducible experiments). */
  readonly seeds?: readonly TreeSeeds[];
}

/** A summary, built here or read from a file: its header and each tree's filter. */
export class SetSummary {
  readonly header: SummaryHeader;
  /** @internal The filters as bit arrays (BF(MT_A) of each tree). */
  readonly filters: readonly BloomFilter[];
  /** @internal */
  readonly hash: XxHash;

  /** @internal Summaries come from SetSummaryBuilder, SetSummary.open and SetSummary.fromBytes. */
  constructor(hash: XxHash, header: SummaryHeader, filters: readonly BloomFilter[]) {
    this.hash = hash;
    this.header = header;
    this.filters = filters;
  }

  /** Reads and checks a summary file (NOT_FOUND, STORE_CORRUPT, FORMAT_UNSUPPORTED). */
  static async open(path: string): Promise<SetSummary> {
    return SetSummary.read(await XxHash.load(), path);
  }

  /** Checks and decodes a summary's bytes (what SEEN.SETDIFF.SUMMARY answers, or a file's contents). */
  static async fromBytes(bytes: Uint8Array): Promise<SetSummary> {
    return SetSummary.decode(await XxHash.load(), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  }

  /** The summary file's bytes, each filter Rice-coded when that is smaller, and both sizes. */
  encode(): EncodedSummary {
    return encodeSetSummary(this.hash, this);
  }

  /** @internal Checks and decodes a summary file's bytes (STORE_CORRUPT, FORMAT_UNSUPPORTED on damage or another format). */
  static decode(hash: XxHash, bytes: Buffer, where = 'summary'): SetSummary {
    const { header, filters } = decodeSummary(hash, bytes, where);
    return new SetSummary(
      hash,
      header,
      header.trees.map((tree, t) => {
        const filter = new BloomFilter({ layout: 'classic', mBits: tree.mBits, k: tree.k });
        filter.orRegion(0, filters[t]!);
        return filter;
      }),
    );
  }

  /** @internal As open, with the caller's hash. */
  static async read(hash: XxHash, path: string): Promise<SetSummary> {
    return SetSummary.decode(hash, await readSummaryFile(path), `summary ${path}`);
  }

  /** Estimated false-positive rate of tree t's filter, from its fill. */
  fpr(tree: number): number {
    const filter = this.filters[tree]!;
    return fprFromFill(filter.onesBits / filter.geometry.mBits, filter.geometry.k);
  }
}

/** A summary's file bytes and its sizes: as written, and as the bit arrays would be without coding. */
export interface EncodedSummary {
  readonly bytes: Buffer;
  readonly compressedBytes: number;
  readonly uncompressedBytes: number;
}

/**
 * Side A: collects A's URLs (hashes only), then builds MT_A per tree and BF(MT_A) sized for the
 * compressed size at the ε that the recall target asks for (summary-plan.ts).
 */
export class SetSummaryBuilder {
  readonly #hash: XxHash;
  readonly #normalize: NormalizeMode;
  readonly #seeds: readonly TreeSeeds[];
  readonly #elements: ElementHashes;
  readonly #options: SummarizeOptions;

  /** A builder for A's summary. */
  static async create(options: SummarizeOptions = {}): Promise<SetSummaryBuilder> {
    return new SetSummaryBuilder(await XxHash.load(), options);
  }

  /** @internal Builders come from SetSummaryBuilder.create. */
  constructor(hash: XxHash, options: SummarizeOptions = {}) {
    this.#hash = hash;
    this.#normalize = options.normalize ?? 'none';
    const trees = options.trees ?? options.seeds?.length ?? 1;
    if (!Number.isInteger(trees) || trees < 1 || trees > MAX_TREES)
      throw new RangeError(`trees must be an integer in [1, ${MAX_TREES}], got ${trees}`);
    if (options.seeds !== undefined && options.seeds.length !== trees)
      throw new RangeError('give one seed pair per tree');
    const recall = options.recallTarget ?? DEFAULT_RECALL_TARGET;
    if (!(recall > 0 && recall < 1)) throw new RangeError(`the recall target must be in (0, 1), got ${recall}`);
    if (options.fprTarget !== undefined && !(options.fprTarget > 0 && options.fprTarget < 1))
      throw new RangeError(`fprTarget must be in (0, 1), got ${options.fprTarget}`);
    this.#seeds = options.seeds ?? freshTreeSeeds(trees);
    this.#elements = new ElementHashes(this.#seeds);
    this.#options = options;
  }

  /** Adds URLs of A (INVALID_URL, and nothing added, when one cannot be a key). */
  add(urls: readonly string[]): void {
    this.#elements.add(this.#hash, urlKeys(urls, this.#normalize, true), this.#normalize === 'url');
  }

  /** Builds each tree in turn (memory: one tree at a time) and adds its nodes to its filter. */
  finish(): SetSummary {
    const elements = this.#elements;
    const treeOf = (t: number): MerkleTree => new MerkleTree(elements.words, elements.count, elements.trees, t);
    const first = treeOf(0);
    const leaves = first.leafCount;
    const recallTarget = this.#options.recallTarget ?? DEFAULT_RECALL_TARGET;
    const bUrls = this.#options.bUrls ?? leaves;
    const maxFilterBits = Math.min(this.#options.maxFilterBits ?? MAX_SUMMARY_FILTER_BITS, MAX_SUMMARY_FILTER_BITS);
    const { fprTarget, skipDepth } = this.#options;
    const plan = planSummary({
      elements: leaves,
      trees: this.#seeds.length,
      recallTarget,
      bUrls,
      maxFilterBits,
      ...(fprTarget === undefined ? {} : { fprTarget }),
      ...(skipDepth === undefined ? {} : { skipDepth }),
    });
    if (plan.mBits > MAX_SUMMARY_FILTER_BITS)
      throw new SeenStoreError(
        'CAPACITY_EXCEEDED',
        `a summary of ${leaves} URLs needs a filter of ${plan.mBits} bits, more than ${MAX_SUMMARY_FILTER_BITS}`,
      );
    const filters = this.#seeds.map((_, t) => {
      const filter = new BloomFilter({ layout: 'classic', mBits: plan.mBits, k: plan.k });
      (t === 0 ? first : treeOf(t)).addNodesTo(filter);
      return filter;
    });
    const header: SummaryHeader = {
      v: 1,
      scheme: SETDIFF_SCHEME_ID,
      normalize: this.#normalize,
      createdAtMs: Date.now(),
      elements: leaves,
      plan: { recallTarget, bUrls, pathNodes: plan.pathNodes, fprTarget: plan.fprTarget },
      skipDepth: plan.skipDepth,
      trees: filters.map(
        (filter, t): SummaryTree => ({
          ...this.#seeds[t]!,
          mBits: plan.mBits,
          k: plan.k,
          nodes: first.nodeCount,
          onesBits: filter.onesBits,
          encoding: 0,
          storedBytes: 0,
        }),
      ),
    };
    return new SetSummary(this.#hash, header, filters);
  }
}

/** Encodes a summary for the wire (each filter Rice-coded when that is smaller). */
export function encodeSetSummary(hash: XxHash, summary: SetSummary): EncodedSummary {
  const coded = summary.filters.map((filter) => encodeFilter(filter.bytes));
  const header: SummaryHeader = {
    ...summary.header,
    trees: summary.header.trees.map((tree, t) => ({
      ...tree,
      onesBits: summary.filters[t]!.onesBits,
      encoding: coded[t]!.encoding,
      storedBytes: coded[t]!.stored.length,
    })),
  };
  const bytes = encodeSummary(
    hash,
    header,
    coded.map((c) => c.stored),
  );
  return {
    bytes,
    compressedBytes: bytes.length,
    uncompressedBytes:
      bytes.length + summary.filters.reduce((n, f, t) => n + f.bytes.length - coded[t]!.stored.length, 0),
  };
}

export interface SetDifferenceOptions {
  /** Trees of the summary to use (default: all it has): the union of their reports. */
  readonly boost?: number;
}

export interface SetDifferenceResult {
  /** marks[i] is 1 when element i (the i-th URL added) is judged not in A. */
  readonly marks: Uint8Array;
  readonly elements: number;
  /** Elements judged not in A (duplicates in B each counted). */
  readonly reported: number;
  readonly leaves: number;
  readonly trees: number;
  /** Nodes looked up in A's filters, all trees. */
  readonly visitedNodes: number;
  /** Sorting and hashing B's trees: Θ(|B|). */
  readonly buildMs: number;
  /** The visits: about |B − A| · log |B| lookups per tree. */
  readonly reconcileMs: number;
}

/**
 * Side B: collects B's URLs (hashes only, in input order), builds MT_B per tree of the summary and
 * visits it against BF(MT_A). No false reports (a Bloom filter has no false negatives, and a node
 * of A∩B has the same hash on both sides); a leaf of B − A is missed when a node on its path is a
 * false positive.
 */
export class SetDifference {
  readonly #hash: XxHash;
  readonly #summary: SetSummary;
  readonly #trees: number;
  readonly #elements: ElementHashes;

  /** B's side against `summary` (USAGE when options.boost is more than the summary's trees). */
  static create(summary: SetSummary, options: SetDifferenceOptions = {}): SetDifference {
    return new SetDifference(summary.hash, summary, options);
  }

  /** @internal Differences come from SetDifference.create. */
  constructor(hash: XxHash, summary: SetSummary, options: SetDifferenceOptions = {}) {
    const available = summary.header.trees.length;
    const boost = options.boost ?? available;
    if (!Number.isInteger(boost) || boost < 1 || boost > available) {
      throw new SeenStoreError(
        'USAGE',
        `--boost must be 1..${available}: the summary has ${available} tree${available === 1 ? '' : 's'}, got ${boost}`,
      );
    }
    this.#hash = hash;
    this.#summary = summary;
    this.#trees = boost;
    this.#elements = new ElementHashes(summary.header.trees.slice(0, boost));
  }

  get normalize(): NormalizeMode {
    return this.#summary.header.normalize;
  }

  add(urls: readonly string[]): void {
    this.#elements.add(
      this.#hash,
      urlKeys(urls, this.#summary.header.normalize, true),
      this.#summary.header.normalize === 'url',
    );
  }

  finish(): SetDifferenceResult {
    const elements = this.#elements;
    const marks = new Uint8Array(elements.count);
    const counts: ReconcileCounts = { visitedNodes: 0, reportedLeaves: 0 };
    let buildMs = 0;
    let reconcileMs = 0;
    let leaves = 0;
    for (let t = 0; t < this.#trees; t++) {
      const started = performance.now();
      const tree = new MerkleTree(elements.words, elements.count, elements.trees, t);
      const built = performance.now();
      tree.reconcile(this.#summary.filters[t]!, marks, counts, this.#summary.header.skipDepth);
      buildMs += built - started;
      reconcileMs += performance.now() - built;
      leaves = tree.leafCount;
    }
    let reported = 0;
    for (let i = 0; i < marks.length; i++) reported += marks[i]!;
    return {
      marks,
      elements: elements.count,
      reported,
      leaves,
      trees: this.#trees,
      visitedNodes: counts.visitedNodes,
      buildMs,
      reconcileMs,
    };
  }
}
