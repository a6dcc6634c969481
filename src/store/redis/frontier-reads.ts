/** The Redis frontier's reads: where URLs are queued, its queues, its entries page by page. */
import type { EntryPage, FrontierEntry, QueueStats, UrlStatus } from '../backend.js';
import { compareKeys } from '../politeness.js';
import { list, text } from './context.js';
import { queueStats, readStoredEntry, scannedEntries, type FoundEntry } from './frontier-records.js';
import { ITEMS_PER_CALL, range, type FrontierPartitions } from './frontier-partitions.js';
import type { Settings } from './frontier-settings.js';
import { findUrls, listQueueStates, scanEntries } from './queue-functions.js';
import { entryState } from '../entry-state.js';

/** Entry pages read per HSCAN page of forEachUrl (lua/queue-codec.lua: up to ENTRIES_PER_PAGE entries each). */
const SCAN_PAGES = 300;
/** Entry numbers per page of a partition's entries (PAGE_ENTRIES in lua/queue-codec.lua). */
const ENTRIES_PER_PAGE = 32;

export async function urlStatusOf(p: FrontierPartitions, s: Settings, url: string): Promise<UrlStatus | undefined> {
  const where = (await findEntries(p, [url], s))[0];
  if (where === undefined) return undefined;
  const { entry, nowMs } = where;
  return {
    id: `${where.partition}-${where.id}`,
    queue: entry.q,
    ...entryState(entry.l, entry.t, nowMs),
    attempts: entry.a,
    epoch: entry.e,
    createdMs: entry.c ?? entry.t,
  };
}

/** Where each URL is queued, looked up in every partition at once (a URL's queue, and so its partition, is not known from it). */
export async function findEntries(
  p: FrontierPartitions,
  urls: readonly string[],
  s: Settings,
): Promise<(FoundEntry | undefined)[]> {
  const out: (FoundEntry | undefined)[] = new Array(urls.length).fill(undefined);
  for (let from = 0; from < urls.length; from += ITEMS_PER_CALL) {
    const part = urls.slice(from, from + ITEMS_PER_CALL);
    await Promise.all(
      range(s.partitions).map(async (i) => {
        const reply = list(await findUrls(p.ctx, p.keys(i), part, p.doing('looking up URLs of')));
        const nowMs = Number(reply[0]);
        for (let n = 0; n < part.length; n++) {
          const json = text(reply[2 + 2 * n]);
          if (json !== '')
            out[from + n] = {
              partition: i,
              id: text(reply[1 + 2 * n]),
              entry: readStoredEntry(json, p.scope),
              nowMs,
            };
        }
      }),
    );
  }
  return out;
}

export async function listQueues(
  p: FrontierPartitions,
  s: Settings,
  options: { readonly after?: string; readonly limit: number },
): Promise<QueueStats[]> {
  const lists = await Promise.all(
    range(s.partitions).map(async (i) => {
      const reply = list(
        await listQueueStates(
          p.ctx,
          p.keys(i),
          s,
          options.after ?? '',
          options.limit,
          p.doing('listing the queues of'),
        ),
      );
      const out: QueueStats[] = [];
      for (let at = 0; at + 1 < reply.length; at += 2) out.push(queueStats(text(reply[at]), list(reply[at + 1])));
      return out;
    }),
  );
  return lists
    .flat()
    .sort((a, b) => compareKeys(a.key, b.key))
    .slice(0, options.limit);
}

/** Every queued URL, a batch per HSCAN page of each partition's entry pages: reads only; a URL queued or finished meanwhile may or may not be seen. */
export async function forEachQueuedUrl(
  p: FrontierPartitions,
  s: Settings,
  onBatch: (urls: string[]) => void,
): Promise<void> {
  for (const i of range(s.partitions)) {
    let cursor = '0';
    do {
      const page = scannedEntries(await scanEntries(p.ctx, p.keys(i), cursor, SCAN_PAGES, p.doing('listing')), p.scope);
      cursor = page.cursor;
      if (page.entries.length > 0) onBatch(page.entries.map(({ entry }) => entry.u));
    } while (cursor !== '0');
  }
}

/**
 * A page of entries: one HSCAN page of one partition's entry pages (cursor `PARTITION:HSCAN`),
 * so a page may hold more or fewer than `limit`; of one queue, only its partition is read.
 * HSCAN may repeat an entry when the hash is resized during the listing.
 */
export async function entryPage(
  p: FrontierPartitions,
  s: Settings,
  options: {
    readonly cursor?: string;
    readonly limit: number;
    readonly queue?: string;
  },
): Promise<EntryPage> {
  const partitions = options.queue === undefined ? range(s.partitions) : [p.route(options.queue, s)];
  let [at, scan] =
    options.cursor === undefined
      ? [0, '0']
      : (options.cursor.split(':').map((part, i) => (i === 0 ? Number(part) : part)) as [number, string]);
  const nowMs = p.ctx.now();
  const entries: FrontierEntry[] = [];
  while (at < partitions.length && entries.length === 0) {
    const i = partitions[at]!;
    const page = scannedEntries(
      await scanEntries(
        p.ctx,
        p.keys(i),
        scan,
        Math.max(1, Math.ceil(options.limit / ENTRIES_PER_PAGE)),
        p.doing('listing'),
      ),
      p.scope,
    );
    scan = page.cursor;
    for (const { id, entry } of page.entries) {
      if (options.queue !== undefined && entry.q !== options.queue) continue;
      const data = entry.d === undefined ? undefined : (JSON.parse(entry.d) as unknown);
      entries.push({
        id: `${i}-${id}`,
        url: entry.u,
        queue: entry.q,
        ...entryState(entry.l, entry.t, nowMs),
        createdMs: entry.c ?? entry.t,
        ...(data === undefined ? {} : { data }),
      });
    }
    if (scan === '0') {
      at++;
    }
  }
  return at < partitions.length ? { entries, cursor: `${at}:${scan}` } : { entries };
}
