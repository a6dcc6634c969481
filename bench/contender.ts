/**
 * One contender of `npm run bench`, in its own fresh process:
 *   node dist/bench/contender.js NAME DATASET_FILE
 * Inserts the dataset's insert share (add-if-absent, batches of 10k where the contender batches),
 * then queries the held-out share (never inserted: every positive is a false positive), and prints
 * one JSON line of figures. Timings cover only the adds and the queries, not loading the file.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open as openLmdb } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { BloomFilter } from '../src/filters/bloom.js';
import { DEFAULT_GROWTH, planSlice } from '../src/filters/scalable.js';
import { sizeForFpr } from '../src/filters/sizing.js';
import { freshSeedHex, seedFromHex } from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR, readUrls, splitUrls } from './data.js';

/** A peer library from bench/node_modules (bench/package.json), not from seenstore's dependencies. */
async function peer<T>(name: string): Promise<T> {
  const resolved = createRequire(join(BENCH_DIR, 'package.json')).resolve(name);
  const module = (await import(pathToFileURL(resolved).href)) as { default?: unknown };
  // CommonJS peers: their exports object is the default export (named ones are not always detected).
  return (typeof module.default === 'object' && module.default !== null ? module.default : module) as T;
}

export const BATCH = 10_000;
export const FPR = 0.01;

export interface Figures {
  readonly contender: string;
  readonly addsPerSec: number;
  readonly queriesPerSec: number;
  /** Held-out URLs claimed present / held-out URLs. */
  readonly fpr: number;
  readonly bitsPerUrl: number;
  readonly peakRssMB: number;
  readonly bytesOnDisk: number;
  /** Inserted URLs reported new (a check that the contender did the work). */
  readonly added: number;
}

type Run = (insert: string[], query: string[]) => Promise<Omit<Figures, 'contender' | 'peakRssMB'>>;

/**
 * Peak RSS of this process in MB: VmHWM, which starts fresh with the process image. (getrusage's
 * maxrss would not: Linux keeps it across fork and exec, so it would report the parent's peak.)
 */
function peakRss(): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return match === null ? process.resourceUsage().maxRSS / 1024 : Number(match[1]) / 1024;
}

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function dirBytes(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
}

/**
 * The per-URL contenders (no batch API): add-if-absent over `insert` with `test` then `add`, then
 * `test` over the held-out `query`; the figures all but bits per URL and disk.
 */
function perUrl(
  insert: readonly string[],
  query: readonly string[],
  test: (url: string) => boolean,
  add: (url: string) => void,
) {
  let added = 0;
  let start = process.hrtime.bigint();
  for (const url of insert) {
    if (!test(url)) {
      add(url);
      added++;
    }
  }
  const addSeconds = seconds(start);
  start = process.hrtime.bigint();
  let positives = 0;
  for (const url of query) if (test(url)) positives++;
  const querySeconds = seconds(start);
  return {
    addsPerSec: insert.length / addSeconds,
    queriesPerSec: query.length / querySeconds,
    fpr: positives / query.length,
    added,
  };
}

interface DurableOptions {
  readonly threads?: number;
  readonly strategy?: string;
}

/** The product: durable addIfAbsent in batches (journal committed and synced per batch). */
async function durable(
  insert: readonly string[],
  query: readonly string[],
  options: DurableOptions = {},
): Promise<Omit<Figures, 'contender' | 'peakRssMB'>> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-seenstore-'));
  const store = await SeenStore.open(dir, { threads: options.threads ?? 1 });
  const scope = store.scope('bench', {
    capacityUrls: insert.length,
    fprTarget: FPR,
    strategy: options.strategy ?? 'classic',
  });
  let added = 0;
  let start = process.hrtime.bigint();
  for (let i = 0; i < insert.length; i += BATCH) {
    for (const isNew of await scope.addIfAbsent(insert.slice(i, i + BATCH))) if (isNew) added++;
  }
  const addSeconds = seconds(start);
  start = process.hrtime.bigint();
  let positives = 0;
  for (let i = 0; i < query.length; i += BATCH)
    for (const seen of await scope.has(query.slice(i, i + BATCH))) if (seen) positives++;
  const querySeconds = seconds(start);
  const bits = (await scope.epoch(1)).sliceDetails.reduce((sum, slice) => sum + slice.mBits * slice.filters, 0);
  await store.close();
  const bytesOnDisk = dirBytes(dir);
  rmSync(dir, { recursive: true, force: true });
  return {
    addsPerSec: insert.length / addSeconds,
    queriesPerSec: query.length / querySeconds,
    fpr: positives / query.length,
    bitsPerUrl: bits / insert.length,
    bytesOnDisk,
    added,
  };
}

