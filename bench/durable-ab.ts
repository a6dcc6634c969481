/**
 * Durable addIfAbsent timed on one build of seenstore, for A/B runs of two commits interleaved
 * (docs/benchmarks.md): prints the mean milliseconds per batch after a warm-up.
 *
 *   node dist/bench/durable-ab.js PATH/TO/dist/src/index.js [BATCH_URLS] [BATCHES] [set]
 *
 * Run it alternately against two checkouts' builds; the URLs are the repository's lists (or the
 * tests' generated stand-ins), made distinct per round so every batch adds new URLs. With `set`
 * (issue 29's "durable addIfAbsent ÷ JS Set"), each batch also goes into a JS Set, and the line
 * gives the medians per batch of the add (wall and the process's CPU: what a loaded machine's sync
 * waits leave out) and of the Set, and the speed ratio (Set time ÷ durable time).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { allSharedUrls } from '../test/helpers/data.js';

const WARM_UP_BATCHES = 20;

const [index, batchText = '10000', batchesText = '60', against] = process.argv.slice(2);
if (index === undefined) {
  process.stderr.write('usage: durable-ab INDEX_JS [BATCH_URLS] [BATCHES] [set]\n');
  process.exit(2);
}
const { SeenStore } = (await import(pathToFileURL(resolve(index)).href)) as typeof import('../src/index.js');
const urls = allSharedUrls();
const batchUrls = Number(batchText);
const batches = Number(batchesText);
let next = 0;
const batch = (): string[] =>
  Array.from({ length: batchUrls }, () => `${urls[next % urls.length]}#${Math.floor(next++ / urls.length)}`);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dir = mkdtempSync(join(tmpdir(), 'seenstore-ab-'));
try {
  const store = await SeenStore.open(dir, { checkpointIntervalMs: 3_600_000 });
  const scope = store.scope('default', { capacityUrls: 1_000_000 });
  for (let i = 0; i < WARM_UP_BATCHES; i++) await scope.addIfAbsent(batch());
  if (against === 'set') {
    process.stdout.write(`${await againstSet(scope)}\n`);
  } else {
    const started = process.hrtime.bigint();
    for (let i = 0; i < batches; i++) await scope.addIfAbsent(batch());
    process.stdout.write(`${(Number(process.hrtime.bigint() - started) / 1e6 / batches).toFixed(4)}\n`);
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function againstSet(scope: { addIfAbsent(urls: readonly string[]): Promise<boolean[]> }): Promise<string> {
  const set = new Set<string>();
  const answers = new Array<boolean>(batchUrls);
  const durableMs: number[] = [];
  const durableCpuMs: number[] = [];
  const setMs: number[] = [];
  for (let i = 0; i < batches; i++) {
    const urlsOfBatch = batch();
    let started = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    await scope.addIfAbsent(urlsOfBatch);
    durableMs.push(Number(process.hrtime.bigint() - started) / 1e6);
    const used = process.cpuUsage(cpu);
    durableCpuMs.push((used.user + used.system) / 1e3);
    started = process.hrtime.bigint();
    for (let u = 0; u < urlsOfBatch.length; u++) {
      const url = urlsOfBatch[u]!;
      answers[u] = !set.has(url);
      set.add(url);
    }
    setMs.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  const [durable, durableCpu, inSet] = [median(durableMs), median(durableCpuMs), median(setMs)];
  return `durable ${durable.toFixed(3)} ms (CPU ${durableCpu.toFixed(3)} ms), Set ${inSet.toFixed(3)} ms per batch of ${batchUrls}; durable speed ÷ Set speed ${(inSet / durable).toFixed(2)}× (by CPU ${(inSet / durableCpu).toFixed(2)}×)`;
}
