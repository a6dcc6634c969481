import { SeenStoreError } from '../errors.js';
import type { Layout } from './bloom.js';
import type { Keying } from './keying.js';
import { MAX_PARTITIONS, PARTITIONED_LAYOUT } from './partitions.js';
import { DEFAULT_GROWTH, type Growth } from './scalable.js';
import { roundBits, sizeBlockedForFpr, sizeForFpr } from './sizing.js';

/**
 * How an epoch's filters answer "seen?". Every strategy here is a group of seeded Bloom filters per
 * slice, so the store persists them all the same way; the strategy of an epoch is fixed by its
 * header (each slice's layout, seeds and keying) and never changes. docs/strategies.md has the
 * sizing rules and the measurements.
 *
 * - `classic`: one filter, k positions anywhere in the array.
 * - `blocked`: one filter, the k positions inside one 64-byte block (one cache line per URL).
 * - `spatial:S`: S classic filters with their own seeds; a URL is seen only if all S hold it
 *   (the thesis's spatial strategy, 4.3). Across epochs with fresh seeds it is spatio-temporal (4.4).
 * - `eigen:D`: a classic filter plus an extension region hashing the URL's features with D
 *   positions (seed 001); seen only if both hold.
 * - `multilayer:L`: L filters for the URL's segments by depth plus an XOR layer (seed 002).
 * - `counting`: a spectral Bloom filter (seeds 003/004): one-byte counters, minimum selection, the
 *   recurring-minimum secondary, deletion; counts how often a URL was added.
 * - `partitioned[:P]`: blocked, with the blocks cut into P partitions and each URL's blocks in one
 *   of them (filters/partitions.ts): what lets the Redis backend spread one epoch over a cluster's
 *   slots. P by default from the first slice's size (defaultPartitionCount).
 * - `scalable:F,T`: classic, with the epoch's growth chosen: each new slice F times larger with its
 *   error tightened by T (Almeida et al.). Every strategy grows this way; `scalable` names the
 *   growth explicitly, and plain `scalable` is classic with the default growth (2, 0.5).
 */
export interface Strategy {
  readonly kind: 'classic' | 'blocked' | 'spatial' | 'eigen' | 'multilayer' | 'scalable' | 'counting' | 'partitioned';
  readonly layout: Layout | typeof PARTITIONED_LAYOUT;
  /** Filters per slice, each with its own seed. */
  readonly filters: number;
  /** eigen: hashes of the feature region. */
  readonly d?: number;
  /** multilayer: segment layers (the XOR layer comes on top). */
  readonly layers?: number;
  /** scalable: the growth of the epoch's slices (others use the default). */
  readonly growth?: Growth;
  /** partitioned: P as given (`partitioned:P`); absent: chosen from the first slice's size. */
  readonly partitions?: number;
}

export const MAX_SPATIAL_FILTERS = 16;
export const MAX_EIGEN_HASHES = 16;
export const MAX_LAYERS = 8;
/** `eigen` without D: two feature hashes (seed 001 suggests d of about k / 3; k is 7 at 1 %). */
export const DEFAULT_EIGEN_HASHES = 2;
/** `multilayer` without L: host, two path segments, and the rest. */
export const DEFAULT_LAYERS = 4;

export const CLASSIC: Strategy = Object.freeze({ kind: 'classic', layout: 'classic', filters: 1 });
const BLOCKED: Strategy = Object.freeze({ kind: 'blocked', layout: 'blocked', filters: 1 });
const COUNTING: Strategy = Object.freeze({ kind: 'counting', layout: 'classic', filters: 2 });
/** Secondary (recurring-minimum) counters per primary counter: seed 004's "much smaller" filter. */
export const COUNTING_SECONDARY_RATIO = 0.25;

/** Growth factors and tightenings `scalable:F,T` accepts. */
export const GROWTH_FACTOR_RANGE = [1, 8] as const;
export const TIGHTENING_RANGE = [0.1, 0.95] as const;

