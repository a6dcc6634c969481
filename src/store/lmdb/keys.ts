/**
 * Key layout (lmdb's ordered-binary encoding of arrays). Part of the on-disk format: no key is
 * built or taken apart anywhere else.
 *
 *   meta     'store'                      store header
 *            ['scope', scope]             scope record
 *            ['epoch', scope, epoch]      epoch header
 *            ['ckpt', scope, epoch]       checkpoint record
 *            ['fence', scope]             checkpoint fencing token
 *            ['drop', scope, epoch]       an epoch being pruned (its data is still being deleted)
 *   chunks   [scope, epoch, filter, chunkNo]
 *   journal  [scope, epoch, seq]
 */
import * as lmdb from 'lmdb';

export type MetaKey = string | (string | number)[];
type DataKey = (string | number)[];

/** A key range as lmdb-js's getKeys / getRange take it: from `start` up to, not including, `end`. */
export interface KeyRange {
  readonly start: DataKey;
  readonly end: DataKey;
}

export const scopeKey = (scope: string): MetaKey => ['scope', scope];
export const epochKey = (scope: string, epoch: number): MetaKey => ['epoch', scope, epoch];
export const checkpointKey = (scope: string, epoch: number): MetaKey => ['ckpt', scope, epoch];
export const fenceKey = (scope: string): MetaKey => ['fence', scope];
export const dropKey = (scope: string, epoch: number): MetaKey => ['drop', scope, epoch];

export const chunkKey = (scope: string, epoch: number, filter: number, chunkNo: number): DataKey => [scope, epoch, filter, chunkNo];
export const journalKey = (scope: string, epoch: number, seq: number): DataKey => [scope, epoch, seq];

/** Every scope record. */
export const scopeRange = (): KeyRange => ({ start: ['scope'], end: ['scope\u0000'] });
/** Every epoch header of a scope. */
export const epochRange = (scope: string): KeyRange => ({ start: ['epoch', scope, 0], end: ['epoch', scope, Number.MAX_SAFE_INTEGER] });
/** Every drop marker of a scope. */
export const dropRange = (scope: string): KeyRange => ({ start: ['drop', scope, 0], end: ['drop', scope, Number.MAX_SAFE_INTEGER] });
/** The chunks of an epoch's filters from filter `fromFilter` on. */
export const chunkEpochRange = (scope: string, epoch: number, fromFilter = 0): KeyRange => ({
  start: chunkKey(scope, epoch, fromFilter, 0),
  end: chunkKey(scope, epoch + 1, 0, 0),
});
/** The journal records of an epoch with sequence numbers from `fromSeq` up to, not including, `toSeq`. */
export const journalEpochRange = (scope: string, epoch: number, fromSeq = 0, toSeq?: number): KeyRange => ({
  start: journalKey(scope, epoch, fromSeq),
  end: toSeq === undefined ? [scope, epoch + 1] : journalKey(scope, epoch, toSeq),
});

/** The filter and chunk numbers of a chunk key (either may be malformed in a damaged store: callers check). */
export function chunkKeyParts(key: unknown): { readonly filter: number; readonly chunk: number } {
  const [, , filter, chunk] = key as [string, number, number, number];
  return { filter, chunk };
}

/** The sequence number of a journal key. */
export function journalKeySeq(key: unknown): number {
  return (key as [string, number, number])[2];
}

/**
 * The frontier database (created by the first frontier write), format 6 (docs/format.md). Every
 * key starts with the scope and a one-letter tag:
 *   [scope, 's']                            the scope's frontier state (counts, next id, settings)
 *   [scope, 'e', id]                        one queued URL, id >= 1 in the order queued
 *   [scope, 'q', queue]                     a queue's record (counts, politeness, last take)
 *   [scope, 'n', queue]                     the queue holds URLs (listing skips empty queues)
 *   [scope, 'w', queue, dueMs, id]          an entry not leased, in its queue's take order
 *   [scope, 'r', readyAtMs, lastTakeMs, queue]  a queue take may hand out from readyAtMs on
 *   [scope, 'l', leaseUntilMs, id]          a leased entry, by the time its lease runs out
 *   [scope, 'u', urlHash, id]               an entry by a hash of its URL (urlStatus, schedule)
 *   [scope, 'o', owner]                     a taker's last take (host affinity's live owners)
 */
