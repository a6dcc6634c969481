/**
 * A Crawlee crawl on a seenstore frontier, in a process of its own (so that it can be killed):
 *   node crawlee-child.js STORE SITE_URL CONCURRENCY [OWNER] [REDIS_LOCATION]
 * A real CheerioCrawler, its request manager seenstore's (seenstore/crawlee), follows every link of
 * the site from its root; it prints `fetched URL` for each page handled. Run again after a kill,
 * it resumes from the store. Crawlee's own storage goes to STORE/crawlee (CRAWLEE_STORAGE_DIR).
 * With REDIS_LOCATION the frontier is that Redis store's (several crawler processes share it, each
 * with its own OWNER); STORE is then only the crawler's own scratch directory.
 */
import { join } from 'node:path';
import { writeSync } from 'node:fs';

const [storeDir, siteUrl, concurrencyText, owner = 'crawler-1', redisLocation] = process.argv.slice(2);
process.env.CRAWLEE_STORAGE_DIR = join(storeDir!, 'crawlee');
const { CheerioCrawler, Configuration } = await import('crawlee');
const { SeenStore } = await import('../../src/index.js');
const { SeenstoreRequestManager, crawlerOptions } = await import('../../src/crawlee/index.js');

const store = await SeenStore.open(redisLocation ?? join(storeDir!, 'seen'), { onWarning: () => {} });
// The site is one host (127.0.0.1:PORT), and these crawls test resumption, not politeness: no delay
// between its pages (Crawlee's own default), and takes of as many of the host's requests as asked.
const manager = new SeenstoreRequestManager(store.scope('site', { capacityUrls: 100_000 }), {
  owner,
  leaseMs: 60_000,
  sameDomainDelaySecs: 0,
  perQueue: 1_000,
});
const crawler = new CheerioCrawler(
  {
    ...crawlerOptions(manager),
    maxConcurrency: Number(concurrencyText ?? 10),
    async requestHandler({ request, enqueueLinks }) {
      await enqueueLinks();
      writeSync(1, `fetched ${request.url}\n`);
    },
  },
  new Configuration({ persistStorage: false }),
);
await crawler.run([`${siteUrl}/`]);
await store.close();
writeSync(1, 'finished\n');
