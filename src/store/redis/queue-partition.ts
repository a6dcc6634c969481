import type { XxHash } from '../../hash/xxhash.js';

/** Partitions of a new frontier's queues (docs/redis.md "Frontier"), pinned in its settings: many more slots than a cluster has masters. */
export const QUEUE_PARTITIONS = 32;
/** The seed of the queue-key hash that picks a queue's partition (xxh64). */
const QUEUE_PARTITION_SEED = 0x7175657565n;

/**
 * The partition of queue `key` among `partitions`: the high 32 bits of xxh64(UTF-8 of key,
 * 0x7175657565), times partitions, over 2^32 (docs/redis.md "Frontier"). A queue's whole state is
 * in that partition's slot. `words` is scratch (two words).
 */
export function queuePartitionOf(hash: XxHash, key: string, partitions: number, words: Uint32Array): number {
  hash.hashInto(key, QUEUE_PARTITION_SEED, words, 0);
  return Math.floor((words[1]! * partitions) / 4294967296);
}
