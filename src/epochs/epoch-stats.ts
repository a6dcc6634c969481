import type { Partitioning } from '../filters/partitions.js';
import type { Keying } from '../filters/keying.js';
import { strategyName, strategyOf } from '../filters/strategy.js';
import type { EpochSummary, EpochUsage, SliceSummary } from '../store/backend.js';
import type { EpochHeader, SizingDecision } from '../store/records.js';

export interface EpochStats {
  readonly epoch: number;
  readonly state: 'open' | 'sealed';
  readonly createdAtMs: number;
  readonly sealedAtMs: number | null;
  readonly capacityUrls: number;
  readonly fprTarget: number;
  /** `classic`, `blocked` or `spatial:S` (ScopeOptions.strategy). */
  readonly strategy: string;
  readonly normalize: string;
  /** Adds: URLs submitted to add / addIfAbsent, repeats included. */
  readonly adds: number;
  /** URLs the epoch answered as new: the adds without repeats (and without false positives). */
  readonly new: number;
  /** @deprecated The same as `adds`; kept for one release for scripts that read `stats --json`. */
  readonly submitted: number;
  /** @deprecated The same as `new`; kept for one release for scripts that read `stats --json`. */
  readonly added: number;
  /** Distinct URLs estimated from the fill (close to `new`; differs by false positives). */
  readonly estimatedDistinct: number;
  readonly fillRatio: number;
  /** False-positive rate of a query now, from the fill (the union over slices). */
  readonly estimatedFpr: number;
  readonly slices: number;
  /** Bytes the backend holds for the epoch's bits and log. */
  readonly bytesOnDisk: number;
  /** Records of the backend's write log not yet folded in by a checkpoint (0 for a backend without one). */
  readonly journalRecords: number;
}

export interface EpochDetails extends EpochStats {
  readonly hashScheme: string;
  readonly growth: { readonly factor: number; readonly tightening: number };
  readonly sizing: SizingDecision;
  /** A partitioned epoch's partition count and seed (docs/format.md "Partitioned epochs"). */
  readonly partitions?: Partitioning;
  /** Per slice: geometry, seeds (hex) and fill. */
  readonly sliceDetails: readonly (SliceSummary & {
    readonly layout: string;
    readonly seeds: readonly string[];
    readonly keying?: Keying;
  })[];
}

/**
 * What an epoch was created with, from its header alone: reading it costs a few records on any
 * store, where EpochDetails' fill figures read every bit of the epoch.
 */
export interface EpochSettings {
  readonly epoch: number;
  readonly state: 'open' | 'sealed';
  readonly capacityUrls: number;
  readonly fprTarget: number;
  /** `classic`, `blocked` or `spatial:S` (ScopeOptions.strategy). */
  readonly strategy: string;
  readonly normalize: string;
  readonly slices: number;
  /** Each slice's seeds, 16 hex digits per filter. */
  readonly seeds: readonly (readonly string[])[];
}

export function epochSettings(header: EpochHeader): EpochSettings {
  return {
    epoch: header.epoch,
    state: header.state,
    capacityUrls: header.capacityUrls,
    fprTarget: header.fprTarget,
    strategy: strategyName(strategyOf(header.slices[0]!, header.growth)),
    normalize: header.normalize,
    slices: header.slices.length,
    seeds: header.slices.map((slice) => slice.seeds),
  };
}

export interface ScopeStats {
  readonly scope: string;
  readonly openEpoch: number | null;
  readonly epochs: readonly EpochStats[];
}

/** Stats of an epoch: live from `summary` when given (the open epoch), else from the sealed header's final counts. */
export function epochStats(header: EpochHeader, summary: EpochSummary | undefined, usage: EpochUsage): EpochStats {
  const final = header.final;
  const adds = summary?.submitted ?? final?.submitted ?? 0;
  const fresh = summary?.added ?? final?.added ?? 0;
  return {
    epoch: header.epoch,
    state: header.state,
    createdAtMs: header.createdAtMs,
    sealedAtMs: header.sealedAtMs,
    capacityUrls: header.capacityUrls,
    fprTarget: header.fprTarget,
    strategy: strategyName(strategyOf(header.slices[0]!, header.growth)),
    normalize: header.normalize,
    adds,
    new: fresh,
    submitted: adds,
    added: fresh,
    estimatedDistinct: summary?.estimatedDistinct ?? final?.estimatedDistinct ?? 0,
    fillRatio: summary?.fillRatio ?? final?.fillRatio ?? 0,
    estimatedFpr: summary?.estimatedFpr ?? final?.estimatedFpr ?? 0,
    slices: header.slices.length,
    bytesOnDisk: usage.bytesOnDisk,
    journalRecords: usage.pendingRecords,
  };
}

/** Stats plus the header's identity: hash scheme, growth, sizing decision, and each slice's geometry, seeds and fill. */
export function epochDetails(header: EpochHeader, summary: EpochSummary, usage: EpochUsage): EpochDetails {
  return {
    ...epochStats(header, summary, usage),
    hashScheme: header.hashScheme,
    growth: header.growth,
    sizing: header.sizing,
    ...(header.partitions === undefined ? {} : { partitions: header.partitions }),
    sliceDetails: summary.slices.map((slice, j) => {
      const spec = header.slices[j]!;
      return {
        ...slice,
        layout: spec.layout,
        seeds: spec.seeds,
        ...(spec.keying === undefined ? {} : { keying: spec.keying }),
      };
    }),
  };
}

/** The summary of an epoch as it is opened: every slice empty. */
export function openingSummary(header: EpochHeader): EpochSummary {
  return {
    submitted: 0,
    added: 0,
    estimatedDistinct: 0,
    fillRatio: 0,
    estimatedFpr: 0,
    slices: header.slices.map((spec) => ({
      capacityUrls: spec.capacityUrls,
      fprTarget: spec.fprTarget,
      mBits: spec.mBits,
      k: spec.k,
      filters: spec.seeds.length,
      added: 0,
      fillRatio: 0,
      estimatedFpr: 0,
    })),
  };
}