export const STRATEGY_HELP = `classic, blocked, counting, partitioned[:P] (P = 1..${MAX_PARTITIONS}), spatial:S (S = 2..${MAX_SPATIAL_FILTERS}), eigen[:D] (D = 1..${MAX_EIGEN_HASHES}), multilayer[:L] (L = 2..${MAX_LAYERS}) or scalable[:F,T] (F = ${GROWTH_FACTOR_RANGE.join('..')}, T = ${TIGHTENING_RANGE.join('..')})`;

export function parseStrategy(text: string): Strategy {
  if (typeof text !== 'string') throw new SeenStoreError('USAGE', `a strategy is a string: ${STRATEGY_HELP}`);
  if (text === 'classic') return CLASSIC;
  if (text === 'blocked') return BLOCKED;
  if (text === 'counting') return COUNTING;
  const parts = /^partitioned(?::([0-9]{1,4}))?$/.exec(text);
  if (parts !== null) {
    const n = parts[1] === undefined ? undefined : Number(parts[1]);
    if (n === undefined || (n >= 1 && n <= MAX_PARTITIONS)) return partitioned(n);
  }
  const match = /^(spatial|eigen|multilayer)(?::([0-9]{1,2}))?$/.exec(text);
  if (match !== null) {
    const n = match[2] === undefined ? undefined : Number(match[2]);
    if (match[1] === 'spatial' && n !== undefined && n >= 2 && n <= MAX_SPATIAL_FILTERS) return spatial(n);
    if (match[1] === 'eigen' && (n === undefined || (n >= 1 && n <= MAX_EIGEN_HASHES)))
      return eigen(n ?? DEFAULT_EIGEN_HASHES);
    if (match[1] === 'multilayer' && (n === undefined || (n >= 2 && n <= MAX_LAYERS)))
      return multilayer(n ?? DEFAULT_LAYERS);
  }
  const growth = /^scalable(?::([0-9]+(?:\.[0-9]+)?),([0-9]+(?:\.[0-9]+)?))?$/.exec(text);
  if (growth !== null) {
    const factor = growth[1] === undefined ? DEFAULT_GROWTH.factor : Number(growth[1]);
    const tightening = growth[2] === undefined ? DEFAULT_GROWTH.tightening : Number(growth[2]);
    const within = (x: number, [low, high]: readonly [number, number]): boolean => x >= low && x <= high;
    if (within(factor, GROWTH_FACTOR_RANGE) && within(tightening, TIGHTENING_RANGE))
      return scalable({ factor, tightening });
  }
  throw new SeenStoreError('USAGE', `unknown strategy ${JSON.stringify(text)}: use ${STRATEGY_HELP}`);
}

const spatial = (filters: number): Strategy => Object.freeze({ kind: 'spatial', layout: 'classic', filters });
const eigen = (d: number): Strategy => Object.freeze({ kind: 'eigen', layout: 'classic', filters: 2, d });
const multilayer = (layers: number): Strategy =>
  Object.freeze({ kind: 'multilayer', layout: 'classic', filters: layers + 1, layers });
const partitioned = (partitions?: number): Strategy =>
  Object.freeze({
    kind: 'partitioned',
    layout: PARTITIONED_LAYOUT,
    filters: 1,
    ...(partitions === undefined ? {} : { partitions }),
  });
const scalable = (growth: Growth): Strategy =>
  Object.freeze({ kind: 'scalable', layout: 'classic', filters: 1, growth: Object.freeze({ ...growth }) });

/** The growth an epoch of this strategy gets. */
export function growthOf(strategy: Strategy): Growth {
  return strategy.growth ?? DEFAULT_GROWTH;
}

/**
 * The strategy of an epoch as its header records it: the first slice's layout, seeds and keying,
 * and the epoch's growth (a classic epoch with other than the default growth is `scalable:F,T`).
 */
