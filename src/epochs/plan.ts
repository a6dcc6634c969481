import { SeenStoreError } from '../errors.js';
import { filterGeometries } from '../filters/keying.js';
import { unionFpr } from '../filters/scalable.js';
import { growthOf, strategyName, type Strategy } from '../filters/strategy.js';
import { nextSliceSpec } from '../store/slice-plan.js';
import { checkPlan, newEpochHeader } from './create.js';

/** Slices a sizing plan lists by default: the first, and what three rounds of growth add. */
export const DEFAULT_PLANNED_SLICES = 4;
/** At most this many slices are planned (an epoch may grow to MAX_SLICES; a table of 24 helps nobody). */
export const MAX_PLANNED_SLICES = 12;

export interface PlannedSlice {
  /** 0 for the slice an epoch starts with. */
  readonly index: number;
  /** New URLs this slice takes before the next one starts. */
  readonly capacityUrls: number;
  /** New URLs the epoch holds when this slice is full. */
  readonly totalCapacityUrls: number;
  /** This slice's own false-positive target. */
  readonly fprTarget: number;
  /** A query's false-positive rate when this slice is full: the union over the slices so far. */
  readonly totalFpr: number;
  readonly k: number;
  /** Bits of all the slice's filters (several for spatial, eigen, counting). */
  readonly bits: number;
  /** What the slice takes in the backend's storage once all of its filters is written (Capabilities.storedBytes). */
  readonly storedBytes: number;
  /** Stored bytes of the epoch when this slice is full. */
  readonly totalStoredBytes: number;
  /** Stored bits per URL of the epoch when this slice is full. */
  readonly bitsPerUrl: number;
}

export interface SizingPlan {
  readonly strategy: string;
  readonly capacityUrls: number;
  readonly fprTarget: number;
  readonly growth: { readonly factor: number; readonly tightening: number };
  /** A partitioned epoch's partition count (its slices are rounded up to whole blocks in each). */
  readonly partitions?: number;
  readonly slices: readonly PlannedSlice[];
}

/**
 * What an epoch planned for `capacityUrls` URLs at `fprTarget` would be, computed by the code that
 * creates epochs: its first slice, and each slice that growth would add past the capacity, with
 * bits, k, stored bytes and the false-positive rate the epoch keeps at each size. `storedBytes` is
 * what the store's driver takes for a filter of so many bits (Capabilities.storedBytes).
 */
export function planSizing(
  capacityUrls: number,
  fprTarget: number,
  strategy: Strategy,
  slices: number,
  storedBytesOf: (mBits: number) => number,
): SizingPlan {
  checkPlan({ capacityUrls, fprTarget, strategy, normalize: 'none' });
  if (!Number.isSafeInteger(slices) || slices < 1 || slices > MAX_PLANNED_SLICES) {
    throw new SeenStoreError(
      'USAGE',
      `slices must be a whole number from 1 to ${MAX_PLANNED_SLICES}, got ${String(slices)}`,
    );
  }
  const growth = growthOf(strategy);
  const rows: PlannedSlice[] = [];
  const rates: number[] = [];
  let totalCapacityUrls = 0;
  let totalStoredBytes = 0;
  // The epoch's own header and growth slices (fresh seeds, unused here): what creation makes, partitions included.
  let header;
  try {
    header = newEpochHeader('plan', 1, {
      capacityUrls,
      fprTarget,
      strategy,
      normalize: 'none',
      sizing: { policy: 'explicit', reason: 'plan', inputs: {} },
    });
  } catch (error) {
    throw error instanceof SeenStoreError ? error : SeenStoreError.capacity(error);
  }
  for (let index = 0; index < slices; index++) {
    let slice;
    try {
      slice = index === 0 ? header.slices[0]! : nextSliceSpec(header, index);
    } catch (error) {
      throw SeenStoreError.capacity(error);
    }
    const filters = filterGeometries(slice);
    const bits = filters.reduce((sum, filter) => sum + filter.mBits, 0);
    const storedBytes = filters.reduce((sum, filter) => sum + storedBytesOf(filter.mBits), 0);
    totalCapacityUrls += slice.capacityUrls;
    totalStoredBytes += storedBytes;
    rates.push(slice.fprTarget);
    rows.push({
      index,
      capacityUrls: slice.capacityUrls,
      totalCapacityUrls,
      fprTarget: slice.fprTarget,
      totalFpr: unionFpr(rates),
      k: slice.k,
      bits,
      storedBytes,
      totalStoredBytes,
      bitsPerUrl: (totalStoredBytes * 8) / totalCapacityUrls,
    });
  }
  return {
    strategy: strategyName(strategy),
    capacityUrls,
    fprTarget,
    growth: { ...growth },
    ...(header.partitions === undefined ? {} : { partitions: header.partitions.count }),
    slices: rows,
  };
}
