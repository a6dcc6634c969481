import { planSlice } from '../filters/scalable.js';
import { sliceShape, strategyOf } from '../filters/strategy.js';
import { freshSeedHex } from '../hash/scheme.js';
import { partitionedBits } from '../filters/partitions.js';
import type { EpochHeader, SliceSpec } from './records.js';

/**
 * The slice an epoch grows into at `index` (every backend grows the same way, so a grown epoch's
 * geometry does not depend on where it lives): the epoch's strategy and growth, fresh seeds; a
 * partitioned epoch's slices have whole blocks in each of its partitions.
 */
export function nextSliceSpec(header: EpochHeader, index: number): SliceSpec {
  const first = header.slices[0]!;
  const strategy = strategyOf(first, header.growth);
  const plan = planSlice(index, header.capacityUrls, header.fprTarget, header.growth, (n, p) =>
    sliceShape(strategy, n, p),
  );
  return {
    layout: first.layout,
    mBits: header.partitions === undefined ? plan.mBits : partitionedBits(plan.mBits, header.partitions.count),
    k: plan.k,
    capacityUrls: plan.capacityUrls,
    fprTarget: plan.fprTarget,
    seeds: first.seeds.map(() => freshSeedHex()),
    ...(plan.shape.keying === undefined ? {} : { keying: plan.shape.keying }),
    createdAtMs: Date.now(),
  };
}
