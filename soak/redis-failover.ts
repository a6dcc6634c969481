/**
 * Failover measurement of the Redis backend (docs/redis.md): a writer streams URLs into a local
 * 3-master, 3-replica cluster (AOF, appendfsync always) while the master holding the epoch is
 * killed with SIGKILL; counts the acknowledged URLs lost, with waitReplicas 0 and 1.
 *
 *   npm run build && node dist/soak/redis-failover.js [RUNS]
 */
import { generatedUrls } from './redis-urls.js';
import { failoverRun } from '../test/helpers/redis-failover.js';
import { redisMissing, startRedisCluster } from '../test/helpers/redis-cluster.js';

const missing = redisMissing();
if (missing !== undefined) {
  process.stderr.write(`skipped: ${missing}\n`);
  process.exit(0);
}
const runs = Number(process.argv[2] ?? 3);
const input = generatedUrls(60_000);
for (const waitReplicas of [0, 1]) {
  for (let run = 1; run <= runs; run++) {
    const cluster = await startRedisCluster();
    try {
      const result = await failoverRun(cluster, input, waitReplicas, 0);
      process.stdout.write(
        `waitReplicas ${waitReplicas} run ${run}: ${result.lost} of ${result.acknowledged} acknowledged URLs lost\n`,
      );
    } catch (error) {
      process.stdout.write(
        `waitReplicas ${waitReplicas} run ${run}: failed: ${(error as Error).message.split('\n')[0]}\n`,
      );
    } finally {
      await cluster.stop();
    }
  }
}
