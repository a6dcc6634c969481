import type { ServerWritableStream } from '@grpc/grpc-js';
import type { FrontierEntry } from '../epochs/frontier.js';
import type { ServedFrontier } from '../server/served-store.js';
import type { Crawls } from './crawls.js';
import { isMalformed, type MalformedMessage, type UrlInfo } from './proto.js';
import { invalidArgument } from './status.js';

/** ListURLs' page when size is 0 (the reference's default). */
const LIST_URLS_SIZE_DEFAULT = 100;
/** Entries read from the store per step while listing, counting or purging. */
const ENTRY_PAGE = 1_000;
const SECONDS_TO_MS = 1_000;
const DAY_MS = 24 * 3600 * SECONDS_TO_MS;

export interface ListUrlParams {
  readonly start: number;
  readonly size: number;
  readonly key: string;
  readonly crawlID: string;
  readonly filter?: string;
  readonly ignoreCase?: boolean;
}

export interface CountUrlParams {
  readonly key: string;
  readonly crawlID: string;
  readonly filter?: string;
  readonly ignoreCase?: boolean;
}

export interface PurgeUrlParams {
  readonly key: string;
  readonly crawlID: string;
  readonly days: number;
}

/** The reference's text filter: the URL contains it (case-insensitively with ignoreCase); a blank filter matches every URL. */
function urlFilter(filter: string | undefined, ignoreCase: boolean | undefined): (url: string) => boolean {
  if (filter === undefined || filter.trim() === '') return () => true;
  if (ignoreCase !== true) return (url) => url.includes(filter);
  const lower = filter.toLowerCase();
  return (url) => url.toLowerCase().includes(lower);
}

/** Calls `visit` with every entry of a frontier (of one queue when `key` is not empty), page by page; `visit` returning false stops. */
async function forEachEntry(
  frontier: ServedFrontier,
  key: string,
  visit: (entries: readonly FrontierEntry[]) => Promise<boolean> | boolean,
): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await frontier.entries({
      limit: ENTRY_PAGE,
      ...(cursor === undefined ? {} : { cursor }),
      ...(key === '' ? {} : { queue: key }),
    });
    if (!(await visit(page.entries))) return;
    cursor = page.cursor;
  } while (cursor !== undefined);
}

/**
 * An entry as URLFrontier's URLItem, as GetURLStatus answers it: discovered while it waits or is
 * in process, known with its refetch date while it is scheduled; creation_date in seconds.
 */
export function urlItemOf(
  entry: Pick<FrontierEntry, 'url' | 'queue' | 'state' | 'atMs' | 'createdMs' | 'data'>,
  crawlID: string,
): object {
  const info: UrlInfo = { url: entry.url, key: entry.queue, metadata: metadataOf(entry.data), crawlID };
  const creation_date = Math.floor(entry.createdMs / SECONDS_TO_MS);
  if (entry.state === 'scheduled')
    return {
      known: { info, refetchable_from_date: Math.ceil(entry.atMs / SECONDS_TO_MS) },
      ID: entry.url,
      creation_date,
    };
  return { discovered: { info }, ID: entry.url, creation_date };
}

export function metadataOf(data: unknown): UrlInfo['metadata'] {
  const metadata = (data as { metadata?: UrlInfo['metadata'] } | null | undefined)?.metadata;
  return typeof metadata === 'object' && metadata !== null ? metadata : {};
}

/**
 * ListURLs: the URLs in the frontier (waiting, scheduled, in process) of a crawl or one queue,
 * those containing `filter` (ignoreCase: in any case), from the `start`-th match, `size` of them
 * (default 100). The order is the store's (id order on LMDB and in memory, hash order on Redis),
 * stable while nothing is queued or removed. Finished URLs are not listed: they live only as
 * bits of the filter. Resolves with how many were sent.
 */
export async function listUrls(
  crawls: Crawls,
  call: ServerWritableStream<ListUrlParams | MalformedMessage, object>,
): Promise<number> {
  const request = call.request;
  if (isMalformed(request)) throw invalidArgument(request.malformed);
  const scope = await crawls.find(request.crawlID);
  if (scope === undefined) return 0;
  const size = request.size === 0 ? LIST_URLS_SIZE_DEFAULT : request.size;
  const matches = urlFilter(request.filter, request.ignoreCase);
  let position = 0;
  let sent = 0;
  await forEachEntry(scope.frontier(), request.key, (entries) => {
    for (const entry of entries) {
      if (!matches(entry.url)) continue;
      if (position++ < request.start) continue;
      call.write(urlItemOf(entry, scope.name));
      if (++sent === size) return false;
    }
    return true;
  });
  return sent;
}

/** CountURLs: the URLs in the frontier of a crawl or one queue (exact); with a filter, those containing it (a scan of the entries). */
export async function countUrls(crawls: Crawls, request: CountUrlParams): Promise<{ value: number }> {
  const scope = await crawls.find(request.crawlID);
  if (scope === undefined) return { value: 0 };
  const frontier = scope.frontier();
  if (request.filter === undefined || request.filter.trim() === '') {
    if (request.key !== '') {
      const queue = await frontier.queue(request.key);
      return { value: queue === undefined ? 0 : queue.waiting + queue.leased };
    }
    const s = await frontier.stats();
    return { value: s.pending + s.leased };
  }
  const matches = urlFilter(request.filter, request.ignoreCase);
  let value = 0;
  await forEachEntry(frontier, request.key, (entries) => {
    for (const entry of entries) if (matches(entry.url)) value++;
    return true;
  });
  return { value };
}

/**
 * PurgeURLs: removes the URLs of a crawl (or one queue) first stored more than `days` days ago
 * (creation_date), whatever their state; each page's removal is one atomic step that checks the
 * age again. They are not counted completed, and they stay seen in the crawl's filter. Resolves
 * with how many were removed.
 */
export async function purgeUrls(crawls: Crawls, request: PurgeUrlParams, nowMs: number): Promise<{ value: number }> {
  const scope = await crawls.find(request.crawlID);
  if (scope === undefined) return { value: 0 };
  const frontier = scope.frontier();
  const beforeMs = nowMs - request.days * DAY_MS;
  let value = 0;
  await forEachEntry(frontier, request.key, async (entries) => {
    const old = entries.filter((entry) => entry.createdMs < beforeMs).map((entry) => entry.id);
    if (old.length > 0) value += await frontier.purge(old, beforeMs);
    return true;
  });
  return { value };
}
