import { freshSeedHex, seedFromHex } from '../hash/scheme.js';
import type { XxHash } from '../hash/xxhash.js';
import { BloomFilter, type FilterGeometry } from './bloom.js';
import { allHold } from './decide.js';
import { filterGeometries, hashSlice, type Keying } from './keying.js';
import { blockedFprCurve, classicFprCurve, roundBits, sizeByMultiplier } from './sizing.js';
import { SpectralFilter } from './counting.js';
import { COUNTING_SECONDARY_RATIO, sliceShape, strategyName, type SliceShape, type Strategy } from './strategy.js';

/**
 * The thesis's experiments (its chapter 5) on any list of distinct URLs, in memory, with the same
 * filters and hash scheme as the store:
 *
 * - `non-incremental` (5.2.2): insert N URLs, then query Q others; a query that all filters hold is
 *   a false positive. The worst case: a filter at its capacity.
 * - `incremental` (5.2.1): query each of the N URLs, then insert it, into initially empty filters:
 *   what a crawler meets while its filter fills.
 * - `revisit` (5.7.2): the non-incremental test twice, with fresh seeds the second time (the next
 *   epoch); a query is a false positive only if it is one in both. With `spatial:S` this is the
 *   spatio-temporal test (5.9).
 * - `revisit-incremental` (5.7.1): the incremental test twice, likewise.
 */
export type SimulationMode = 'incremental' | 'non-incremental' | 'revisit' | 'revisit-incremental';

export const SIMULATION_MODES: readonly SimulationMode[] = [
  'incremental',
  'non-incremental',
  'revisit',
  'revisit-incremental',
];

export interface SimulationConfig {
  readonly mode: SimulationMode;
  readonly strategy: Strategy;
  /** Hashes (bit positions) per URL per filter; undefined with `fpr` sizing means the optimum. */
  readonly hashes?: number;
  /** m = N·k·M bits per filter (the thesis's equation 5.1), or sized for a target FPR. */
  readonly sizing: { readonly bitsPerHash: number } | { readonly fpr: number };
  readonly runs: number;
}

export interface RunMeasurement {
  readonly falsePositives: number;
  readonly fpr: number;
  /** Adds (hash + set bits) per second, and queries per second, of the run's first epoch. */
  readonly addsPerSecond: number;
  readonly queriesPerSecond: number;
}

export interface SimulationResult {
  readonly mode: SimulationMode;
  readonly strategy: string;
  readonly layout: string;
  readonly filters: number;
  readonly k: number;
  readonly mBits: number;
  /** Every filter of the slice: the URL filter(s), then feature or layer filters. */
  readonly geometries: readonly FilterGeometry[];
  readonly sizingRule: string;
  readonly inserted: number;
  readonly queried: number;
  /** Bits of all filters of one epoch per inserted URL. */
  readonly bitsPerUrl: number;
  /** Closed-form expectation of the false-positive rate (see theoryFpr). */
  readonly theory: number;
  readonly mean: number;
  readonly sd: number;
  readonly min: number;
  readonly max: number;
  /** (mean - theory) / standard error of the mean under the binomial model. */
  readonly z: number;
  readonly addsPerSecond: number;
  readonly queriesPerSecond: number;
  readonly runs: readonly RunMeasurement[];
}

const BATCH = 8192;

/**
 * Filter geometry for N inserted URLs: by the thesis's multiplier (m = N·k·M for each URL filter;
 * eigen's feature region m·D/k), or for a target FPR as the store sizes the strategy (with
 * `hashes`, the smallest m that reaches the per-filter rate with k hashes).
 */
