import type { FrontierCounters, FrontierEntryV6, FrontierOwnerV6, FrontierQueueV6, MigrationStep } from './steps.js';

interface ScopeFrontier {
  counters: FrontierCounters;
  readonly entries: FrontierEntryV6[];
  readonly queues: FrontierQueueV6[];
  readonly owners: FrontierOwnerV6[];
}

type Fields = Record<string, unknown>;

/**
 * Format 6 → 7: the frontier moves to a database of byte keys (docs/format.md "Frontier"): a
 * queued URL is one key in its queue's take order, its URL kept after its queue's key, with a
 * small location key for lookups by id and URL, where format 6 kept an entry record, a waiting
 * key, a URL key (each naming the queue again) and a lease key. Every entry keeps its number
 * (its seq now), queue, due time, lease, owner, attempts, payload and creation time; each queue
 * its politeness and completed count; the settings, counters and takers stay. The indexes are
 * built anew; the old database is deleted.
 */
export const formatSixToSeven: MigrationStep = {
  from: 6,
  to: 7,
  summary:
    'the frontier keeps each queued URL as one compact key in its queue (URL after the host, numbers as varints): about a third of the space',
  apply(txn) {
    const scopes = new Map<string, ScopeFrontier>();
    const of = (scope: string): ScopeFrontier => {
      let frontier = scopes.get(scope);
      if (frontier === undefined) {
        frontier = { counters: { nextId: 1, done: 0 }, entries: [], queues: [], owners: [] };
        scopes.set(scope, frontier);
      }
      return frontier;
    };
    let changed = 0;
    for (const { key, value } of txn.frontierRecords()) {
      const [scope, tag, name] = key as [string, string, unknown];
      const record = value as Fields;
      if (tag === 's') {
        const { nextId, done, failed, settings, queueKeyPinned } = record as unknown as FrontierCounters;
        of(scope).counters = {
          nextId,
          done,
          ...(failed === undefined ? {} : { failed }),
          settings: settings!,
          ...(queueKeyPinned === true ? { queueKeyPinned } : {}),
        };
      } else if (tag === 'e') {
        const { url, queue, epoch, dueMs, leaseUntilMs, attempts, owner, data, createdMs } =
          record as unknown as FrontierEntryV6;
        of(scope).entries.push({
          id: name as number,
          url,
          queue,
          epoch,
          dueMs,
          leaseUntilMs,
          attempts,
          ...(owner === undefined ? {} : { owner }),
          ...(data === undefined ? {} : { data }),
          createdMs: createdMs ?? dueMs,
        });
        changed++;
      } else if (tag === 'q') {
        const { completed, blockedUntilMs, delayMs, crawlLimit, lastTakeMs } = record as unknown as FrontierQueueV6;
        of(scope).queues.push({
          key: name as string,
          completed,
          blockedUntilMs,
          ...(delayMs === undefined ? {} : { delayMs }),
          ...(crawlLimit === undefined ? {} : { crawlLimit }),
          ...(lastTakeMs === undefined ? {} : { lastTakeMs }),
        });
      } else if (tag === 'o') {
        of(scope).owners.push({ owner: name as string, lastTakeMs: record.lastTakeMs as number });
      }
      // The indexes (n, w, r, l, u) are built anew from the entries and queues.
    }
    txn.dropOldFrontier();
    for (const [scope, { counters, entries, queues, owners }] of scopes)
      txn.putFrontier(scope, counters, entries, queues, owners);
    return changed;
  },
};
