import { SCOPE_NAME_PATTERN } from '../store/records.js';

/** The crawl an empty crawl ID names: URLFrontier's own name for its default crawl. */
export const DEFAULT_CRAWL = 'DEFAULT';

/**
 * The scope of URLFrontier crawl `crawlID`, or undefined when it cannot be a scope name. Crawl
 * `c` is scope `c`, `""` is DEFAULT, and a `:` stands for a `.` (as in RESP keys), so that the
 * gRPC service and a frontier dump name a crawl's scope the same way.
 */
export function scopeNameOfCrawl(crawlID: string): string | undefined {
  const name = crawlID === '' ? DEFAULT_CRAWL : crawlID.replaceAll(':', '.');
  return SCOPE_NAME_PATTERN.test(name) ? name : undefined;
}

/** Why a crawl ID cannot be a scope, for messages. */
export function unusableCrawlMessage(crawlID: string): string {
  return `crawl ID ${JSON.stringify(crawlID.slice(0, 80))} is not usable: 1-64 of A-Z a-z 0-9 . _ - (a : stands for a .), starting with a letter or digit`;
}
