/** The Redis frontier's records as they come back from Redis: entries, queue stats and ids (lua/queue-state.lua). */
import { SeenStoreError } from '../../errors.js';
import type { QueueStats } from '../backend.js';
import type { Reply } from './connection.js';
import { list, text } from './context.js';

/** A frontier id: the queue partition, then the entry's number in it. */
export const ID_PATTERN = /^(0|[1-9][0-9]{0,4})-([1-9][0-9]{0,14})$/;

/** An entry as lua/queue-state.lua stores it. */
export interface StoredEntry {
  readonly u: string;
  readonly q: string;
  readonly e: number;
  readonly t: number;
  readonly a: number;
  readonly l: number;
  readonly d?: string;
  /** When it was created (absent in entries written before creation times were kept: `t` stands for it). */
  readonly c?: number;
}

export interface FoundEntry {
  readonly partition: number;
  readonly id: string;
  readonly entry: StoredEntry;
  readonly nowMs: number;
}

/** A queue's stats from ss_fq_queue's reply (-1: none). */
export function queueStats(key: string, reply: Reply[]): QueueStats {
  const [waiting, leased, completed, delayMs, blockedUntilMs, crawlLimit, readyAtMs] = reply.map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return {
    key,
    waiting,
    leased,
    completed,
    blockedUntilMs,
    ...(delayMs < 0 ? {} : { delayMs }),
    ...(crawlLimit < 0 ? {} : { crawlLimit }),
    ...(readyAtMs < 0 ? {} : { readyAtMs }),
  };
}

/** An entry as read from its hash, checked; STORE_CORRUPT for anything seenstore did not write. */
export function readStoredEntry(json: string, scope: string): StoredEntry {
  try {
    const entry = JSON.parse(json) as StoredEntry;
    if (
      typeof entry.u === 'string' &&
      typeof entry.q === 'string' &&
      Number.isSafeInteger(entry.t) &&
      Number.isSafeInteger(entry.a)
    )
      return entry;
  } catch {
    // Reported below, as any entry seenstore did not write.
  }
  throw new SeenStoreError(
    'STORE_CORRUPT',
    `the frontier of ${scope}: an entry seenstore did not write (${json.slice(0, 200)})`,
  );
}

/** One page of ss_fq_scan's reply (the next cursor, then id and entry JSON pairs), checked. */
export function scannedEntries(
  reply: Reply,
  scope: string,
): { cursor: string; entries: { id: string; entry: StoredEntry }[] } {
  const flat = list(reply);
  const entries: { id: string; entry: StoredEntry }[] = [];
  for (let at = 1; at + 1 < flat.length; at += 2)
    entries.push({ id: text(flat[at]), entry: readStoredEntry(text(flat[at + 1]), scope) });
  return { cursor: text(flat[0]), entries };
}

/**
 * The refusal of a frontier of key layout 2 (a JSON record per entry, before issue 47): every
 * frontier call until `seenstore migrate` moved it to layout 3 (docs/redis.md "Frontier").
 */
export function layout2Error(scope: string): SeenStoreError {
  return new SeenStoreError(
    'FORMAT_UNSUPPORTED',
    `the frontier of scope ${scope} has the Redis key layout 2 (a JSON record per URL); this seenstore reads layout 3: run \`seenstore --store LOCATION migrate\` once to move it (URLs, leases and ids are kept; docs/redis.md "Frontier")`,
  );
}

/** A frontier id as take gave it (`I-N`: queue partition, entry number); USAGE for anything else. */
export function parseFrontierId(id: string): { partition: number; entry: string } {
  const match = typeof id === 'string' ? ID_PATTERN.exec(id) : null;
  if (match === null) throw SeenStoreError.notFrontierId(id);
  return { partition: Number(match[1]), entry: match[2]! };
}
