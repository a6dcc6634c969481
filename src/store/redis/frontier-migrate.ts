import { SeenStoreError } from '../../errors.js';
import { DEFAULT_FRONTIER_SETTINGS } from '../backend.js';
import { faultPoint } from '../faults.js';
import { list, pairs, type RedisContext } from './context.js';
import { QUEUE_PARTITIONS } from './queue-partition.js';
import { migratePartition, setFrontierLayout, type QueueSettingsArgs } from './queue-functions.js';

/** Entries (or queue records) one migration call moves: about 1 MB of layout 2 per call, well inside a call's time (docs/redis.md "Deadlines"). */
const MIGRATE_BATCH_ENTRIES = 2_000;

/**
 * Moves the frontier of `scope` from key layout 2 (a JSON record per URL) to layout 3
 * (docs/redis.md "Frontier"), partition by partition, a batch of entries per call (each call
 * moves its batch whole, lua/queue-migrate.lua), then records layout 3 in the settings. While it
 * runs the frontier stays refused (layout 2) to every other call, enqueues go on into the
 * inboxes, and a migration killed anywhere is finished by running it again; several may run at
 * once. Resolves how many entries and queue records it moved, or undefined when the frontier is
 * not of layout 2 (none, or migrated already).
 */
export async function migrateFrontier(ctx: RedisContext, scope: string): Promise<number | undefined> {
  const doing = `migrating the frontier of ${scope}`;
  const key = ctx.keys.frontier(scope);
  const stored = pairs(await ctx.call(key, ['HGETALL', key], doing));
  if (stored.get('layout') !== '2') return undefined;
  const whole = (name: string, fallback: number): number => {
    const value = stored.get(name);
    if (value === undefined) return fallback;
    if (!/^[0-9]{1,15}$/.test(value))
      throw new SeenStoreError('STORE_CORRUPT', `${key}: ${name} is not a whole number (${value})`);
    return Number(value);
  };
  const partitions = whole('partitions', QUEUE_PARTITIONS);
  const settings: QueueSettingsArgs = {
    rev: String(whole('rev', 0)),
    delayMs: whole('delayMs', DEFAULT_FRONTIER_SETTINGS.delayMs),
    maxInFlightPerQueue: whole('maxInFlightPerQueue', DEFAULT_FRONTIER_SETTINGS.maxInFlightPerQueue),
  };
  let moved = 0;
  for (let i = 0; i < partitions; i++) {
    for (let left = 1; left > 0; ) {
      const [n, rest] = list(
        await migratePartition(ctx, ctx.keys.queuePartition(scope, i), settings, MIGRATE_BATCH_ENTRIES, doing),
      ).map(Number) as [number, number];
      moved += n;
      left = rest;
      faultPoint('frontier:migrate-batch');
    }
  }
  await setFrontierLayout(ctx, key, '2', '3', doing);
  return moved;
}
