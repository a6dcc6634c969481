import { SeenStoreError } from '../../errors.js';
import { filterGeometries } from '../../filters/keying.js';
import { unionFpr } from '../../filters/scalable.js';
import { estimateCardinality, fprFromFill } from '../../filters/sizing.js';
import type { EpochSummary } from '../backend.js';
import type { EpochHeader, SliceSpec } from '../records.js';
import { allocate, partitionState } from './functions.js';
import { list, pairs, settleAll, type RedisContext } from './context.js';
import type { GrowthPlan } from './growth-plan.js';
import { partitionFilterBytes, readKeys, type Partition } from './partition.js';

/** Redis bit offset of seenstore bit p: Redis numbers a byte's bits from the most significant. */
export function redisBit(p: number): number {
  const low = p % 8;
  return p - low + (7 - low);
}

/** The epoch's counters and bits as one call read them. */
export interface EpochState {
  readonly slices: readonly SliceSpec[];
  readonly submitted: number;
  readonly added: number;
  readonly sliceAdded: number[];
  readonly ones: number[];
}

/** An epoch's summary from its counters and the set bits of each filter (as the LMDB backend sums its filters). */
export function summarize(state: EpochState): EpochSummary {
  let ones = 0;
  let bits = 0;
  let estimatedDistinct = 0;
  let filter = 0;
  const slices = state.slices.map((spec, j) => {
    if (spec.keying?.kind === 'counting-v1') {
      // A counting slice answers from its primary's counters alone (as the LMDB backend's CountingCopy).
      const cells = spec.mBits / 8;
      const nonZero = state.ones[filter] ?? 0;
      filter += 2;
      ones += nonZero;
      bits += cells;
      estimatedDistinct += estimateCardinality(nonZero, cells, spec.k);
      const fpr = fprFromFill(nonZero / cells, spec.k);
      return {
        capacityUrls: spec.capacityUrls,
        fprTarget: spec.fprTarget,
        mBits: spec.mBits,
        k: spec.k,
        filters: 2,
        added: state.sliceAdded[j] ?? 0,
        fillRatio: nonZero / cells,
        estimatedFpr: fpr,
      };
    }
    const geometries = filterGeometries(spec);
    let fpr = 1;
    let sliceOnes = 0;
    let cells = 0;
    for (const [f, geometry] of geometries.entries()) {
      const set = state.ones[filter + f] ?? 0;
      fpr *= fprFromFill(set / geometry.mBits, geometry.k);
      sliceOnes += set;
      cells += geometry.mBits;
    }
    estimatedDistinct += estimateCardinality(state.ones[filter] ?? 0, geometries[0]!.mBits, geometries[0]!.k);
    filter += geometries.length;
    ones += sliceOnes;
    bits += cells;
    return {
      capacityUrls: spec.capacityUrls,
      fprTarget: spec.fprTarget,
      mBits: spec.mBits,
      k: spec.k,
      filters: geometries.length,
      added: state.sliceAdded[j] ?? 0,
      fillRatio: sliceOnes / cells,
      estimatedFpr: fpr,
    };
  });
  return {
    submitted: state.submitted,
    added: state.added,
    estimatedDistinct: Math.round(estimatedDistinct),
    fillRatio: ones / bits,
    estimatedFpr: unionFpr(slices.map((slice) => slice.estimatedFpr)),
    slices,
  };
}

/** Largest filter a Redis string holds: 512 MiB. */
export const MAX_REDIS_FILTER_BITS = 2 ** 32;

/** Refuses a slice this backend cannot hold: a filter's part in one partition past a Redis string. */
export function checkRedisSlice(header: EpochHeader, slice: SliceSpec): void {
  const partitions = header.partitions?.count ?? 1;
  for (const geometry of filterGeometries(slice)) {
    if (geometry.mBits / partitions > MAX_REDIS_FILTER_BITS) {
      throw new SeenStoreError(
        'CAPACITY_EXCEEDED',
        `epoch ${header.scope}/${header.epoch}: a filter of ${geometry.mBits / partitions} bits per partition is larger than a Redis string (512 MiB); plan a smaller capacity, a higher fpr or more partitions`,
      );
    }
  }
}

