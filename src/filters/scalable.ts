import { sizeForFpr, type Sizing } from './sizing.js';

/**
 * Growth of a scalable Bloom filter (Almeida, Baquero, Preguiça & Hutchison 2007): when a slice
 * has taken its capacity, a new slice `factor` times larger is added with its error tightened by
 * `tightening`. Slice j is sized for capacity * factor^j URLs at fpr * (1 - tightening) * tightening^j,
 * so the rates of all slices sum to less than `fpr`: the union keeps the promise at any size.
 */
export interface Growth {
  readonly factor: number;
  readonly tightening: number;
}

export const DEFAULT_GROWTH: Growth = Object.freeze({ factor: 2, tightening: 0.5 });

export interface SlicePlan<S extends Sizing = Sizing> extends Sizing {
  readonly shape: S;
  readonly capacityUrls: number;
  readonly fprTarget: number;
}

/** Slice `index` of an epoch, its filters shaped by `shapeOf` (default: one classic filter). */
export function planSlice<S extends Sizing = Sizing>(
  index: number,
  capacityUrls: number,
  fprTarget: number,
  growth: Growth,
  shapeOf: (capacityUrls: number, fpr: number) => S = sizeForFpr as unknown as (capacityUrls: number, fpr: number) => S,
): SlicePlan<S> {
  const sliceCapacity = Math.ceil(capacityUrls * growth.factor ** index);
  const sliceFpr = fprTarget * (1 - growth.tightening) * growth.tightening ** index;
  const shape = shapeOf(sliceCapacity, sliceFpr);
  return { mBits: shape.mBits, k: shape.k, shape, capacityUrls: sliceCapacity, fprTarget: sliceFpr };
}

/** False-positive rate of a union of slices with the given per-slice rates. */
export function unionFpr(rates: readonly number[]): number {
  let none = 1;
  for (const rate of rates) none *= 1 - rate;
  return 1 - none;
}