export function simulationShape(config: SimulationConfig, inserted: number): SliceShape {
  const { strategy, hashes, sizing } = config;
  let main;
  if ('bitsPerHash' in sizing) {
    if (hashes === undefined) throw new RangeError('--bits-per-hash needs --hashes');
    main = sizeByMultiplier(inserted, hashes, sizing.bitsPerHash);
  } else {
    const shape = sliceShape(strategy, inserted, sizing.fpr);
    if (hashes === undefined) return shape;
    // The per-filter rate the strategy's sizing aims at, reached with the given k instead:
    // for a given k the smallest m with (1 - e^(-kn/m))^k <= p is m = -kn / ln(1 - p^(1/k)).
    const perFilter = strategy.kind === 'spatial' ? sizing.fpr ** (1 / strategy.filters) : sizing.fpr;
    main = { mBits: roundBits(Math.ceil((-hashes * inserted) / Math.log1p(-(perFilter ** (1 / hashes))))), k: hashes };
  }
  if (strategy.kind === 'eigen') {
    const keying: Keying = {
      kind: 'eigen-v1',
      featureMBits: roundBits(Math.ceil((main.mBits * strategy.d!) / main.k)),
      featureK: strategy.d!,
    };
    return { ...main, keying };
  }
  if (strategy.kind === 'multilayer') return { ...main, keying: { kind: 'multilayer-v1', layers: strategy.layers! } };
  if (strategy.kind === 'counting') {
    // main.mBits counters; the slice records their storage bits.
    return {
      mBits: main.mBits * 8,
      k: main.k,
      keying: { kind: 'counting-v1', secondaryCells: roundBits(Math.ceil(main.mBits * COUNTING_SECONDARY_RATIO)) },
    };
  }
  return main;
}

function geometriesOf(strategy: Strategy, shape: SliceShape): FilterGeometry[] {
  return filterGeometries({
    layout: strategy.layout,
    mBits: shape.mBits,
    k: shape.k,
    seeds: new Array<string>(strategy.filters).fill(''),
    ...(shape.keying === undefined ? {} : { keying: shape.keying }),
  });
}

/**
 * The expected false-positive rate if every filter's key were an independent random value per URL.
 * One classic filter of m bits and k hashes after n inserts answers a fresh query falsely with
 * f(n) = (1 - (1 - 1/m)^(kn))^k; a blocked filter with sum_j Poisson(j; n/B) (1 - (1 - k/512)^j)^k
 * over its B blocks (each URL sets k distinct bits of one 512-bit block). A URL is seen only if all
 * filters of the slice hold it: the product of their rates (S seeded filters: f^S); two epochs with
 * fresh seeds square it. The incremental modes average over n = 0 .. N-1. Exact for classic,
 * blocked and spatial; for eigen and multilayer it is the claim of seeds 001 and 002, which
 * assumes that features and segments of different URLs are independent — they are not (a new URL
 * on a known host with a known shape passes those filters), and the measurement shows by how much.
 */
export function theoryFpr(mode: SimulationMode, geometries: readonly FilterGeometry[], inserted: number): number {
  const rates = geometries.map((g) =>
    g.layout === 'blocked' ? blockedFprCurve(g.mBits, g.k) : classicFprCurve(g.mBits, g.k),
  );
  const epochs = mode === 'revisit' || mode === 'revisit-incremental' ? 2 : 1;
  const at = (n: number): number => rates.reduce((product, rate) => product * rate(n), 1) ** epochs;
  if (mode === 'non-incremental' || mode === 'revisit') return at(inserted);
  let sum = 0;
  for (let n = 0; n < inserted; n++) sum += at(n);
  return sum / inserted;
}

/** One epoch of the experiment: S filters with fresh seeds, hashing in batches. */
class Epoch {
  readonly filters: BloomFilter[];
  /** A counting slice: membership is its primary's minimum counter > 0. */
  readonly spectral: SpectralFilter | undefined;
  readonly #seeds: bigint[];
  readonly #hash: XxHash;
  readonly #keying: Keying | undefined;
  readonly #words: Uint32Array;

  constructor(hash: XxHash, geometries: readonly FilterGeometry[], keying: Keying | undefined) {
    this.#hash = hash;
    this.#keying = keying;
    this.#seeds = geometries.map(() => seedFromHex(freshSeedHex()));
    if (keying?.kind === 'counting-v1') {
      this.filters = [];
      this.spectral = SpectralFilter.create(geometries[0]!.mBits / 8, geometries[0]!.k, keying.secondaryCells);
    } else {
      this.filters = geometries.map((geometry) => new BloomFilter(geometry));
      this.spectral = undefined;
    }
    this.#words = new Uint32Array(BATCH * 2 * geometries.length);
  }

