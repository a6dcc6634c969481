/**
 * One taker of the politeness crawl (test/helpers/polite-site.ts) in a process of its own:
 *   node polite-taker-child.js LOCATION SCOPE OWNER BATCH
 * Crawls until the frontier is empty, then prints "fetched N" and "finished".
 */
import { writeSync } from 'node:fs';
import { SeenStore } from '../../src/index.js';
import { crawlTaker } from './polite-site.js';

const [location, scope, owner, batch] = process.argv.slice(2);
const store = await SeenStore.open(location!);
try {
  writeSync(1, `fetched ${await crawlTaker(store, scope!, owner!, Number(batch))}\n`);
} finally {
  await store.close();
}
writeSync(1, 'finished\n');