type FrontierTag = 's' | 'e' | 'q' | 'n' | 'w' | 'r' | 'l' | 'u' | 'o';

/** Every tag of the frontier's keys, for clearing a scope. */
export const FRONTIER_TAGS: readonly FrontierTag[] = ['s', 'e', 'q', 'n', 'w', 'r', 'l', 'u', 'o'];
/**
 * The lastTakeMs of a queue's ready key before its first take: it sorts before every real time.
 * The ready key `[readyAtMs, lastTakeMs, queue]` encodes the take order of politeness.ts
 * (compareReady), whose constant this is; the value is stored in keys, so it never changes.
 */
export { NEVER_TAKEN_MS } from '../politeness.js';

export const frontierStateKey = (scope: string): DataKey => [scope, 's'];
export const frontierEntryKey = (scope: string, id: number): DataKey => [scope, 'e', id];
export const frontierQueueKey = (scope: string, queue: string): DataKey => [scope, 'q', queue];
export const frontierNonEmptyKey = (scope: string, queue: string): DataKey => [scope, 'n', queue];
export const frontierWaitKey = (scope: string, queue: string, dueMs: number, id: number): DataKey => [scope, 'w', queue, dueMs, id];
export const frontierReadyKey = (scope: string, readyAtMs: number, lastTakeMs: number, queue: string): DataKey => [scope, 'r', readyAtMs, lastTakeMs, queue];
export const frontierLeaseKey = (scope: string, leaseUntilMs: number, id: number): DataKey => [scope, 'l', leaseUntilMs, id];
export const frontierUrlKey = (scope: string, urlHash: number, id: number): DataKey => [scope, 'u', urlHash, id];
export const frontierOwnerKey = (scope: string, owner: string): DataKey => [scope, 'o', owner];

/** Every key of one tag of a scope (ordered-binary ends a string with byte 0, so `tag + NUL` sorts after them all). */
export const frontierTagRange = (scope: string, tag: FrontierTag): KeyRange => ({ start: [scope, tag], end: [scope, `${tag}\u0000`] });
/** A queue's entries not leased, due at or before `dueMs` (the whole queue with Infinity). */
export const frontierWaitRange = (scope: string, queue: string, dueMs: number): KeyRange => ({ start: [scope, 'w', queue], end: [scope, 'w', queue, dueMs, Infinity] });
/** Ready queues with a ready time at or before `nowMs`, oldest first. */
export const frontierReadyRange = (scope: string, nowMs: number): KeyRange => ({ start: [scope, 'r'], end: [scope, 'r', nowMs, Infinity] });
/** Leases that run out at or before `nowMs` (Infinity: every lease). */
export const frontierLeaseRange = (scope: string, nowMs: number): KeyRange => ({ start: [scope, 'l'], end: [scope, 'l', nowMs, Infinity] });
/** The entries whose URL has hash `urlHash`. */
export const frontierUrlRange = (scope: string, urlHash: number): KeyRange => ({ start: [scope, 'u', urlHash], end: [scope, 'u', urlHash, Infinity] });
/** Queues that hold URLs, in key order, after `after` (exclusive) when given. */
export const frontierNonEmptyRange = (scope: string, after: string | undefined): KeyRange =>
  ({ start: after === undefined ? [scope, 'n'] : [scope, 'n', after, 0], end: [scope, 'n\u0000'] });

/**
 * A key as LMDB stores it (lmdb-js's ordered-binary encoding), and back: what salvage needs to
 * read keys from pages it read itself (salvage-pages.ts), and to tell whether a key lies in a
 * range of keys that was lost.
 */
export function decodeKey(bytes: Buffer): unknown {
  return keyCodec.bufferToKeyValue(bytes);
}

export function encodeKey(key: MetaKey | DataKey): Buffer {
  return keyCodec.keyValueToBuffer(key);
}

/** lmdb-js exports its key codec (ordered-binary's) without declaring it in its types. */
const keyCodec = lmdb as unknown as { bufferToKeyValue(bytes: Buffer): unknown; keyValueToBuffer(key: unknown): Buffer };