  /**
   * Walks `urls` in batches: for each URL, optionally records in `falsePositive[i]` whether all
   * filters held it first, and optionally adds it. Returns how many were held.
   */
  run(urls: readonly string[], query: boolean, insert: boolean, flags: Uint8Array | undefined): number {
    const filters = this.filters;
    const spectral = this.spectral;
    const stride = 2 * this.#seeds.length;
    const words = this.#words;
    let held = 0;
    for (let start = 0; start < urls.length; start += BATCH) {
      const batch = urls.slice(start, start + BATCH);
      hashSlice(this.#hash, this.#keying, batch, this.#seeds, words, stride, 0);
      for (let i = 0; i < batch.length; i++) {
        const at = i * stride;
        const holds =
          spectral !== undefined ? spectral.primary.count(words[at + 1]!, words[at]!) > 0 : allHold(filters, words, at);
        if (query && holds) {
          held++;
          if (flags !== undefined) flags[start + i] = 1;
        }
        if (insert) {
          if (spectral !== undefined) spectral.add(words[at + 1]!, words[at]!, words[at + 3]!, words[at + 2]!);
          else for (let f = 0; f < filters.length; f++) filters[f]!.add(words[at + 2 * f + 1]!, words[at + 2 * f]!);
        }
      }
    }
    return held;
  }
}

/**
 * Runs the experiment `config.runs` times with fresh seeds each time. `insert` are the URLs put in
 * the filters; `query` the distinct others asked about (unused by the incremental modes).
 */
export function simulate(
  hash: XxHash,
  insert: readonly string[],
  query: readonly string[],
  config: SimulationConfig,
  progress: (run: number) => void = () => undefined,
): SimulationResult {
  const { mode, strategy } = config;
  const incremental = mode === 'incremental' || mode === 'revisit-incremental';
  const revisit = mode === 'revisit' || mode === 'revisit-incremental';
  if (insert.length === 0) throw new RangeError('no URLs to insert');
  if (!incremental && query.length === 0) throw new RangeError('no URLs to query');
  const shape = simulationShape(config, insert.length);
  const geometries = geometriesOf(strategy, shape);
  const asked = incremental ? insert : query;
  const runs: RunMeasurement[] = [];
  for (let r = 0; r < config.runs; r++) {
    const flags = revisit ? new Uint8Array(asked.length) : undefined;
    const first = new Epoch(hash, geometries, shape.keying);
    const started = performance.now();
    let held = first.run(insert, incremental, true, flags);
    const inserted = performance.now();
    if (!incremental) held = first.run(query, true, false, flags);
    const queried = performance.now();
    const addsPerSecond = insert.length / ((inserted - started) / 1000);
    const queriesPerSecond = incremental ? addsPerSecond : query.length / ((queried - inserted) / 1000);
    if (revisit) {
      // The next epoch: fresh seeds, the same URLs. A false positive must recur to count.
      const second = new Epoch(hash, geometries, shape.keying);
      const again = new Uint8Array(asked.length);
      second.run(insert, incremental, true, again);
      if (!incremental) second.run(query, true, false, again);
      held = 0;
      for (let i = 0; i < asked.length; i++) held += flags![i]! & again[i]!;
    }
    runs.push({ falsePositives: held, fpr: held / asked.length, addsPerSecond, queriesPerSecond });
    progress(r + 1);
  }
  const rates = runs.map((run) => run.fpr);
  const mean = rates.reduce((sum, x) => sum + x, 0) / rates.length;
  const sd = rates.length > 1 ? Math.sqrt(rates.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (rates.length - 1)) : 0;
  // A counting slice answers from its primary: m counters err like a Bloom filter of m bits.
  const answering =
    shape.keying?.kind === 'counting-v1'
      ? [{ layout: 'classic' as const, mBits: shape.mBits / 8, k: shape.k }]
      : geometries;
  const theory = theoryFpr(mode, answering, insert.length);
  const standardError = Math.sqrt((theory * (1 - theory)) / (asked.length * runs.length));
  const median = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    mode,
    strategy: strategyName(strategy),
    layout: strategy.layout,
    filters: strategy.filters,
    k: shape.k,
    mBits: shape.mBits,
    geometries,
    sizingRule:
      'bitsPerHash' in config.sizing
        ? `m = N·k·M, M = ${config.sizing.bitsPerHash}`
        : `sized for FPR ${config.sizing.fpr}`,
    inserted: insert.length,
    queried: asked.length,
    bitsPerUrl: geometries.reduce((sum, g) => sum + g.mBits, 0) / insert.length,
    theory,
    mean,
    sd,
    min: Math.min(...rates),
    max: Math.max(...rates),
    z: standardError === 0 ? (mean === theory ? 0 : Infinity) : (mean - theory) / standardError,
    addsPerSecond: median(runs.map((run) => run.addsPerSecond)),
    queriesPerSecond: median(runs.map((run) => run.queriesPerSecond)),
    runs,
  };
}
