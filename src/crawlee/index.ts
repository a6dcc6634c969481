/**
 * seenstore for Crawlee (`import { ... } from 'seenstore/crawlee'`; `crawlee` is an optional peer
 * dependency). docs/crawlee.md.
 */
import { Request, type RequestQueue } from 'crawlee';
import { SeenstoreRequestManager, type FrontierScope, type RequestManagerOptions } from './request-manager.js';

export { SeenstoreRequestManager, type FrontierScope, type RequestManagerOptions };

/**
 * Crawler options that make `manager` the crawler's request manager:
 * `new CheerioCrawler({ ...crawlerOptions(manager), requestHandler })`. (Crawlee 3.18 refuses its
 * own `requestManager` option in validation; a request queue becomes the request manager.)
 */
export function crawlerOptions(manager: SeenstoreRequestManager): { readonly requestQueue: RequestQueue } {
  return { requestQueue: manager as unknown as RequestQueue };
}

/**
 * The keys the manager records for these URLs: Crawlee's `uniqueKey` of a request of each (its
 * normalised URL: lower-case host, sorted query, no fragment, no trailing slash, so
 * `https://example.org/` is `https://example.org`). Classify these, not the URLs as the crawler
 * printed them: `scope.classify(crawleeKeys(urls))` (docs/crawlee.md "Recrawl").
 */
export function crawleeKeys(urls: readonly string[]): string[] {
  return urls.map((url) => new Request({ url }).uniqueKey);
}

/**
 * For crawlers that keep Crawlee's own queue and only want seenstore's seen-check: records the
 * URLs (keys: what Crawlee would use as `uniqueKey`, or the URLs themselves) and returns those not
 * seen before, in order, durable when it resolves. E.g. in a request handler:
 * `await crawler.addRequests(await newUrls(scope, links))`.
 */
export async function newUrls(scope: Pick<FrontierScope, 'addIfAbsent'>, urls: readonly string[]): Promise<string[]> {
  const fresh = await scope.addIfAbsent(urls);
  return urls.filter((_, i) => fresh[i]);
}
