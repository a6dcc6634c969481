import { SeenStoreError } from '../../errors.js';
import { DEFAULT_FRONTIER_SETTINGS, type FrontierSettings } from '../backend.js';
import { QUEUE_KEY_MODES, type QueueKeyMode } from '../../url/queue-key.js';
import { pairs, text } from './context.js';
import { layout2Error } from './frontier-records.js';
import type { FrontierPartitions } from './frontier-partitions.js';
import { QUEUE_PARTITIONS } from './queue-partition.js';
import type { QueueSettingsArgs } from './queue-functions.js';

/** Most inboxes a scope may have (`{PREFIX/SCOPE}:queues`). */
export const MAX_INBOXES = 65_536;
/** The frontier key layout this seenstore writes (`layout` in the settings): 3, compact queues; 2 was a JSON record per entry, 1 one stream per partition. */
const FRONTIER_LAYOUT = '3';

/** A frontier's settings as stored, with its number of queue partitions. */
export interface Settings extends FrontierSettings, QueueSettingsArgs {
  readonly partitions: number;
}

/** The frontier's settings, read and checked. */
export async function readFrontierSettings(p: FrontierPartitions): Promise<Settings> {
  const key = p.ctx.keys.frontier(p.scope);
  return parseFrontierSettings(p, pairs(await p.ctx.call(key, ['HGETALL', key], p.doing('reading the settings of'))));
}

/** Settings as stored (the defaults for a frontier that has none yet), checked right after reading. */
export function parseFrontierSettings(p: FrontierPartitions, stored: Map<string, string>): Settings {
  const where = `${p.ctx.keys.frontier(p.scope)}`;
  const layout = stored.get('layout') ?? FRONTIER_LAYOUT;
  if (layout === '2') throw layout2Error(p.scope);
  if (layout !== FRONTIER_LAYOUT)
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where}: frontier layout ${layout}, this seenstore reads ${FRONTIER_LAYOUT}`,
    );
  const whole = (name: string, fallback: number, max: number): number => {
    const value = stored.get(name);
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n > max)
      throw new SeenStoreError('STORE_CORRUPT', `${where}: ${name} is not a whole number up to ${max} (${value})`);
    return n;
  };
  const queueKey = (stored.get('queueKey') ?? DEFAULT_FRONTIER_SETTINGS.queueKey) as QueueKeyMode;
  if (!QUEUE_KEY_MODES.includes(queueKey)) throw new SeenStoreError('STORE_CORRUPT', `${where}: queue key ${queueKey}`);
  const partitions = whole('partitions', QUEUE_PARTITIONS, 10_000);
  if (partitions < 1) throw new SeenStoreError('STORE_CORRUPT', `${where}: 0 partitions`);
  return {
    queueKey,
    delayMs: whole('delayMs', DEFAULT_FRONTIER_SETTINGS.delayMs, Number.MAX_SAFE_INTEGER),
    maxInFlightPerQueue: whole(
      'maxInFlightPerQueue',
      DEFAULT_FRONTIER_SETTINGS.maxInFlightPerQueue,
      Number.MAX_SAFE_INTEGER,
    ),
    rev: String(whole('rev', 0, Number.MAX_SAFE_INTEGER)),
    partitions,
  };
}

/** How many inboxes the scope has (`{PREFIX/SCOPE}:queues`, absent: 1). */
export async function inboxCount(p: FrontierPartitions): Promise<number> {
  const key = p.ctx.keys.queues(p.scope);
  const value = await p.ctx.call(key, ['GET', key], p.doing('reading'));
  if (value === null) return 1;
  const n = Number(text(value));
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_INBOXES)
    throw new SeenStoreError('STORE_CORRUPT', `${key}: not an inbox count from 1 to ${MAX_INBOXES} (${text(value)})`);
  return n;
}
