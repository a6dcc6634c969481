/**
 * Durable addIfAbsent against a JS Set on the same batches, one build of seenstore (issue 29's
 * "durable addIfAbsent ÷ JS Set"): prints the median milliseconds per batch of each and the speed
 * ratio (Set time ÷ durable time). Run it alternately against two checkouts' builds.
 *
 *   node dist/bench/durable-set-ab.js PATH/TO/dist/src/index.js [BATCH_URLS] [BATCHES]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { allSharedUrls } from '../test/helpers/data.js';

const WARM_UP_BATCHES = 20;

const [index, batchText = '10000', batchesText = '60'] = process.argv.slice(2);
if (index === undefined) {
  process.stderr.write('usage: durable-set-ab INDEX_JS [BATCH_URLS] [BATCHES]\n');
  process.exit(2);
}
const { SeenStore } = (await import(pathToFileURL(resolve(index)).href)) as typeof import('../src/index.js');
const urls = allSharedUrls();
const batchUrls = Number(batchText);
const batches = Number(batchesText);
let next = 0;
// Distinct per round, so every batch adds new URLs (as durable-ab.ts).
const batch = (): string[] => Array.from({ length: batchUrls }, () => `${urls[next % urls.length]}#${Math.floor(next++ / urls.length)}`);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dir = mkdtempSync(join(tmpdir(), 'seenstore-ab-'));
try {
  const store = await SeenStore.open(dir, { checkpointIntervalMs: 3_600_000 });
  const scope = store.scope('default', { capacityUrls: 1_000_000 });
  const set = new Set<string>();
  const answers = new Array<boolean>(batchUrls);
  const durableMs: number[] = [];
  // CPU of the process (every thread) during the add: what a loaded machine's fsync waits leave out.
  const durableCpuMs: number[] = [];
  const setMs: number[] = [];
  for (let i = 0; i < WARM_UP_BATCHES + batches; i++) {
    const urlsOfBatch = batch();
    let started = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    await scope.addIfAbsent(urlsOfBatch);
    const durable = Number(process.hrtime.bigint() - started) / 1e6;
    const used = process.cpuUsage(cpu);
    started = process.hrtime.bigint();
    for (let u = 0; u < urlsOfBatch.length; u++) {
      const url = urlsOfBatch[u]!;
      answers[u] = !set.has(url);
      set.add(url);
    }
    const inSet = Number(process.hrtime.bigint() - started) / 1e6;
    if (i >= WARM_UP_BATCHES) {
      durableMs.push(durable);
      durableCpuMs.push((used.user + used.system) / 1e3);
      setMs.push(inSet);
    }
  }
  process.stdout.write(`durable ${median(durableMs).toFixed(3)} ms (CPU ${median(durableCpuMs).toFixed(3)} ms), Set ${median(setMs).toFixed(3)} ms per batch of ${batchUrls}; durable speed ÷ Set speed ${(median(setMs) / median(durableMs)).toFixed(2)}× (by CPU ${(median(setMs) / median(durableCpuMs)).toFixed(2)}×)\n`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