/** Writes bytes to a key in pieces (a Redis request stays well below its 512 MB limit). */
export async function writeBytes(ctx: RedisContext, key: string, bytes: Uint8Array, doing: string): Promise<void> {
  const piece = 8 * 2 ** 20;
  await allocate(ctx, key, bytes.length, doing);
  for (let at = 0; at < bytes.length; at += piece) {
    const part = Buffer.from(bytes.buffer, bytes.byteOffset + at, Math.min(piece, bytes.length - at));
    if (part.every((b) => b === 0)) continue;
    await ctx.call(key, ['SETRANGE', key, String(at), part], doing);
  }
}

/** The epoch's counts and set bits: every partition's, summed (a partition's filter f is part of the epoch's filter f). */
export async function readEpochState(
  ctx: RedisContext,
  growth: GrowthPlan,
  partitions: readonly Partition[],
  where: string,
  counting: boolean,
): Promise<EpochState> {
  await growth.reload();
  const slices = growth.slices;
  const filters = slices.reduce((sum, slice) => sum + filterGeometries(slice).length, 0);
  const doing = `reading ${where}`;
  const states = await settleAll(
    partitions.map(async (part) => {
      const reply = list(await partitionState(ctx, readKeys(part, filters), doing));
      const hash = pairs(reply[0]);
      const have = list(reply[1]).length;
      if (have > slices.length)
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `${where}: partition ${part.index} has ${have} slices, its plan ${slices.length}`,
        );
      part.have = Math.max(1, have);
      return {
        submitted: Number(hash.get('submitted') ?? 0),
        added: Number(hash.get('added') ?? 0),
        sliceAdded: slices.map((_, j) => Number(hash.get(`a${j}`) ?? 0)),
        ones: counting ? await nonZeroCounters(ctx, part, filters, where) : list(reply[2]).map(Number),
      };
    }),
  );
  const sum = (values: readonly number[][]): number[] =>
    values[0]!.map((_, i) => values.reduce((total, row) => total + row[i]!, 0));
  return {
    slices,
    submitted: states.reduce((total, state) => total + state.submitted, 0),
    added: states.reduce((total, state) => total + state.added, 0),
    sliceAdded: sum(states.map((state) => state.sliceAdded)),
    ones: sum(states.map((state) => state.ones)),
  };
}

/** Counting epochs: the counters that are not zero, per filter (their "set bits"). */
async function nonZeroCounters(ctx: RedisContext, part: Partition, filters: number, where: string): Promise<number[]> {
  return Promise.all(
    Array.from({ length: filters }, async (_, index) => {
      const stored = await ctx.call(part.keys.filter(index), ['GET', part.keys.filter(index)], `reading ${where}`);
      let nonZero = 0;
      if (Buffer.isBuffer(stored)) for (const byte of stored) if (byte !== 0) nonZero++;
      return nonZero;
    }),
  );
}

/** Every filter of the epoch's `slices`, whole: each partition's part of it read and put in its place. */
export async function readEpochFilters(
  ctx: RedisContext,
  slices: readonly SliceSpec[],
  partitions: readonly Partition[],
  where: string,
): Promise<Uint8Array[]> {
  const filters: Uint8Array[] = [];
  for (const slice of slices) {
    const sizes = partitionFilterBytes(slice, partitions.length);
    for (const size of sizes) {
      const index = filters.length;
      const bytes = new Uint8Array(size * partitions.length);
      await Promise.all(
        partitions.map(async (part) => {
          const key = part.keys.filter(index);
          const stored = await ctx.call(key, ['GET', key], `reading ${where}`);
          if (Buffer.isBuffer(stored)) bytes.set(stored.subarray(0, size), part.index * size);
        }),
      );
      filters.push(bytes);
    }
  }
  return filters;
}
