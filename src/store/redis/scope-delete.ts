import type { Frontier } from '../backend.js';
import { pairs, text, type RedisContext } from './context.js';
import { QUEUE_STATE_KEYS } from './keys.js';
import { QUEUE_PARTITIONS } from './queue-partition.js';

/**
 * Deletes every key of a scope's frontier: its queues (emptied first through `frontier.clear`,
 * which also moves the inboxes' URLs into them), each partition's keys, the inboxes, the settings
 * and the owners. Resolves with how many URLs it held. A frontier of key layout 2, which the
 * frontier refuses until it is migrated, is deleted as it is (its partitions' counts say how many).
 */
export async function deleteFrontierKeys(ctx: RedisContext, scope: string, frontier: Frontier): Promise<number> {
  const doing = `deleting the frontier of ${scope}`;
  const keys = ctx.keys;
  const settings = pairs(await ctx.call(keys.frontier(scope), ['HGETALL', keys.frontier(scope)], doing));
  const partitions = Number(settings.get('partitions') ?? QUEUE_PARTITIONS);
  let held = 0;
  if (settings.get('layout') === '2') {
    for (let i = 0; i < partitions; i++) {
      const counts = keys.queuePartition(scope, i).state[QUEUE_STATE_KEYS.indexOf('counts')]!;
      held += Number(await ctx.call(counts, ['HGET', counts, 'n'], doing)) || 0;
    }
  } else {
    held = await frontier.clear();
  }
  const inboxesText = await ctx.call(keys.queues(scope), ['GET', keys.queues(scope)], doing);
  const inboxes = inboxesText === null ? 1 : Number(text(inboxesText));
  for (let i = 0; i < partitions; i++) {
    const { state, layout2 } = keys.queuePartition(scope, i);
    await ctx.call(state[0]!, ['DEL', ...state, ...layout2], doing);
  }
  for (let p = 0; p < inboxes; p++)
    await ctx.call(keys.inbox(scope, p), ['DEL', keys.inbox(scope, p), keys.oldStream(scope, p)], doing);
  await ctx.call(keys.frontier(scope), ['DEL', keys.frontier(scope), keys.owners(scope), keys.queues(scope)], doing);
  return held;
}
