/**
 * A synthetic site for crawl tests: N interlinked HTML pages, the same for the same N, served on
 * 127.0.0.1 at a free port, with a count of fetches per page so a test can check that a crawl
 * fetched every page exactly once.
 *
 * Every page is reachable from `/` (page i links to pages 8i+1 .. 8i+8), and also links to its
 * parent, the root and a few other pages. The links vary the way real ones do: relative and
 * absolute, with fragments, with the query parameters of a page in another order, some twice, in
 * an order that differs per page, and a few to pages that do not exist (404). Pages live in
 * sections with deep paths, query strings and percent-encoded paths:
 *
 *   /docs/s3/t1/page-17.html      /blog/2024/05/post-18      /shop/item?id=19&color=red
 *   /forum/t/20/?page=1&sort=new  /wiki/Caf%C3%A9_21
 *
 * In-process: `startSite({ pages })`. In a process of its own (for crawls that are killed with
 * kill -9, the site must outlive the crawler): `spawnSite({ pages })`, or from a shell
 *
 *   node dist/test/helpers/site.js [--pages N]     (prints one JSON line {"url","pid","pages"})
 *
 * `GET /__site/stats` answers the fetch counts as JSON; no page links to it, and it is not counted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const DEFAULT_SITE_PAGES = 3_000;
const CHILDREN_PER_PAGE = 8;
const CROSS_LINKS_PER_PAGE = 4;
/** Every page whose number is a multiple of this links to one page that does not exist. */
const MISSING_LINK_EVERY = 97;
const STATS_PATH = '/__site/stats';
const SECTIONS = ['docs', 'blog', 'shop', 'forum', 'wiki'] as const;
const COLORS = ['red', 'green', 'blue'] as const;

export interface SiteStats {
  /** Fetches of page i (200 answers), by page number. */
  readonly pageFetches: readonly number[];
  /** Requests answered 404 (links to missing pages, and anything else that is not a page). */
  readonly notFound: number;
}

export interface SiteOptions {
  /** How many pages (default 3,000; at least 1). */
  readonly pages?: number;
}

export interface Site {
  /** `http://127.0.0.1:PORT` (no trailing slash); the root page is `${url}/`. */
  readonly url: string;
  readonly pages: number;
  stats(): Promise<SiteStats>;
  /** Stops the server (in-process) or the site's process (by its pid) and waits until it is gone. */
  stop(): Promise<void>;
}

export interface SiteProcess extends Site {
  readonly pid: number;
}

/** What a crawl did to the site: pages never fetched, pages fetched more than once, fetch totals. */
export interface CrawlCoverage {
  readonly missedPages: number[];
  /** Fetches beyond the first of each page (0 when every page was fetched at most once). */
  readonly duplicateFetches: number;
  readonly pageFetches: number;
  readonly notFound: number;
}

export function coverage(stats: SiteStats): CrawlCoverage {
  const missedPages: number[] = [];
  let duplicateFetches = 0;
  let pageFetches = 0;
  stats.pageFetches.forEach((count, page) => {
    if (count === 0) missedPages.push(page);
    duplicateFetches += Math.max(0, count - 1);
    pageFetches += count;
  });
  return { missedPages, duplicateFetches, pageFetches, notFound: stats.notFound };
}

/** The canonical path (and query) of page `page`: the form a crawler URL form should arrive at. */
export function pagePath(page: number): string {
  if (page === 0) return '/';
  const section = SECTIONS[page % SECTIONS.length]!;
  switch (section) {
    case 'docs':
      return `/docs/s${page % 7}/t${page % 3}/page-${page}.html`;
    case 'blog':
      return `/blog/${2020 + (page % 5)}/${String(1 + (page % 12)).padStart(2, '0')}/post-${page}`;
    case 'shop':
      return `/shop/item?color=${COLORS[page % COLORS.length]}&id=${page}`;
    case 'forum':
      return `/forum/t/${page}/?page=1&sort=new`;
    case 'wiki':
      return `/wiki/Caf%C3%A9_${page}`;
  }
}

/** The page a request path names, or -1 (a 404). Query parameters may come in any order. */
export function pageOf(url: URL, pages: number): number {
  const { pathname, searchParams } = url;
  let page = -1;
  let match: RegExpExecArray | null;
  if (pathname === '/') page = searchParams.size === 0 ? 0 : -1;
  else if ((match = /^\/docs\/s\d+\/t\d+\/page-(\d+)\.html$/.exec(pathname)) !== null) page = Number(match[1]);
  else if ((match = /^\/blog\/\d{4}\/\d{2}\/post-(\d+)$/.exec(pathname)) !== null) page = Number(match[1]);
  else if ((match = /^\/forum\/t\/(\d+)\/$/.exec(pathname)) !== null) page = Number(match[1]);
  else if ((match = /^\/wiki\/Caf%C3%A9_(\d+)$/.exec(pathname)) !== null) page = Number(match[1]);
  else if (pathname === '/shop/item' && /^\d+$/.test(searchParams.get('id') ?? ''))
    page = Number(searchParams.get('id'));
  if (!(page >= 0 && page < pages)) return -1;
  // The page's own path, with its parameters in any order, and nothing else.
  const canonical = new URL(pagePath(page), url);
  canonical.searchParams.sort();
  const asked = new URL(url);
  asked.searchParams.sort();
  return canonical.pathname === asked.pathname && canonical.search === asked.search ? page : -1;
}