const contenders: Record<string, Run> = {
  'seenstore-durable': (insert, query) => durable(insert, query),
  /** The same with a bit thread (SeenStoreOptions.threads 2): bits set while the batch is hashed. */
  'seenstore-durable-2-threads': (insert, query) => durable(insert, query, { threads: 2 }),
  /** The same, one awaited at a time, with the blocked layout (one cache line per URL). */
  'seenstore-durable-blocked': (insert, query) => durable(insert, query, { strategy: 'blocked' }),

  /** The reference: seenstore's own filter and hash, same geometry as the store's, in memory only. */
  async 'seenstore-memory'(insert, query) {
    const hash = await XxHash.load();
    const plan = planSlice(0, insert.length, FPR, DEFAULT_GROWTH);
    const filter = new BloomFilter({ layout: 'classic', mBits: plan.mBits, k: plan.k });
    const seeds = [seedFromHex(freshSeedHex())];
    const words = new Uint32Array(2 * BATCH);
    let added = 0;
    let start = process.hrtime.bigint();
    for (let i = 0; i < insert.length; i += BATCH) {
      const batch = insert.slice(i, i + BATCH);
      hash.hashKeys(batch, seeds, words, 2, 0);
      for (let j = 0; j < batch.length; j++) if (filter.add(words[2 * j + 1]!, words[2 * j]!)) added++;
    }
    const addSeconds = seconds(start);
    start = process.hrtime.bigint();
    let positives = 0;
    for (let i = 0; i < query.length; i += BATCH) {
      const batch = query.slice(i, i + BATCH);
      hash.hashKeys(batch, seeds, words, 2, 0);
      for (let j = 0; j < batch.length; j++) if (filter.has(words[2 * j + 1]!, words[2 * j]!)) positives++;
    }
    const querySeconds = seconds(start);
    return {
      addsPerSec: insert.length / addSeconds,
      queriesPerSec: query.length / querySeconds,
      fpr: positives / query.length,
      bitsPerUrl: plan.mBits / insert.length,
      bytesOnDisk: 0,
      added,
    };
  },

  async 'js-set'(insert, query) {
    const set = new Set<string>();
    const figures = perUrl(
      insert,
      query,
      (url) => set.has(url),
      (url) => set.add(url),
    );
    const bytes = insert.reduce((sum, url) => sum + url.length, 0);
    return { ...figures, bitsPerUrl: (8 * bytes) / insert.length, bytesOnDisk: 0 };
  },

  async 'bloom-filters'(insert, query) {
    const { BloomFilter: Peer } = await peer<typeof import('bloom-filters')>('bloom-filters');
    const filter = Peer.create(insert.length, FPR);
    const figures = perUrl(
      insert,
      query,
      (url) => filter.has(url),
      (url) => filter.add(url),
    );
    return { ...figures, bitsPerUrl: filter.size / insert.length, bytesOnDisk: 0 };
  },

  async bloomfilter(insert, query) {
    const { BloomFilter: Peer } = await peer<typeof import('bloomfilter')>('bloomfilter');
    const { mBits, k } = sizeForFpr(insert.length, FPR);
    const filter = new Peer(mBits, k);
    const figures = perUrl(
      insert,
      query,
      (url) => filter.test(url),
      (url) => filter.add(url),
    );
    return { ...figures, bitsPerUrl: mBits / insert.length, bytesOnDisk: 0 };
  },

  /** An exact set on disk: one LMDB key per URL, put-if-absent in synced transactions of 10k. */
  async 'lmdb-exact'(insert, query) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-lmdb-'));
    const db = openLmdb<boolean, string>({ path: dir, mapSize: 16 * 2 ** 30 });
    // LMDB keys are at most ~1.9 KB: longer URLs keep their first 1,800 characters and their length.
    const key = (url: string): string => (url.length <= 1800 ? url : `${url.slice(0, 1800)}#${url.length}`);
    let added = 0;
    let start = process.hrtime.bigint();
    for (let i = 0; i < insert.length; i += BATCH) {
      const batch = insert.slice(i, i + BATCH);
      db.transactionSync(() => {
        for (const url of batch) {
          if (db.get(key(url)) === undefined) {
            db.putSync(key(url), true);
            added++;
          }
        }
      });
    }
    const addSeconds = seconds(start);
    start = process.hrtime.bigint();
    let positives = 0;
    for (const url of query) if (db.get(key(url)) !== undefined) positives++;
    const querySeconds = seconds(start);
    await db.close();
    const bytesOnDisk = dirBytes(dir);
    rmSync(dir, { recursive: true, force: true });
    return {
      addsPerSec: insert.length / addSeconds,
      queriesPerSec: query.length / querySeconds,
      fpr: positives / query.length,
      bitsPerUrl: (8 * bytesOnDisk) / insert.length,
      bytesOnDisk,
      added,
    };
  },
};

