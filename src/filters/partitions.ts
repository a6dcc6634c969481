import { BLOCK_BITS, isSeedHex } from '../hash/scheme.js';

/**
 * The partitioned layout (`partitioned-blocked`, docs/format.md "Partitioned epochs"): a blocked
 * Bloom filter whose blocks are cut into P equal, contiguous partitions, and every URL's blocks —
 * in every slice of its epoch — lie in one partition, chosen by a hash of the URL under the
 * epoch's partition seed. A store can then keep each partition apart (the Redis backend: one hash
 * slot per partition, so one URL's whole decision is one atomic call there) while the bits stay
 * exactly those of one blocked filter (an LMDB store holds the same epoch as plain arrays).
 *
 * For a URL whose partition hash under the partition seed has high word `ph`, and a filter hash
 * (high `hi`, low `lo`) in a slice of B blocks (b = B / P per partition):
 *
 *   p   = floor(ph * P / 2^32)                 its partition
 *   lo' = p * b + (lo mod b)                    the low word, folded into the partition
 *
 * and the slice's positions are the blocked layout's (hash/scheme.ts blockedPositions) of (hi, lo'):
 * block lo' mod B = p * b + (lo mod b), inside partition p; the bits inside the block from hi.
 */
export const PARTITIONED_LAYOUT = 'partitioned-blocked';

/** An epoch's partitioning, recorded in its header (`partitions`). */
export interface Partitioning {
  /** P: partitions per slice, the same for every slice of the epoch. */
  readonly count: number;
  /** The partition hash's seed (16 hex digits). */
  readonly seed: string;
}

/** Most partitions an epoch may have. */
export const MAX_PARTITIONS = 4096;
/** The default aims at partitions of at most this many bytes in the first slice... */
export const PARTITION_TARGET_BYTES = 2 * 2 ** 20;
/** ...and at least this many partitions (many more than a cluster has masters, so they spread)... */
export const MIN_DEFAULT_PARTITIONS = 64;
/** ...but never partitions of fewer blocks than this (a partition's load varies less). */
export const MIN_PARTITION_BLOCKS = 8;

/** The partition of a URL whose partition hash has high word `ph`. */
export function partitionOf(ph: number, count: number): number {
  return Math.floor((ph * count) / 4294967296);
}

/** The low word of a filter hash folded into partition p of a slice with b blocks per partition. */
export function foldLow(lo: number, p: number, blocksPerPartition: number): number {
  return p * blocksPerPartition + (lo % blocksPerPartition);
}

/** The default P for an epoch whose first slice has `mBits` bits (a power of two; docs/redis.md). */
export function defaultPartitionCount(mBits: number): number {
  const blocks = Math.ceil(mBits / BLOCK_BITS);
  const wanted = Math.max(
    MIN_DEFAULT_PARTITIONS,
    2 ** Math.ceil(Math.log2(Math.max(1, mBits / 8 / PARTITION_TARGET_BYTES))),
  );
  const room = 2 ** Math.floor(Math.log2(Math.max(1, blocks / MIN_PARTITION_BLOCKS)));
  return Math.max(1, Math.min(MAX_PARTITIONS, wanted, room));
}

/** `mBits` rounded up to whole blocks in each of `count` partitions. */
export function partitionedBits(mBits: number, count: number): number {
  const unit = count * BLOCK_BITS;
  return Math.ceil(mBits / unit) * unit;
}

/** Whether `value` is a partitioning a header may record. */
export function isPartitioning(value: unknown): value is Partitioning {
  const p = value as Partial<Record<string, unknown>> | null;
  return (
    typeof p === 'object' &&
    p !== null &&
    Number.isInteger(p.count) &&
    (p.count as number) >= 1 &&
    (p.count as number) <= MAX_PARTITIONS &&
    isSeedHex(p.seed)
  );
}

/**
 * The partition seed of an epoch whose first filter has seed `seed` (16 hex digits): that seed XOR
 * 0x9e3779b97f4a7c15. Derived, so that stores given the same seeds (parallel crawlers that merge
 * their exports) partition alike; recorded in the header, which is what readers use.
 */
export function partitionSeedFor(seed: string): string {
  return (BigInt(`0x${seed}`) ^ 0x9e3779b97f4a7c15n).toString(16).padStart(16, '0');
}
