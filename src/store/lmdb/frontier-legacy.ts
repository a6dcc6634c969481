import { DEFAULT_FRONTIER_SETTINGS, type FrontierSettings } from '../backend.js';
import {
  decoded,
  isCount,
  isOptional,
  isTime,
  validSettings,
  type QueueRecord as QueueRecordV7,
  type RecordDecoder,
} from './frontier-records.js';

/**
 * The frontier's records of format 6 (docs/format.md "The frontier", its last paragraph), read by
 * salvage from the pages of an older store. Format 7's are in frontier-records.ts.
 */

/** A scope's frontier state record, format 6. */
export interface FrontierState {
  readonly v: 2;
  /** Id of the next URL queued. */
  nextId: number;
  /** URLs finished since the frontier began, failures not included. */
  done: number;
  /** URLs finished as failures since the frontier began. Absent (a record written before it was counted): 0. */
  failed?: number;
  /** Entries in the frontier (waiting, scheduled or leased). */
  entries: number;
  /** Of them, leased (leases that ran out count until a write gives them back). */
  leased: number;
  /** Queues that hold URLs. */
  queues: number;
  settings: FrontierSettings;
  /** True once an enqueue (or a caller that keeps the key) read the queue key: configure no longer changes it. Absent: false. */
  queueKeyPinned?: true;
}

/** One queued URL. `leaseUntilMs` 0: not leased. */
export interface EntryRecord {
  readonly v: 2;
  readonly url: string;
  queue: string;
  readonly epoch: number;
  dueMs: number;
  leaseUntilMs: number;
  attempts: number;
  /** Who holds the lease (take's owner), when one was given. */
  owner?: string;
  data?: unknown;
  /**
   * When the URL was first stored (ms since 1970): URLFrontier's creation_date, PurgeURLs' age.
   * Absent in entries written before it was kept, which are dated by `dueMs` (createdMsOf).
   */
  readonly createdMs?: number;
}

/** An entry's creation time: its own, or for an entry written before creation times were kept, its due time (when it was queued, unless it was rescheduled since: then later, never earlier). */
export function createdMsOf(entry: EntryRecord): number {
  return entry.createdMs ?? entry.dueMs;
}

/** A queue's counts and politeness: format 7's record without its number. */
export type QueueRecord = Omit<QueueRecordV7, 'v' | 'no'> & { readonly v: 1 };

export function newState(): FrontierState {
  return { v: 2, nextId: 1, done: 0, entries: 0, leased: 0, queues: 0, settings: DEFAULT_FRONTIER_SETTINGS };
}

export function readState(env: RecordDecoder, bytes: Uint8Array | undefined, scope: string): FrontierState {
  if (bytes === undefined) return newState();
  const where = `frontier state of ${scope}`;
  return decoded(
    env,
    bytes,
    where,
    2,
    (r) =>
      Number.isSafeInteger(r.nextId) &&
      (r.nextId as number) >= 1 &&
      isCount(r.done) &&
      isCount(r.entries) &&
      isCount(r.leased) &&
      isCount(r.queues) &&
      validSettings(r.settings) &&
      isOptional(r.queueKeyPinned, (p) => p === true) &&
      isOptional(r.failed, isCount),
  ) as FrontierState;
}

export function readEntry(env: RecordDecoder, bytes: Uint8Array, scope: string, id: number): EntryRecord {
  return decoded(
    env,
    bytes,
    `frontier entry ${scope}/${id}`,
    2,
    (r) =>
      typeof r.url === 'string' &&
      typeof r.queue === 'string' &&
      isCount(r.epoch) &&
      isTime(r.dueMs) &&
      isTime(r.leaseUntilMs) &&
      isCount(r.attempts) &&
      isOptional(r.owner, (o) => typeof o === 'string') &&
      isOptional(r.createdMs, isTime),
  ) as EntryRecord;
}

export function readQueue(env: RecordDecoder, bytes: Uint8Array, scope: string, key: string): QueueRecord {
  return decoded(
    env,
    bytes,
    `frontier queue ${scope}/${JSON.stringify(key)}`,
    1,
    (r) =>
      isCount(r.waiting) &&
      isCount(r.leased) &&
      isCount(r.completed) &&
      isOptional(r.delayMs, isCount) &&
      isTime(r.blockedUntilMs) &&
      isOptional(r.crawlLimit, isCount) &&
      isOptional(r.lastTakeMs, isTime) &&
      isOptional(r.firstDueMs, isTime) &&
      isOptional(r.readyAtMs, isTime) &&
      isOptional(r.indexedTakeMs, isTime),
  ) as QueueRecord;
}
