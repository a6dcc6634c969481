import { SeenStoreError, assert } from '../../errors.js';
import { numberSetting, type Driver, type OpenOptions, type StoreSettings } from '../driver.js';
import { DEFAULT_UNAVAILABLE_AFTER_MS } from './deadline.js';

/**
 * The Redis driver's own options (SeenStoreOptions documents each). A new Redis setting is a field
 * here and a line in parseOptions; nothing else in the engine changes.
 */
export interface RedisOptions {
  /** Replicas that must confirm each write (WAIT) before it is acknowledged. */
  readonly waitReplicas: number;
  /** How long a call keeps retrying through a failover or a lost connection. */
  readonly unavailableAfterMs: number;
  /**
   * The store's clock (SeenStoreOptions.clock; a test's, which must not wait): this handle's calls
   * take its time as Redis's; undefined: Redis's TIME, the one clock of every machine.
   */
  readonly clock: (() => number) | undefined;
}

/**
 * A Redis server or Redis Cluster (docs/redis.md). The client module loads only when a store is
 * opened.
 */
export const redisDriver: Driver<RedisOptions> = Object.freeze({
  name: 'redis',
  schemes: ['redis', 'rediss'],
  capabilities: Object.freeze({
    persistent: true,
    durability: 'server',
    sharedAcrossProcesses: true,
    maintenance: false,
    offline: false,
    checkpoints: false,
    commitsBlockThread: false,
    frontierOrder: 'per-partition',
    leaseClock: 'server',
    defaultStrategy: 'partitioned',
    // A filter is one string of exactly its bytes.
    storedBytes: (mBits: number) => Math.ceil(mBits / 8),
  }),
  parseOptions(settings: StoreSettings): RedisOptions {
    const waitReplicas = numberSetting(settings, 'waitReplicas') ?? 0;
    if (!Number.isInteger(waitReplicas) || waitReplicas < 0)
      throw new SeenStoreError('USAGE', `waitReplicas must be a whole number >= 0, got ${waitReplicas}`);
    const clock = settings.clock;
    assert(clock === undefined || typeof clock === 'function', 'the clock is a function (SeenStore.open checks)');
    return Object.freeze({
      waitReplicas,
      unavailableAfterMs: numberSetting(settings, 'unavailableAfterMs') ?? DEFAULT_UNAVAILABLE_AFTER_MS,
      clock: clock as (() => number) | undefined,
    });
  },
  async open(location: string, common: OpenOptions, options: RedisOptions) {
    const { RedisBackend } = await import('./backend.js');
    return RedisBackend.open(location, redactRedisLocation(location), common, options);
  },
  redact: redactRedisLocation,
  resolve: (location: string) => location,
  // Whether a server holds a store is known only by connecting.
  knownAbsent: async () => false,
});

/** A password in a redis:// location is never printed. */
function redactRedisLocation(location: string): string {
  return location.replace(/^(rediss?:\/\/)([^@/]*@)/i, '$1***@');
}