export const CONTENDERS = Object.keys(contenders);

/** Synthetic crawl-like URLs for the scale runs: 1,000 hosts, deep paths, query strings. */
export function syntheticUrl(i: number): string {
  return `https://host${i % 1000}.example/section/${(i * 7) % 9973}/item-${i}?ref=${(i * 7919) % 100_000}`;
}

/**
 * Scale runs on a store directory given by the orchestrator:
 *   scale-build DIR CAPACITY URLS      adds URLS synthetic URLs to a CAPACITY store, closes (checkpointed)
 *   journal-build DIR CAPACITY URLS    the same, but exits without a checkpoint: the adds stay in the journal
 *   open-first-query DIR               times open + the first query, reports RSS after it
 */
async function scale(mode: string, dir: string, capacity: number, count: number): Promise<void> {
  if (mode === 'scale-build' || mode === 'journal-build') {
    const store = await SeenStore.open(dir, { checkpointJournalBytes: 2 ** 50, checkpointIntervalMs: 2 ** 40 });
    const scope = store.scope('scale', { capacityUrls: capacity, fprTarget: FPR });
    const batch: string[] = [];
    for (let i = 0; i < count; i++) {
      batch.push(syntheticUrl(i));
      if (batch.length === 100_000 || i === count - 1) {
        await scope.add(batch);
        batch.length = 0;
      }
    }
    if (mode === 'journal-build') process.exit(0);
    await store.close();
    process.stdout.write(`${JSON.stringify({ built: count, bytesOnDisk: dirBytes(dir) })}\n`);
    return;
  }
  const start = process.hrtime.bigint();
  const store = await SeenStore.open(dir);
  const [seen] = await store.scope('scale').has([syntheticUrl(0)]);
  const openSeconds = seconds(start);
  const rssMB = process.memoryUsage().rss / 2 ** 20;
  const filterBytes = (await store.scope('scale').epoch(1)).sliceDetails.reduce(
    (sum, slice) => sum + (slice.mBits / 8) * slice.filters,
    0,
  );
  const journalRecords = (await store.scope('scale').epoch(1)).journalRecords;
  process.stdout.write(
    `${JSON.stringify({ openSeconds, seen, filterMB: filterBytes / 2 ** 20, rssMB, peakRssMB: peakRss(), journalRecords })}\n`,
  );
  process.exit(0);
}

async function main(): Promise<void> {
  const [name, file] = process.argv.slice(2);
  if (name !== undefined && ['scale-build', 'journal-build', 'open-first-query'].includes(name)) {
    await scale(name, file!, Number(process.argv[4]), Number(process.argv[5]));
    return;
  }
  const run = contenders[name ?? ''];
  if (run === undefined || file === undefined)
    throw new Error(`usage: contender.js (${CONTENDERS.join('|')}) DATASET_FILE`);
  const { insert, query } = splitUrls(readUrls(file));
  const figures = await run(insert, query);
  const peakRssMB = peakRss();
  process.stdout.write(`${JSON.stringify({ contender: name, ...figures, peakRssMB })}\n`);
}

if (process.argv[1]?.endsWith('contender.js')) await main();
