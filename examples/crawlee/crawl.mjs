// A resumable Crawlee crawl on seenstore (docs/crawlee.md):
//   node examples/crawlee/crawl.mjs https://example.org/ [STORE_DIR]
// Kill it (Ctrl-C, kill -9) and run it again: it resumes where it stopped. To crawl everything
// again later: `seenstore --store STORE_DIR --scope HOST epoch rotate`, then run it again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeenStore } from 'seenstore';
import { SeenstoreRequestManager, crawlerOptions } from 'seenstore/crawlee';

// Crawlee keeps its own storage (statistics, session pool) in ./storage by default; the crawl's
// state is all in the seenstore store, so Crawlee's goes to a temporary directory instead of
// littering the working directory, and is removed when the process exits (Ctrl-C included). Set
// CRAWLEE_STORAGE_DIR to keep it elsewhere.
if (process.env.CRAWLEE_STORAGE_DIR === undefined) {
  const storage = mkdtempSync(join(tmpdir(), 'crawlee-storage-'));
  process.env.CRAWLEE_STORAGE_DIR = storage;
  process.on('exit', () => rmSync(storage, { recursive: true, force: true }));
}
const { CheerioCrawler } = await import('crawlee');

const [start, storeDir = './crawl-store'] = process.argv.slice(2);
if (start === undefined) {
  process.stderr.write('usage: node crawl.mjs START_URL [STORE_DIR]\n');
  process.exit(2);
}
const store = await SeenStore.open(storeDir);
const scope = store.scope(new URL(start).hostname.replace(/[^A-Za-z0-9._-]/g, '_'));
// One request per second to the site, from every process crawling it (the frontier keeps the delay):
// polite to a site you do not run. SAME_DOMAIN_DELAY_SECS=0 for your own.
const sameDomainDelaySecs = Number(process.env.SAME_DOMAIN_DELAY_SECS ?? 1);
const manager = new SeenstoreRequestManager(scope, { owner: 'example-crawler', sameDomainDelaySecs });
const crawler = new CheerioCrawler({
  ...crawlerOptions(manager),
  maxConcurrency: 10,
  async requestHandler({ request, $, enqueueLinks }) {
    // The request's key (Crawlee's uniqueKey, its normalised URL) is what the store records: print
    // it, so that `cut -f1 | seenstore classify` asks about what was crawled (docs/crawlee.md).
    console.log(`${request.uniqueKey}\t${$('title').text().trim()}`);
    await enqueueLinks();
  },
});
await crawler.run([start]);
console.error(`frontier: ${JSON.stringify(await scope.frontier().stats())}`);
await store.close();
