/**
 * The frontier's politeness rule, stated once: when a queue is ready, how many URLs a take may
 * hand out of it, and which of two ready queues goes first. Pure functions of a queue's state,
 * so that each driver keeps its state its own way (memory scans, LMDB and Redis keep counts and an
 * index of ready times) and asks this module what the rule says.
 *
 * The memory and LMDB drivers import it. Redis runs the rule inside its function library, so the
 * Lua keeps its own copy (src/store/redis/lua/politeness.lua); one table of cases
 * (test/helpers/politeness-cases.ts) drives both, so that the two cannot drift. Redis's take sorts
 * the ready queues of its partitions on the client with compareReady (redis/queue-picks.ts).
 *
 * The LMDB ready index encodes compareReady in its key, `scope 'r' readyAtMs lastTakeMs+1 queue`
 * (lmdb/frontier-keys.ts: big-endian, so NEVER_TAKEN_MS, a queue never taken, is 0 there): a walk
 * of the index in key order is the order of compareReady. That key is part of the on-disk format (docs/format.md):
 * a change of the order here is a change of that format too. (LMDB compares the queue keys by
 * their UTF-8 bytes: the same order as code units, but for characters above U+FFFF against ones
 * from U+E000 to U+FFFF.)
 */

/** The last take of a queue never taken, as the ready order sees it: before every real time. */
export const NEVER_TAKEN_MS = -1;

/** What limits how many of a queue's URLs may be out on lease at once. */
export interface QueueCounts {
  /** Its URLs on lease now. */
  readonly leased: number;
  /** Its URLs done (or given up on). */
  readonly completed: number;
  /** Most URLs of the queue ever handed out to completion; undefined: no limit. */
  readonly crawlLimit?: number | undefined;
}

/** A queue's politeness state, as readyAtMs reads it. */
export interface QueueGate {
  /** When take last handed the queue out; undefined: never. */
  readonly lastTakeMs?: number | undefined;
  /** Its own delay between takes; undefined: the frontier's default. */
  readonly delayMs?: number | undefined;
  /** Taken from no earlier than this (0: not blocked). */
  readonly blockedUntilMs: number;
}

/** A ready queue as the take order compares it. */
export interface ReadyQueue {
  readonly key: string;
  readonly readyAtMs: number;
  /** When take last handed it out; NEVER_TAKEN_MS (or any time before the first real one): never. */
  readonly lastTakeMs: number;
}

/**
 * How many more URLs of a queue may be out on lease: the frontier's in-flight limit per queue
 * (0: none) less those leased, and its crawl limit less those completed and leased. Leased URLs
 * count toward the crawl limit because, once done, the queue must not be over it. Infinity when
 * neither limit applies; never below 0.
 */
export function queueRoom(counts: QueueCounts, maxInFlightPerQueue: number): number {
  const inFlight = maxInFlightPerQueue === 0 ? Infinity : maxInFlightPerQueue - counts.leased;
  const crawl = counts.crawlLimit === undefined ? Infinity : counts.crawlLimit - counts.completed - counts.leased;
  return Math.max(0, Math.min(inFlight, crawl));
}

/**
 * When take may next hand a queue out: the latest of its first due URL not leased (`firstDueMs`),
 * its last take plus its delay (its own, else `defaultDelayMs`), and its block. Undefined when
 * nothing in it could be handed out: no URL waits (`firstDueMs` undefined) or it has no room.
 */
export function readyAtMs(
  gate: QueueGate,
  firstDueMs: number | undefined,
  defaultDelayMs: number,
  room: number,
): number | undefined {
  if (room === 0 || firstDueMs === undefined) return undefined;
  const delayedMs = gate.lastTakeMs === undefined ? -Infinity : gate.lastTakeMs + (gate.delayMs ?? defaultDelayMs);
  return Math.max(firstDueMs, delayedMs, gate.blockedUntilMs);
}

/**
 * How many URLs one take may lease from a ready queue: its `perQueue`, the count the take has left,
 * and the queue's room. The queue hands out fewer when fewer are due.
 */
export function takeAllowance(perQueue: number, countLeft: number, room: number): number {
  return Math.max(0, Math.min(perQueue, countLeft, room));
}

/**
 * The take order of ready queues: the one ready first goes first; of queues ready at once (a
 * delay of 0, or a backlog), the one taken longest ago (a queue never taken before any), so that
 * a queue taken just now waits behind every other ready one and none starves; then key order.
 */
export function compareReady(a: ReadyQueue, b: ReadyQueue): number {
  return a.readyAtMs - b.readyAtMs || a.lastTakeMs - b.lastTakeMs || compareKeys(a.key, b.key);
}

/** Queue keys in code-unit order, the order every driver lists them in. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
