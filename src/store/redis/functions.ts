import type { Reply } from './connection.js';
import type { RedisContext } from './context.js';

/**
 * One typed call per function of the seenstore Redis library (./lua/, loaded by ./library.ts):
 * the only place that knows the order of each function's KEYS and ARGV, so no caller counts
 * positions. A function that writes goes through fcallDurable (WAIT for the store's replicas);
 * a read through fcall. Replies are returned as Redis gives them; each function's Lua comment
 * says what they hold. A function that reads Redis's clock (`timed` in lua/library.lua) takes the
 * caller's clock (RedisContext.clockArg) after the arguments its Lua comment lists.
 */

/** A partition's keys that its batch calls declare (batch.lua). */
export interface BatchKeys {
  readonly state: string;
  readonly slices: string;
  /** Where this batch's answers are kept for a retry. */
  readonly batch: string;
  /** The previous batch's answers (the batch's own key when there was none). */
  readonly previousBatch: string;
  /** The filter keys of every slice the geometry names, in filter order. */
  readonly filters: readonly string[];
}

/** What every batch call sends (batch.lua). */
export interface BatchArgs {
  /** The slices the caller believes the partition has: 'stale' when it has another number. */
  readonly slicesAssumed: number;
  readonly count: number;
  /** The partition's geometry as JSON (partitionGeometry). */
  readonly geometry: string;
  /** u32 little-endian bit offsets, URL-major. */
  readonly positions: Buffer;
  readonly answersTtlS: number;
  /** Delete the previous batch's answers (the caller has their reply). */
  readonly dropPrevious: boolean;
}

/** The new URLs of an add to queue into the partition's inbox in the same call (inbox.lua). */
export interface QueueArgs {
  /** encodeQueueItems of the batch's URLs. */
  readonly items: Buffer;
  readonly epoch: number;
}

/** The keys and arguments of the read-only calls (read_begin in bits.lua). */
export interface ReadKeys {
  readonly state: string;
  readonly slices: string;
  readonly filters: readonly string[];
}

export type ReadArgs = Pick<BatchArgs, 'slicesAssumed' | 'count' | 'geometry' | 'positions'>;

/** The keys of a scope's metadata on its slot (scope.lua). */
export interface ScopeKeys {
  readonly scope: string;
  readonly epochs: string;
  readonly queues: string;
}

const flag = (value: boolean): string => (value ? '1' : '');

function batchArgs(args: BatchArgs): (string | Buffer)[] {
  return [
    String(args.slicesAssumed),
    String(args.count),
    args.geometry,
    args.positions,
    String(args.answersTtlS),
    flag(args.dropPrevious),
  ];
}

/**
 * ss_add, or ss_count_add for a counting epoch: decides a batch; with `queue`, queues its new URLs
 * into `keys.inbox` in the same call (refused while `keys.oldStream`, a frontier of layout 1, exists).
 */
export function addBatch(
  ctx: RedisContext,
  counting: boolean,
  keys: BatchKeys & { readonly inbox: string; readonly oldStream: string },
  args: BatchArgs,
  queue: QueueArgs | undefined,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    counting ? 'ss_count_add' : 'ss_add',
    [keys.state, keys.slices, keys.batch, keys.previousBatch, keys.inbox, keys.oldStream, ...keys.filters],
    [...batchArgs(args), ...(queue === undefined ? [] : [queue.items, String(queue.epoch)]), ctx.clockArg()],
    doing,
  );
}

/** ss_count_delete: one occurrence of each URL out of a counting epoch's partition. */
export function deleteBatch(ctx: RedisContext, keys: BatchKeys, args: BatchArgs, doing: string): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_count_delete',
    [keys.state, keys.slices, keys.batch, keys.previousBatch, ...keys.filters],
    batchArgs(args),
    doing,
  );
}

/** ss_has (membership) or ss_count (counting epochs' counts) of a partition's URLs. */
export function readBatch(
  ctx: RedisContext,
  name: 'ss_has' | 'ss_count',
  keys: ReadKeys,
  args: ReadArgs,
  doing: string,
): Promise<Reply> {
  return ctx.fcall(
    name,
    [keys.state, keys.slices, ...keys.filters],
    [String(args.slicesAssumed), String(args.count), args.geometry, args.positions],
    doing,
  );
}

/** ss_init: creates a partition's state and first slice's filters unless it exists. */
export function initPartition(
  ctx: RedisContext,
  keys: ReadKeys,
  firstSlice: string,
  open: boolean,
  filterBytes: readonly number[],
  doing: string,
): Promise<Reply> {
  return ctx.fcall(
    'ss_init',
    [keys.state, keys.slices, ...keys.filters],
    [firstSlice, open ? '1' : '0', ...filterBytes.map(String)],
    doing,
  );
}

