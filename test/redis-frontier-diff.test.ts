import { after, describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { XxHash } from '../src/hash/xxhash.js';
import { QUEUE_PARTITIONS, queuePartitionOf } from '../src/store/redis/queue-partition.js';
import { differential, type DifferentialSubject } from './helpers/frontier-differential.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';

/**
 * The seeded differential test of test/lmdb-frontier.test.ts on the Redis frontier: the same
 * random operations on a real cluster (3 masters, no replicas: replication is not what is
 * compared) and on the memory reference, one injected clock for both (docs/redis.md "Time").
 * Each step is a few calls over the frontier's queue partitions, so the suite runs one seed of
 * 200 steps; SEENSTORE_DIFF_SEEDS=N and SEENSTORE_DIFF_STEPS=M run seeds 1 to N of M steps each
 * instead (a longer search; SEENSTORE_DIFF_TRACE=1 finds the step where the drivers parted).
 */
const missing = redisMissing();
const cluster =
  missing === undefined ? await startRedisCluster({ replicas: 0 }) : (undefined as unknown as RedisCluster);
after(() => cluster?.stop());

/**
 * 12 hosts in 3 queue partitions, 4 in each (every third with a port): a partition's own order
 * (its ready set, each queue's FIFO) decides takes, not only the merge of partitions on the client.
 * Hosts spread at random over 32 partitions would rarely share one.
 */
async function sharingHosts(): Promise<string[]> {
  const hash = await XxHash.load();
  const words = new Uint32Array(2);
  const byPartition = new Map<number, string[]>();
  for (let n = 0; ; n++) {
    const host = n % 3 === 2 ? `h${n}.example:8080` : `h${n}.example`;
    const partition = queuePartitionOf(hash, host, QUEUE_PARTITIONS, words);
    byPartition.set(partition, [...(byPartition.get(partition) ?? []), host]);
    const full = [...byPartition.values()].filter((hosts) => hosts.length >= 4);
    if (full.length === 3) return full.flatMap((hosts) => hosts.slice(0, 4));
  }
}

const SEEDS = Number(process.env.SEENSTORE_DIFF_SEEDS ?? 1);
const STEPS = Number(process.env.SEENSTORE_DIFF_STEPS ?? 200);

describe('Redis frontier answers as the memory reference does', { skip: missing }, () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    test(`random operations, seed ${seed}: every answer equal to the reference's`, async () => {
      const redis: DifferentialSubject = {
        name: 'redis',
        open: (clock) => SeenStore.open(cluster.location(), { clock }),
        // Redis's ids are `PARTITION-N`: well formed, and naming no entry.
        noId: '0-999999',
        queuesRediscoveredOnce: true,
        hosts: await sharingHosts(),
      };
      await differential(redis, seed, STEPS);
    });
  }
});