/** The page's links (hrefs as they appear in its HTML), deterministic for (page, pages, origin). */
export function pageLinks(page: number, pages: number, origin: string): string[] {
  const random = mulberry32(page + 1);
  const targets: number[] = [];
  for (
    let child = page * CHILDREN_PER_PAGE + 1;
    child <= page * CHILDREN_PER_PAGE + CHILDREN_PER_PAGE && child < pages;
    child++
  ) {
    targets.push(child);
  }
  if (page > 0) targets.push(Math.floor((page - 1) / CHILDREN_PER_PAGE), 0);
  for (let i = 0; i < CROSS_LINKS_PER_PAGE; i++) targets.push(Math.floor(random() * pages));
  // Some links twice: the first child and the parent appear again, in another form.
  if (targets.length > 0) targets.push(targets[0]!);
  if (page > 0) targets.push(Math.floor((page - 1) / CHILDREN_PER_PAGE));
  const links = targets.map((target) => linkForm(pagePath(target), random, origin));
  if (page % MISSING_LINK_EVERY === 0 && page > 0) links.push(`/missing/${page}.html`);
  shuffle(links, random);
  return links;
}

/** One of the forms a link to `path` takes in the wild: relative, absolute, with a fragment, reordered. */
function linkForm(path: string, random: () => number, origin: string): string {
  let href = path;
  const queryAt = href.indexOf('?');
  if (queryAt >= 0 && random() < 0.5) {
    const reordered = href
      .slice(queryAt + 1)
      .split('&')
      .reverse()
      .join('&');
    href = `${href.slice(0, queryAt)}?${reordered}`;
  }
  if (random() < 0.3) href = `${origin}${href}`;
  if (random() < 0.3) href = `${href}#part-${Math.floor(random() * 5)}`;
  return href;
}

function pageHtml(page: number, links: readonly string[]): string {
  const items = links.map((href, i) => `<li><a href="${href.replaceAll('&', '&amp;')}">link ${i}</a></li>`).join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Page ${page}</title></head>
<body><h1>Page ${page}</h1>
<p>Synthetic page ${page} of a crawl test site. ${'Lorem ipsum dolor sit amet. '.repeat(4 + (page % 5))}</p>
<ul>
${items}
</ul></body></html>
`;
}

/** Serves the site in this process. */
export async function startSite(options: SiteOptions = {}): Promise<Site> {
  const pages = options.pages ?? DEFAULT_SITE_PAGES;
  if (!Number.isSafeInteger(pages) || pages < 1) throw new TypeError(`pages must be a whole number >= 1, got ${pages}`);
  const pageFetches = new Array<number>(pages).fill(0);
  let notFound = 0;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const origin = `http://${request.headers.host ?? '127.0.0.1'}`;
    const url = new URL(request.url ?? '/', origin);
    if (url.pathname === STATS_PATH) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pageFetches, notFound }));
      return;
    }
    const page = request.method === 'GET' || request.method === 'HEAD' ? pageOf(url, pages) : -1;
    if (page < 0) {
      notFound++;
      response
        .writeHead(404, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!doctype html><title>Not found</title><h1>Not found</h1>\n');
      return;
    }
    pageFetches[page]!++;
    response
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(pageHtml(page, pageLinks(page, pages, origin)));
  });
  // Crawlers keep connections alive; stop() must not wait for them.
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    pages,
    stats: async () => ({ pageFetches: [...pageFetches], notFound }),
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        server.closeAllConnections();
      }),
  };
}

/** Serves the site from a child process (this file run as a program); stop() kills it by its pid. */
export async function spawnSite(options: SiteOptions = {}): Promise<SiteProcess> {
  const pages = options.pages ?? DEFAULT_SITE_PAGES;
  // The site's stdin is a pipe from this process: when this process dies (kill -9 included), the
  // pipe closes and the site exits, so a failed test never leaves it running.
  const child = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), '--pages', String(pages), '--exit-with-parent'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const first = await firstLine(child);
  if (first === undefined) throw new Error(`the site process ${child.pid} exited before it listened`);
  const { url } = JSON.parse(first) as { url: string };
  const pid = child.pid!;
  return {
    url,
    pid,
    pages,
    stats: async () => (await (await fetch(`${url}${STATS_PATH}`)).json()) as SiteStats,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGTERM');
      await exited;
    },
  };
}

function firstLine(child: ChildProcess): Promise<string | undefined> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      lines.close();
      resolve(line);
    });
    child.once('exit', () => resolve(undefined));
  });
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

async function main(): Promise<void> {
  const pagesAt = process.argv.indexOf('--pages');
  const pages = pagesAt >= 0 ? Number(process.argv[pagesAt + 1]) : DEFAULT_SITE_PAGES;
  const site = await startSite({ pages });
  process.stdout.write(`${JSON.stringify({ url: site.url, pid: process.pid, pages })}\n`);
  const stop = (): void => {
    void site.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  if (process.argv.includes('--exit-with-parent')) process.stdin.once('close', stop).resume();
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main();
