import { queueKeyOf } from '../src/url/queue-key.js';
import type { FrontierEntryV6, MigrationStep } from './steps.js';

interface OldEntry {
  readonly url: string;
  readonly epoch: number;
  readonly atMs?: number;
  readonly leaseUntilMs: number;
  readonly attempts: number;
  readonly owner?: string;
  readonly data?: unknown;
}

/**
 * Format 5 → 6: the frontier goes from one list per scope (`[scope, 0]` state, `[scope, id]`
 * entries, taken oldest first) to queues with politeness (docs/format.md): each entry joins the
 * queue of its URL's host (the default queue key, which format-5 scopes get; a URL without a host joins the queue ''), due when it was
 * queued (or now, for an entry without that time), keeping its id, lease, attempts, owner and
 * payload; the scope keeps its next id and finished count. Stores without a frontier change nothing.
 */
export const formatFiveToSix: MigrationStep = {
  from: 5,
  to: 6,
  summary: 'the frontier keeps per-host queues with politeness and revisits: queued URLs join the queue of their host',
  apply(txn) {
    const nowMs = Date.now();
    const scopes = new Map<string, { nextId: number; done: number; entries: FrontierEntryV6[] }>();
    const old = [...txn.frontierRecords()];
    for (const { key, value } of old) {
      const [scope, id] = key as [string, number];
      const frontier = scopes.get(scope) ?? { nextId: 1, done: 0, entries: [] };
      scopes.set(scope, frontier);
      if (id === 0) {
        const state = value as { nextId: number; done: number };
        frontier.nextId = state.nextId;
        frontier.done = state.done;
        continue;
      }
      const entry = value as OldEntry;
      frontier.entries.push({
        id,
        url: entry.url,
        queue: queueKeyOf(entry.url, 'host') ?? '',
        epoch: entry.epoch,
        dueMs: entry.atMs ?? nowMs,
        leaseUntilMs: entry.leaseUntilMs,
        attempts: entry.attempts,
        ...(entry.owner === undefined ? {} : { owner: entry.owner }),
        ...(entry.data === undefined ? {} : { data: entry.data }),
      });
    }
    for (const { key } of old) txn.removeFrontier(key);
    for (const [scope, { nextId, done, entries }] of scopes) txn.putFrontier(scope, { nextId, done }, entries);
    return old.length;
  },
};
