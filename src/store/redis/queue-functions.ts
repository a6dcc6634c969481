import { DEFAULT_FRONTIER_SETTINGS } from '../backend.js';
import type { Reply } from './connection.js';
import type { RedisContext } from './context.js';
import type { QueuePartitionKeys } from './keys.js';

/**
 * One typed call per queue function of the library (lua/queue-*.lua), the only place that knows
 * their KEYS and ARGV: every one declares a partition's state keys (QueuePartitionKeys.state),
 * and those answered once its answer keys after them; ARGV begins with the frontier's settings
 * and ends with the caller's clock (RedisContext.clockArg: each reads Redis's clock, `timed` in
 * lua/common.lua).
 * Writes go through fcallDurable; the reads (which may give ended leases back, a change any
 * later call repeats) through fcall.
 */

/** What every queue function needs of the frontier's settings (lua/queue-state.lua fbegin). */
export interface QueueSettingsArgs {
  /** Changes with every configure: a partition re-times its queues when it sees a new one. */
  readonly rev: string;
  readonly delayMs: number;
  readonly maxInFlightPerQueue: number;
}

/** What a call answered once sends (common.lua earlier_answer). */
export interface AnswerArgs {
  readonly answer: string;
  readonly previousAnswer: string;
  readonly dropPrevious: boolean;
  readonly answerTtlS: number;
}

/** An inbox entry moved into its queue's partition (lua/inbox.lua). */
export interface InboxEntry {
  /** The inbox (the epochs' partition) it is in. */
  readonly source: number;
  /** Its stream id, `MS-SEQ`. */
  readonly id: string;
  /** The add that queued it, and its place there. */
  readonly batch: string;
  readonly place: number;
  /** When it is due: when the add queued it. */
  readonly dueMs: number;
  readonly url: string;
  readonly queue: string;
  readonly epoch: string;
  /** JSON text, '' for none. */
  readonly data: string;
}

/** A URL scheduled at a time ('' data keeps what the entry has). */
export interface ScheduledUrl {
  readonly url: string;
  readonly queue: string;
  readonly atMs: number;
  readonly data: string;
}

/** A queue's own settings change: undefined unchanged, null back to none. */
export interface QueueStateChange {
  readonly delayMs?: number | null;
  readonly blockedUntilMs?: number;
  readonly crawlLimit?: number | null;
}

const settingsArgs = (s: QueueSettingsArgs): string[] => [s.rev, String(s.delayMs), String(s.maxInFlightPerQueue)];
const answerKeys = (keys: QueuePartitionKeys, a: AnswerArgs): string[] => [...keys.state, a.answer, a.previousAnswer];
const answerArgs = (a: AnswerArgs): string[] => [String(a.answerTtlS), a.dropPrevious ? '1' : ''];
const optional = (value: number | null | undefined): string =>
  value === undefined ? '' : value === null ? 'none' : String(value);

/** ss_fq_ready: Redis's now, then key, ready time, last take and URLs available of ready queues (oldest first); with `only` ('=' and a queue key), that queue alone. */
export function readyQueues(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  offset: number,
  limit: number,
  only: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcall(
    'ss_fq_ready',
    keys.state,
    [...settingsArgs(s), String(offset), String(limit), only, ctx.clockArg()],
    doing,
  );
}

/** ss_fq_take: leases up to `quota` URLs of each queue still ready; per URL id, URL, queue, epoch, attempts, lease end, data. */
export function takeQueues(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  a: AnswerArgs,
  s: QueueSettingsArgs,
  leaseMs: number,
  owner: string,
  picks: readonly { key: string; quota: number }[],
  doing: string,
): Promise<Reply> {
  const pairs = picks.flatMap((pick) => [pick.key, String(pick.quota)]);
  return ctx.fcallDurable(
    'ss_fq_take',
    answerKeys(keys, a),
    [...settingsArgs(s), ...answerArgs(a), String(leaseMs), owner, ...pairs, ctx.clockArg()],
    doing,
  );
}

/** ss_fq_admit: queues inbox entries (each inbox's in inbox order; each entry once); how many it queued. */
export function admitEntries(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  entries: readonly InboxEntry[],
  doing: string,
): Promise<Reply> {
  const flat = entries.flatMap((e) => [
    String(e.source),
    e.id,
    e.url,
    e.queue,
    e.epoch,
    e.data,
    String(e.dueMs),
    String(e.place),
  ]);
  return ctx.fcallDurable('ss_fq_admit', keys.state, [...settingsArgs(s), ...flat, ctx.clockArg()], doing);
}

/** ss_fq_done: finishes entries by id (refetchAtMs[i] > 0: rescheduled then), counted as failed or done; how many were there. */
export function finishIds(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  a: AnswerArgs,
  s: QueueSettingsArgs,
  ids: readonly string[],
  refetchAtMs: readonly number[],
  failed: boolean,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_done',
    answerKeys(keys, a),
    [
      ...settingsArgs(s),
      ...answerArgs(a),
      String(ids.length),
      ...ids,
      ...refetchAtMs.map(String),
      failed ? '1' : '0',
      ctx.clockArg(),
    ],
    doing,
  );
}

/** ss_fq_release: gives leased entries back, each with new data (JSON) or '' to keep its own; how many were leased. */
export function releaseIds(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  a: AnswerArgs,
  s: QueueSettingsArgs,
  ids: readonly string[],
  payloads: readonly string[],
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_release',
    answerKeys(keys, a),
    [...settingsArgs(s), ...answerArgs(a), String(ids.length), ...ids, ...payloads, ctx.clockArg()],
    doing,
  );
}

