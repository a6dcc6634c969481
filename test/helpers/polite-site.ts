/**
 * The politeness crawl (issue 28): a site of many hosts (each a port of 127.0.0.1, so each its own
 * queue under the `host` key), crawled by several takers through a store's frontier, and checked
 * from the sites' own request logs — not from what the frontier says it did.
 *
 *   const site = await startPoliteSite({ hosts: 20, pagesPerHost: 12 });
 *   await crawlWithChildren(location, 'crawl', site, { takers: 3, delayMs: 150 });   // or crawlInProcess
 *   const report = politenessReport(site, 150);
 *   await site.close();
 *
 * Page i of host h links to page i + 1 of its own host and to page i of the next three hosts, so
 * the crawl spreads across hosts from one seed. `crawlWithChildren` runs each taker as a process
 * of its own on one store location (any driver a location names that processes share: LMDB, a
 * Redis cluster); `crawlInProcess` runs them as concurrent loops of this process (memory://).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../../src/index.js';
import { runChild } from './child-run.js';
import { ROOT } from './data.js';

const CROSS_LINKS_PER_PAGE = 3;
/** Lease of a crawl taker: far longer than a fetch, so no page is fetched twice by a lease running out. */
const CRAWL_LEASE_MS = 60_000;
/** How long an idle taker waits before it asks again (the frontier has nothing ready yet). */
const IDLE_POLL_MS = 10;
const CHILD = join(ROOT, 'dist', 'test', 'helpers', 'polite-taker-child.js');
/** The time of the take that handed the URL out (its lease's end less the lease), sent with each request. */
const TAKEN_AT_HEADER = 'x-seenstore-taken-at';

export interface SiteRequest {
  /** `127.0.0.1:PORT`: the host, and the frontier's queue key of its URLs. */
  readonly host: string;
  readonly path: string;
  /** When the host received it. */
  readonly atMs: number;
  /** When the frontier handed its URL out, as the taker sent it (TAKEN_AT_HEADER); NaN when absent. */
  readonly takenAtMs: number;
}

export interface PoliteSite {
  /** `http://127.0.0.1:PORT` of each host. */
  readonly origins: readonly string[];
  /** Where a crawl starts: the first page of the first host. */
  readonly seed: string;
  readonly pages: number;
  /** Every request any host answered, in the order they came. */
  readonly log: readonly SiteRequest[];
  close(): Promise<void>;
}

export interface CrawlOptions {
  readonly takers: number;
  /** The scope's delay between two takes of one queue. */
  readonly delayMs: number;
  /** URLs per take (default 8). */
  readonly batch?: number;
}

export interface PolitenessReport {
  /** Pages fetched at least once, and requests in all. */
  readonly pagesFetched: number;
  readonly requests: number;
  /** The shortest time between two requests to one host, as the host received them (reported, not a bound: a loaded taker may send late). */
  readonly minGapMs: number;
  /** The shortest time between two takes of one host's URLs, by the take times the requests carried. */
  readonly minTakeGapMs: number;
  /** The shortest time from a take of a host's URL to the arrival of the request of the host's next take. */
  readonly minHitAfterTakeMs: number;
  /** The shortest time from a take to its own request's arrival: below 0, a request came before its take. */
  readonly minTakeToHitMs: number;
  /** First request to last. */
  readonly durationMs: number;
  /** The crawl's duration if the delays were the only limit: the busiest host's pages, one delay apart. */
  readonly boundMs: number;
  /** The crawl's duration one host at a time: every page one delay apart. */
  readonly sequentialMs: number;
  /** The most hosts that received a request within one delay. */
  readonly peakHostsPerDelay: number;
}

export async function startPoliteSite(options: {
  readonly hosts: number;
  readonly pagesPerHost: number;
}): Promise<PoliteSite> {
  const log: SiteRequest[] = [];
  const servers: Server[] = [];
  const origins: string[] = [];
  try {
    for (let h = 0; h < options.hosts; h++) {
      const server = createServer((request, response) => {
        const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
        log.push({
          host,
          path: request.url ?? '',
          atMs: Date.now(),
          takenAtMs: Number(request.headers[TAKEN_AT_HEADER]),
        });
        const page = /^\/page\/(\d+)$/.exec(request.url ?? '');
        const i = page === null ? -1 : Number(page[1]);
        if (i < 0 || i >= options.pagesPerHost) {
          response.writeHead(404).end();
          return;
        }
        response.writeHead(200, { 'content-type': 'text/html' }).end(pageHtml(origins, h, i, options.pagesPerHost));
      });
      servers.push(server);
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
      origins.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    }
  } catch (error) {
    await closeAll(servers);
    throw error;
  }
  return {
    origins,
    seed: `${origins[0]}/page/0`,
    pages: options.hosts * options.pagesPerHost,
    log,
    close: () => closeAll(servers),
  };
}

function pageHtml(origins: readonly string[], h: number, i: number, pagesPerHost: number): string {
  const links: string[] = [];
  if (i + 1 < pagesPerHost) links.push(`/page/${i + 1}`);
  for (let k = 1; k <= CROSS_LINKS_PER_PAGE; k++) links.push(`${origins[(h + k) % origins.length]}/page/${i}`);
  return `<html><body>${links.map((href) => `<a href="${href}">${href}</a>`).join('\n')}</body></html>`;
}

