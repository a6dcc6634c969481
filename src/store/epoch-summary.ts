import type { BloomFilter } from '../filters/bloom.js';
import type { CountingFilter } from '../filters/counting.js';
import { unionFpr } from '../filters/scalable.js';
import type { EpochCounts, EpochSummary, SliceSummary } from './backend.js';
import type { SliceSpec } from './records.js';

/** One slice's fill as queries see it (Bloom: every filter; counting: the primary's counters). */
export interface SliceFill {
  readonly fpr: number;
  readonly ones: number;
  readonly cells: number;
}

/** A slice as a summary needs it: its spec, its filter count, its new URLs, its fill and the distinct URLs its first filter estimates. */
export interface SummarisedSlice {
  readonly spec: SliceSpec;
  readonly filters: number;
  readonly added: number;
  readonly fill: SliceFill;
  readonly estimatedCount: number;
}

/** The fill of a Bloom slice: all its filters must hold a URL, so their rates multiply. */
export function bloomFill(filters: readonly BloomFilter[]): SliceFill {
  let fpr = 1;
  let ones = 0;
  let cells = 0;
  for (const filter of filters) {
    fpr *= filter.currentFpr;
    ones += filter.onesBits;
    cells += filter.geometry.mBits;
  }
  return { fpr, ones, cells };
}

/** The fill of a counting slice: it answers from its primary counters alone. */
export function countingFill(primary: CountingFilter): SliceFill {
  return { fpr: primary.currentFpr, ones: primary.onesBits, cells: primary.cells };
}

/** An epoch's summary from its counts and its slices, the same on every backend. */
export function epochSummary(counts: EpochCounts, slices: readonly SummarisedSlice[]): EpochSummary {
  let ones = 0;
  let cells = 0;
  let estimatedDistinct = 0;
  const summaries = slices.map((slice): SliceSummary => {
    ones += slice.fill.ones;
    cells += slice.fill.cells;
    estimatedDistinct += slice.estimatedCount;
    const { capacityUrls, fprTarget, mBits, k } = slice.spec;
    return {
      capacityUrls,
      fprTarget,
      mBits,
      k,
      filters: slice.filters,
      added: slice.added,
      fillRatio: slice.fill.ones / slice.fill.cells,
      estimatedFpr: slice.fill.fpr,
    };
  });
  return {
    submitted: counts.submitted,
    added: counts.added,
    estimatedDistinct: Math.round(estimatedDistinct),
    fillRatio: ones / cells,
    estimatedFpr: unionFpr(summaries.map((slice) => slice.estimatedFpr)),
    slices: summaries,
  };
}
