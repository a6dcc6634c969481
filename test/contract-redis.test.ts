import { after, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { redisDriver } from '../src/store/redis/driver.js';
import { contractSuite } from './contract/suite.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';

// The storage contract on the Redis backend: one local cluster (3 masters, 3 replicas, AOF fsynced
// always) for the whole file; a store is a fresh key prefix on it (redis://HOST:PORT/?prefix=NAME).
const missing = redisMissing();
if (missing !== undefined) {
  test(`storage contract: redis (skipped: ${missing})`, { skip: missing }, () => {});
} else {
  let cluster: RedisCluster | undefined;
  const started = startRedisCluster().then((c) => (cluster = c));
  after(async () => {
    await started.catch(() => undefined);
    await cluster?.stop();
  });
  contractSuite({
    name: 'redis cluster',
    capabilities: redisDriver.capabilities,
    open: async (options) => {
      await started;
      return SeenStore.open(cluster!.location(), options);
    },
  });
}