async function closeAll(servers: readonly Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
}

/** Prepares `scope` at `location` for a crawl: its delay, and the seed queued. */
export async function seedCrawl(location: string, scope: string, site: PoliteSite, delayMs: number): Promise<void> {
  const store = await SeenStore.open(location);
  try {
    await store.scope(scope).frontier().configure({ delayMs });
    await store.scope(scope).enqueue([site.seed]);
  } finally {
    await store.close();
  }
}

/** Crawls with `takers` child processes on the store at `location` (each runs `crawlTaker`). */
export async function crawlWithChildren(
  location: string,
  scope: string,
  site: PoliteSite,
  options: CrawlOptions,
): Promise<void> {
  await seedCrawl(location, scope, site, options.delayMs);
  const runs = Array.from({ length: options.takers }, (_, t) =>
    runChild(CHILD, [location, scope, `taker-${t}`, String(options.batch ?? 8)], `polite taker ${t}`),
  );
  const outs = await Promise.all(runs);
  outs.forEach((out, t) => {
    if (out.killed || out.lines.at(-1) !== 'finished')
      throw new Error(`polite taker ${t} did not finish: ${out.lines.slice(-3).join(' | ')}`);
  });
}

/** Crawls with `takers` concurrent loops of this process on one open store (memory://). */
export async function crawlInProcess(
  location: string,
  scope: string,
  site: PoliteSite,
  options: CrawlOptions,
): Promise<void> {
  await seedCrawl(location, scope, site, options.delayMs);
  const store = await SeenStore.open(location);
  try {
    await Promise.all(
      Array.from({ length: options.takers }, (_, t) => crawlTaker(store, scope, `taker-${t}`, options.batch ?? 8)),
    );
  } finally {
    await store.close();
  }
}

/**
 * One crawler: takes what the frontier lets out, fetches it, queues the links it finds, then
 * finishes what it took (links first, so the frontier is never empty while a page's links are
 * still to come); ends when nothing is queued or leased.
 */
export async function crawlTaker(store: SeenStore, scopeName: string, owner: string, batch: number): Promise<number> {
  const scope = store.scope(scopeName);
  const frontier = scope.frontier();
  let fetched = 0;
  for (;;) {
    const taken = await frontier.take(batch, { owner, leaseMs: CRAWL_LEASE_MS });
    if (taken.length === 0) {
      const stats = await frontier.stats();
      if (stats.pending === 0 && stats.leased === 0) return fetched;
      await sleep(IDLE_POLL_MS);
      continue;
    }
    const pages = await Promise.all(
      taken.map(async (entry) => {
        const headers = { [TAKEN_AT_HEADER]: String(entry.leaseUntilMs - CRAWL_LEASE_MS) };
        return { entry, html: await (await fetch(entry.url, { headers })).text() };
      }),
    );
    const links = pages.flatMap(({ entry, html }) =>
      [...html.matchAll(/href="([^"]+)"/g)].map((match) => new URL(match[1]!, entry.url).href),
    );
    if (links.length > 0) await scope.enqueue(links);
    await frontier.done(taken.map((entry) => entry.id));
    fetched += taken.length;
  }
}

/** What the sites' logs say of a finished crawl, with `delayMs` the delay it ran under. */
export function politenessReport(site: PoliteSite, delayMs: number): PolitenessReport {
  const byHost = new Map<string, SiteRequest[]>();
  for (const request of site.log) byHost.set(request.host, [...(byHost.get(request.host) ?? []), request]);
  const busiest = Math.max(...[...byHost.values()].map((requests) => requests.length));
  const minGap = (time: (request: SiteRequest) => number): number => {
    let gapMs = Infinity;
    for (const requests of byHost.values()) {
      const times = requests.map(time).sort((a, b) => a - b);
      for (let i = 1; i < times.length; i++) gapMs = Math.min(gapMs, times[i]! - times[i - 1]!);
    }
    return gapMs;
  };
  let minHitAfterTakeMs = Infinity;
  for (const requests of byHost.values()) {
    const byTake = [...requests].sort((a, b) => a.takenAtMs - b.takenAtMs);
    for (let i = 1; i < byTake.length; i++)
      minHitAfterTakeMs = Math.min(minHitAfterTakeMs, byTake[i]!.atMs - byTake[i - 1]!.takenAtMs);
  }
  const times = site.log.map((request) => request.atMs).sort((a, b) => a - b);
  let peakHostsPerDelay = 0;
  for (const start of times) {
    const hosts = new Set(
      site.log
        .filter((request) => request.atMs >= start && request.atMs < start + delayMs)
        .map((request) => request.host),
    );
    peakHostsPerDelay = Math.max(peakHostsPerDelay, hosts.size);
  }
  return {
    pagesFetched: new Set(site.log.map((request) => `${request.host}${request.path}`)).size,
    requests: site.log.length,
    minGapMs: minGap((request) => request.atMs),
    minTakeGapMs: minGap((request) => request.takenAtMs),
    minHitAfterTakeMs,
    minTakeToHitMs: Math.min(...site.log.map((request) => request.atMs - request.takenAtMs)),
    durationMs: times.length === 0 ? 0 : times.at(-1)! - times[0]!,
    boundMs: (busiest - 1) * delayMs,
    sequentialMs: (site.log.length - 1) * delayMs,
    peakHostsPerDelay,
  };
}