/** ss_fq_reclaim: gives back every running lease of `owner`; how many. */
export function reclaimOwner(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  a: AnswerArgs,
  s: QueueSettingsArgs,
  owner: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_reclaim',
    answerKeys(keys, a),
    [...settingsArgs(s), ...answerArgs(a), owner, ctx.clockArg()],
    doing,
  );
}

/** ss_fq_schedule: URLs wait in their queues until their times (0: finished); how many now wait. */
export function scheduleUrls(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  a: AnswerArgs,
  s: QueueSettingsArgs,
  items: readonly ScheduledUrl[],
  doing: string,
): Promise<Reply> {
  const flat = items.flatMap((item) => [item.url, item.queue, String(item.atMs), item.data]);
  return ctx.fcallDurable(
    'ss_fq_schedule',
    answerKeys(keys, a),
    [...settingsArgs(s), ...answerArgs(a), String(items.length), ...flat, ctx.clockArg()],
    doing,
  );
}

/** ss_fq_forget: removes the entries of `urls` without finishing them; how many were there. */
export function forgetUrls(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  urls: readonly string[],
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable('ss_fq_forget', keys.state, [...settingsArgs(s), ...urls, ctx.clockArg()], doing);
}

/** ss_fq_find (read-only): Redis's now, then per URL its id and entry JSON ('' and '' when not here). */
export function findUrls(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  urls: readonly string[],
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_fq_find', keys.state, [...urls, ctx.clockArg()], doing);
}

/** ss_fq_scan (read-only): one HSCAN page of the partition's entry pages from `cursor`: the next cursor ('0': done), then per entry its id and entry JSON. */
export function scanEntries(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  cursor: string,
  count: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_fq_scan', keys.state, [cursor, String(count)], doing);
}

/** ss_fq_migrate: moves up to `batch` entries (or queue records) of key layout 2 into layout 3; how many it moved and how many are left. */
export function migratePartition(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  batch: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_migrate',
    [...keys.state, ...keys.layout2],
    [...settingsArgs(s), String(batch), ctx.clockArg()],
    doing,
  );
}

/** ss_fq_set: a queue's own delay, block and crawl limit. */
export function setQueueState(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  key: string,
  change: QueueStateChange,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_set',
    keys.state,
    [
      ...settingsArgs(s),
      key,
      optional(change.delayMs),
      optional(change.blockedUntilMs),
      optional(change.crawlLimit),
      ctx.clockArg(),
    ],
    doing,
  );
}

/** ss_fq_queue: waiting, leased, completed, own delay, blocked until, crawl limit, ready at (-1: none); [] for an unknown queue. */
export function queueState(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  key: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_fq_queue', keys.state, [...settingsArgs(s), key, ctx.clockArg()], doing);
}

/** ss_fq_list: per queue holding entries after `after` ('' from the first), in key order: its key and its ss_fq_queue reply. */
export function listQueueStates(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  after: string,
  limit: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_fq_list', keys.state, [...settingsArgs(s), after, String(limit), ctx.clockArg()], doing);
}

/** ss_fq_delete: removes a queue with its entries and settings; how many entries it held. */
export function deleteQueueEntries(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  key: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable('ss_fq_delete', keys.state, [...settingsArgs(s), key, ctx.clockArg()], doing);
}

/** ss_fq_purge: removes the entries of `ids` (numbers within the partition) created before `beforeMs`, without finishing them; how many. */
export function purgeIds(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  beforeMs: number,
  ids: readonly string[],
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_purge',
    keys.state,
    [...settingsArgs(s), String(beforeMs), ...ids, ctx.clockArg()],
    doing,
  );
}

/** ss_fq_clear: removes every queue of the partition (and with `completed` its count of finished entries); how many entries they held. */
export function clearQueues(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  completed: boolean,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_fq_clear',
    keys.state,
    [...settingsArgs(s), completed ? '1' : '0', ctx.clockArg()],
    doing,
  );
}

/** ss_fq_stats: entries, leased, done, queues holding entries, failed. */
export function queueCounts(
  ctx: RedisContext,
  keys: QueuePartitionKeys,
  s: QueueSettingsArgs,
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_fq_stats', keys.state, [...settingsArgs(s), ctx.clockArg()], doing);
}

/**
 * ss_frontier_configure: pins a new frontier's layout and partitions, sets `fields`, starts a new
 * revision; all settings. A change of a pinned queue key changes nothing (the reply shows the key as it is).
 */
export function configureFrontier(
  ctx: RedisContext,
  key: string,
  partitions: number,
  fields: readonly (readonly [string, string])[],
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_frontier_configure',
    [key],
    [String(partitions), DEFAULT_FRONTIER_SETTINGS.queueKey, ...fields.flat()],
    doing,
  );
}

/** ss_frontier_layout: the frontier's key layout `from` becomes `to` (another layout is left as it is); the layout now. */
export function setFrontierLayout(
  ctx: RedisContext,
  key: string,
  from: string,
  to: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable('ss_frontier_layout', [key], [from, to], doing);
}

/** ss_frontier_pin: pins the queue key (configure no longer changes it); all settings. */
export function pinFrontierQueueKey(ctx: RedisContext, key: string, doing: string): Promise<Reply> {
  return ctx.fcallDurable('ss_frontier_pin', [key], [], doing);
}
