/**
 * Durable addIfAbsent timed on one build of seenstore, for A/B runs of two commits interleaved
 * (docs/benchmarks.md): prints the mean milliseconds per batch after a warm-up.
 *
 *   node dist/bench/durable-ab.js PATH/TO/dist/src/index.js [BATCH_URLS] [BATCHES]
 *
 * Run it alternately against two checkouts' builds; the URLs are the repository's lists (or the
 * tests' generated stand-ins), made distinct per round so every batch adds new URLs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { allSharedUrls } from '../test/helpers/data.js';

const WARM_UP_BATCHES = 20;

const [index, batchText = '10000', batchesText = '60'] = process.argv.slice(2);
if (index === undefined) {
  process.stderr.write('usage: durable-ab INDEX_JS [BATCH_URLS] [BATCHES]\n');
  process.exit(2);
}
const { SeenStore } = (await import(pathToFileURL(resolve(index)).href)) as typeof import('../src/index.js');
const urls = allSharedUrls();
const batchUrls = Number(batchText);
const batches = Number(batchesText);
let next = 0;
const batch = (): string[] => Array.from({ length: batchUrls }, () => `${urls[next % urls.length]}#${Math.floor(next++ / urls.length)}`);

const dir = mkdtempSync(join(tmpdir(), 'seenstore-ab-'));
try {
  const store = await SeenStore.open(dir, { checkpointIntervalMs: 3_600_000 });
  const scope = store.scope('default', { capacityUrls: 1_000_000 });
  for (let i = 0; i < WARM_UP_BATCHES; i++) await scope.addIfAbsent(batch());
  const started = process.hrtime.bigint();
  for (let i = 0; i < batches; i++) await scope.addIfAbsent(batch());
  process.stdout.write(`${(Number(process.hrtime.bigint() - started) / 1e6 / batches).toFixed(4)}\n`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