/** ss_alloc: a zero string of exactly `bytes` at `key`. */
export function allocate(ctx: RedisContext, key: string, bytes: number, doing: string): Promise<Reply> {
  return ctx.fcall('ss_alloc', [key], [String(bytes)], doing);
}

/** ss_state: a partition's counts, slice specs and the bit counts of `keys.filters`. */
export function partitionState(ctx: RedisContext, keys: ReadKeys, doing: string): Promise<Reply> {
  return ctx.fcall('ss_state', [keys.state, keys.slices, ...keys.filters], [], doing);
}

/** ss_seal: seals a partition (creating it sealed when missing) and returns its final state. */
export function sealPartition(ctx: RedisContext, keys: ReadKeys, firstSlice: string, doing: string): Promise<Reply> {
  return ctx.fcallDurable('ss_seal', [keys.state, keys.slices, ...keys.filters], [firstSlice], doing);
}

/** ss_plan: appends the next slice's spec to an open epoch's plan unless another caller did; the whole plan. */
export function planSlice(
  ctx: RedisContext,
  planKey: string,
  slicesFound: number,
  spec: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable('ss_plan', [planKey], [String(slicesFound), spec], doing);
}

/** ss_extend: grows a partition into the slices `grow` names (JSON, see bits.lua). */
export function extendPartition(
  ctx: RedisContext,
  keys: ReadKeys,
  slicesAssumed: number,
  grow: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_extend',
    [keys.state, keys.slices, ...keys.filters],
    [String(slicesAssumed), grow],
    doing,
  );
}

/** ss_merge: ORs each of `incoming` into the filter of the same index, deleting them. */
export function mergePartition(
  ctx: RedisContext,
  keys: ReadKeys,
  incoming: readonly string[],
  slicesAssumed: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_merge',
    [keys.state, keys.slices, ...keys.filters, ...incoming],
    [String(slicesAssumed), String(keys.filters.length)],
    doing,
  );
}

/** ss_create: a scope's record and first epoch entry, unless the scope exists. */
export function createScopeRecord(
  ctx: RedisContext,
  keys: ScopeKeys,
  record: string,
  epoch: number,
  entry: string,
  partitions: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_create',
    [keys.scope, keys.epochs, keys.queues],
    [record, String(epoch), entry, String(partitions)],
    doing,
  );
}

/** ss_create_many: an imported scope's record and every epoch entry at once, unless the scope exists. */
export function createImportedScope(
  ctx: RedisContext,
  keys: ScopeKeys,
  record: string,
  partitions: number,
  entries: readonly (readonly [number, string])[],
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_create_many',
    [keys.scope, keys.epochs, keys.queues],
    [record, String(partitions), ...entries.flatMap(([n, entry]) => [String(n), entry])],
    doing,
  );
}

/** The rotation that ss_rotate applies when `sealing` is still the scope's open epoch. */
export interface RotationArgs {
  readonly sealing: number;
  readonly sealedEntry: string;
  readonly next: number;
  readonly nextEntry: string;
  readonly record: string;
  readonly partitions: number;
}

/** ss_rotate: seals `sealing` and opens the next epoch in the scope's metadata, atomically. */
export function rotateScope(ctx: RedisContext, keys: ScopeKeys, args: RotationArgs, doing: string): Promise<Reply> {
  return ctx.fcallDurable(
    'ss_rotate',
    [keys.scope, keys.epochs, keys.queues],
    [String(args.sealing), args.sealedEntry, String(args.next), args.nextEntry, args.record, String(args.partitions)],
    doing,
  );
}

/** ss_drop: moves an epoch's entry to the scope's drops; its entry, or null when it is not there. */
export function dropEpochEntry(
  ctx: RedisContext,
  epochs: string,
  drops: string,
  epoch: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcallDurable('ss_drop', [epochs, drops], [String(epoch)], doing);
}

/** ss_format: the store's key layout, set to `layout` by the first open of an empty store. */
export function storeFormat(
  ctx: RedisContext,
  formatKey: string,
  scopesKey: string,
  layout: string,
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_format', [formatKey, scopesKey], [layout], doing);
}

/**
 * ss_node_beat: registers or refreshes a serve node for `ttlMs` by Redis's clock, dropping ended
 * entries. Not waited for by replicas: a heartbeat lost in a failover is made again by the next.
 */
export function nodeHeartbeat(
  ctx: RedisContext,
  nodesKey: string,
  address: string,
  ttlMs: number,
  doing: string,
): Promise<Reply> {
  return ctx.fcall('ss_node_beat', [nodesKey], [address, String(ttlMs), ctx.clockArg()], doing);
}

/** ss_nodes: the live serve nodes' addresses. */
export function liveNodes(ctx: RedisContext, nodesKey: string, doing: string): Promise<Reply> {
  return ctx.fcall('ss_nodes', [nodesKey], [ctx.clockArg()], doing);
}
