import { filterGeometries } from '../../filters/keying.js';
import type { EpochHasher } from '../../filters/epoch-hasher.js';
import type { EpochHeader, SliceSpec } from '../records.js';
import type { BatchKeys, ReadKeys } from './functions.js';
import type { EpochKeys } from './keys.js';
import type { TurnQueue } from '../turns.js';

/**
 * One partition of an epoch as a handle knows it: a self-contained scalable filter in one slot
 * (docs/redis.md "Partitions"). What is known is only ever a hint the functions check: a call
 * with another slice count is answered `stale` with the true one.
 */
export interface Partition {
  readonly index: number;
  readonly keys: EpochKeys;
  /** Slices the partition has grown into, as of its last reply (at least the first). */
  have: number;
  /** New URLs in its newest slice, as of its last reply. */
  newestAdded: number;
  /** Its last batch's answers key, deleted by its next batch ('' for none). */
  previousBatch: string;
  /** The handle's batches in the order they reach this partition (epoch.ts addIfAbsent). */
  readonly turns: TurnQueue;
}

/** A batch's keys grouped by partition: keys order[starts[p]] .. order[starts[p + 1] - 1] are partition p's, in input order. */
export interface Grouping {
  readonly order: Uint32Array | undefined;
  readonly starts: Uint32Array;
}

/** Groups keys 0..count-1 of the batch `hasher` hashed last by their partition (a counting sort: input order kept within each). */
export function groupByPartition(hasher: EpochHasher, count: number): Grouping {
  const partitions = hasher.partitionCount;
  const starts = new Uint32Array(partitions + 1);
  if (partitions === 1) {
    starts[1] = count;
    return { order: undefined, starts };
  }
  for (let i = 0; i < count; i++) starts[hasher.partition(i) + 1]!++;
  for (let p = 0; p < partitions; p++) starts[p + 1]! += starts[p]!;
  const next = starts.slice(0, partitions);
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[next[hasher.partition(i)]!++] = i;
  return { order, starts };
}

/** The index in the batch of the t-th key of partition p. */
export function keyAt(grouping: Grouping, p: number, t: number): number {
  const at = grouping.starts[p]! + t;
  return grouping.order === undefined ? at : grouping.order[at]!;
}

/** A partition's share of a slice's capacity: the URLs it takes before growing (URLs spread evenly over partitions). */
export function partitionCapacity(slice: SliceSpec, partitions: number): number {
  return Math.ceil(slice.capacityUrls / partitions);
}

/** Bytes of each of a slice's filters in one partition. */
export function partitionFilterBytes(slice: SliceSpec, partitions: number): number[] {
  return filterGeometries(slice).map((geometry) => geometry.mBits / 8 / partitions);
}

/**
 * What ss_add / ss_has / ss_count need of the layout, for a partition that has `have` of the
 * epoch's `slices` and may grow into the rest (docs/redis.md "How an add works").
 */
export function partitionGeometry(
  slices: readonly SliceSpec[],
  partitions: number,
  have: number,
  maxSlices: number,
): string {
  const filters: [number, number, number][] = [];
  const bytes: number[] = [];
  for (const [j, slice] of slices.entries()) {
    const sizes = partitionFilterBytes(slice, partitions);
    for (const [f, geometry] of filterGeometries(slice).entries()) {
      filters.push([j, geometry.k, geometry.layout === 'blocked' ? 1 : 0]);
      bytes.push(sizes[f]!);
    }
  }
  return JSON.stringify({
    filters,
    bytes,
    caps: slices.map((slice) => partitionCapacity(slice, partitions)),
    planned: slices.slice(have).map((slice) => JSON.stringify(slice)),
    max: maxSlices,
  });
}

/** A partition's state, slices and first `count` filters (over all slices, in filter order): every key a function touches is declared. */
export function readKeys(part: Partition, count: number): ReadKeys {
  return {
    state: part.keys.state,
    slices: part.keys.slices,
    filters: Array.from({ length: count }, (_, index) => part.keys.filter(index)),
  };
}

/** As readKeys, with the keys of a batch's answers and of the partition's previous batch's. */
export function batchKeys(part: Partition, batch: string, count: number): BatchKeys {
  const own = part.keys.batch(batch);
  return { ...readKeys(part, count), batch: own, previousBatch: part.previousBatch || own };
}

/** How many partitions an epoch has (1 unless it is partitioned). */
export function partitionsOf(header: EpochHeader): number {
  return header.partitions?.count ?? 1;
}