export function strategyOf(
  slice: { readonly layout: string; readonly seeds: readonly unknown[]; readonly keying?: Keying },
  growth: Growth = DEFAULT_GROWTH,
): Strategy {
  if (slice.keying?.kind === 'eigen-v1') return eigen(slice.keying.featureK);
  if (slice.keying?.kind === 'multilayer-v1') return multilayer(slice.keying.layers);
  if (slice.keying?.kind === 'counting-v1') return COUNTING;
  if (slice.layout === PARTITIONED_LAYOUT) return partitioned();
  if (slice.seeds.length > 1) return spatial(slice.seeds.length);
  if (slice.layout === 'blocked') return BLOCKED;
  if (growth.factor !== DEFAULT_GROWTH.factor || growth.tightening !== DEFAULT_GROWTH.tightening)
    return scalable(growth);
  return CLASSIC;
}

/** The name as `--strategy` takes it and `epoch show` prints it. */
export function strategyName(strategy: Strategy): string {
  switch (strategy.kind) {
    case 'spatial':
      return `spatial:${strategy.filters}`;
    case 'eigen':
      return `eigen:${strategy.d}`;
    case 'multilayer':
      return `multilayer:${strategy.layers}`;
    case 'partitioned':
      return strategy.partitions === undefined ? 'partitioned' : `partitioned:${strategy.partitions}`;
    case 'scalable':
      return `scalable:${strategy.growth!.factor},${strategy.growth!.tightening}`;
    default:
      return strategy.kind;
  }
}

export interface SliceShape {
  readonly mBits: number;
  readonly k: number;
  readonly keying?: Keying;
}

/**
 * Filter geometry of one slice of `capacityUrls` URLs whose union must err at most `fpr`:
 * - classic: the classic optimum; blocked: the smallest m whose closed form (block loads) meets `fpr`;
 * - spatial:S: each filter at the S-th root of `fpr` (all must hold: the same total bits);
 * - eigen:D: the URL filter alone at `fpr` (so the promise holds whatever the features do), and a
 *   feature region of m·D/k bits hashed D times, seed 001's recipe;
 * - multilayer:L: every layer like the XOR layer, which alone is sized for `fpr` (its key is unique
 *   per URL), so the promise holds however much the segment layers share.
 * - counting: m counters where classic has m bits (membership is the primary's minimum > 0, which
 *   errs exactly as that Bloom filter), and a secondary of m/4 counters.
 */
export function sliceShape(strategy: Strategy, capacityUrls: number, fpr: number): SliceShape {
  switch (strategy.kind) {
    case 'spatial':
      return sizeForFpr(capacityUrls, fpr ** (1 / strategy.filters));
    case 'eigen': {
      const main = sizeForFpr(capacityUrls, fpr);
      const d = strategy.d!;
      return {
        ...main,
        keying: { kind: 'eigen-v1', featureMBits: roundBits(Math.ceil((main.mBits * d) / main.k)), featureK: d },
      };
    }
    case 'multilayer':
      return { ...sizeForFpr(capacityUrls, fpr), keying: { kind: 'multilayer-v1', layers: strategy.layers! } };
    case 'counting': {
      // One counter per bit of the classic optimum (membership errs as that filter would); mBits
      // counts the counters' storage bits.
      const { mBits: cells, k } = sizeForFpr(capacityUrls, fpr);
      const secondaryCells = roundBits(Math.ceil(cells * COUNTING_SECONDARY_RATIO));
      return { mBits: cells * 8, k, keying: { kind: 'counting-v1', secondaryCells } };
    }
    case 'blocked':
    case 'partitioned':
      // partitioned: rounded up to whole blocks per partition where P is known (newEpochHeader, nextSliceSpec).
      return sizeBlockedForFpr(capacityUrls, fpr);
    default:
      return sizeForFpr(capacityUrls, fpr);
  }
}
