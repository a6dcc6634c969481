/**
 * Crawl resume with Crawlee's own persisted request queue (the baseline of issue 21): a real
 * CheerioCrawler crawls the synthetic site (test/helpers/site.ts, served from a process of its own),
 * is killed with kill -9 after about KILL_AT page fetches, and is started again on the same local
 * storage (CRAWLEE_STORAGE_DIR, CRAWLEE_PURGE_ON_START=false). Recorded: the time of an
 * uninterrupted crawl, the time the resumed run takes to finish and to fetch its first page,
 * duplicate fetches and missed pages over both runs, and the bytes Crawlee's queue stores per URL.
 *
 *   node dist/bench/crawlee-resume.js [--manager crawlee|seenstore] [--pages 3000] [--kill-at 1200] [--concurrency 10] [--trials 1]
 *
 * Prints a JSON line per trial and writes them all to bench/results/crawlee-resume.json.
 * Not part of `npm test`: a resumed run can wait minutes for the dead process's request locks.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { coverage, spawnSite } from '../test/helpers/site.js';
import { option, roundOrNull, runCrawler, type CrawlerCommand, type RunResult } from './crawl-run.js';

const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench');

interface Options {
  /** `crawlee`: Crawlee's own persisted queue; `seenstore`: seenstore's frontier as the request manager. */
  readonly manager: string;
  readonly pages: number;
  readonly killAt: number;
  readonly concurrency: number;
  readonly trials: number;
}

/** The crawler process: Crawlee's defaults, its own request queue in CRAWLEE_STORAGE_DIR. */
async function crawlerMain(siteUrl: string, concurrency: number, manager: string): Promise<void> {
  const { CheerioCrawler } = await import('crawlee');
  // --manager seenstore: the request manager is seenstore's frontier (seenstore/crawlee), its store in the storage dir.
  let seenstore: { close(): Promise<void> } | undefined;
  let queueOptions = {};
  if (manager === 'seenstore') {
    const { SeenStore } = await import('../src/index.js');
    const { SeenstoreRequestManager, crawlerOptions } = await import('../src/crawlee/index.js');
    const store = await SeenStore.open(join(process.env.CRAWLEE_STORAGE_DIR!, 'seenstore'));
    seenstore = store;
    // Crawlee's own queue has no per-host delay: neither does the frontier here (the site is one host).
    queueOptions = crawlerOptions(
      new SeenstoreRequestManager(store.scope('site'), { owner: 'bench', sameDomainDelaySecs: 0, perQueue: 1_000 }),
    );
  }
  const crawler = new CheerioCrawler({
    ...queueOptions,
    maxConcurrency: concurrency,
    async requestHandler({ enqueueLinks }) {
      await enqueueLinks();
    },
  });
  await crawler.run([`${siteUrl}/`]);
  await seenstore?.close();
}

interface QueueBytes {
  readonly requests: number;
  /** Requests whose lock (a future `orderNo`, in ms since the epoch) had not expired when read. */
  readonly locked: number;
  readonly maxLockRemainingMs: number;
  readonly bytes: number;
  /** Bytes the file system allocates (st_blocks × 512): a small file takes a whole block. */
  readonly diskBytes: number;
}

/** Crawlee's persisted request queue: one JSON file per request under request_queues/default. */
function queueBytes(storageDir: string): QueueBytes {
  const dir = join(storageDir, 'request_queues', 'default');
  // With --manager seenstore, Crawlee keeps no queue of its own.
  if (!existsSync(dir)) return { requests: 0, locked: 0, maxLockRemainingMs: 0, bytes: 0, diskBytes: 0 };
  let requests = 0;
  let bytes = 0;
  let diskBytes = 0;
  let locked = 0;
  let maxLockRemainingMs = 0;
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    const stat = statSync(join(dir, name));
    if (!stat.isFile()) continue;
    bytes += stat.size;
    diskBytes += stat.blocks * 512;
    if (!name.endsWith('.json') || name.startsWith('__')) continue;
    requests++;
    const { orderNo } = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { orderNo: number | null };
    if (orderNo !== null && Math.abs(orderNo) > now) {
      locked++;
      maxLockRemainingMs = Math.max(maxLockRemainingMs, Math.abs(orderNo) - now);
    }
  }
  return { requests, locked, maxLockRemainingMs, bytes, diskBytes };
}

/** This file run as the crawler, with its own request queue in `storageDir`. */
function crawleeCommand(siteUrl: string, storageDir: string, options: Options, logFile: string): CrawlerCommand {
  return {
    command: process.execPath,
    args: [fileURLToPath(import.meta.url), '--crawler', siteUrl, String(options.concurrency), options.manager],
    env: { CRAWLEE_STORAGE_DIR: storageDir, CRAWLEE_PURGE_ON_START: 'false', CRAWLEE_LOG_LEVEL: 'WARNING' },
    logFile,
  };
}

async function trial(options: Options, work: string, index: number): Promise<Record<string, unknown>> {
  const fullSite = await spawnSite({ pages: options.pages });
  let full: RunResult;
  let fullQueue: QueueBytes;
  try {
    const storage = join(work, `full-${index}`);
    full = await runCrawler(fullSite, crawleeCommand(fullSite.url, storage, options, join(work, `full-${index}.log`)));
    fullQueue = queueBytes(storage);
    const fullCoverage = coverage(await fullSite.stats());
    if (fullCoverage.missedPages.length > 0)
      throw new Error(`the uninterrupted crawl missed ${fullCoverage.missedPages.length} pages`);
  } finally {
    await fullSite.stop();
  }
  const site = await spawnSite({ pages: options.pages });
  try {
    const storage = join(work, `resume-${index}`);
    const log = join(work, `resume-${index}.log`);
    const first = await runCrawler(site, crawleeCommand(site.url, storage, options, log), options.killAt);
    const atKill = coverage(await site.stats());
    const queueAtKill = queueBytes(storage);
    const resumed = await runCrawler(site, crawleeCommand(site.url, storage, options, log));
    const end = coverage(await site.stats());
    const queueAtEnd = queueBytes(storage);
    return {
      manager: options.manager,
      pages: options.pages,
      concurrency: options.concurrency,
      fullCrawlMs: Math.round(full.exitedMs),
      fullCrawlFetches: full.fetchesSeen,
      fullQueueBytesPerUrl: Math.round(fullQueue.bytes / fullQueue.requests),
      fullQueueDiskBytesPerUrl: Math.round(fullQueue.diskBytes / fullQueue.requests),
      killedAfterMs: Math.round(first.exitedMs),
      fetchesAtKill: atKill.pageFetches,
      distinctPagesAtKill: options.pages - atKill.missedPages.length,
      requestsInQueueAtKill: queueAtKill.requests,
      lockedRequestsAtKill: queueAtKill.locked,
      maxLockRemainingSecsAtKill: Math.round(queueAtKill.maxLockRemainingMs / 1000),
      resumedFinished: resumed.finished,
      resumedCrawlMs: Math.round(resumed.exitedMs),
      resumedFirstFetchMs: roundOrNull(resumed.firstFetchMs),
      resumedLastFetchMs: roundOrNull(resumed.lastFetchMs),
      resumedMostFetchedMs: roundOrNull(resumed.mostFetchedMs),
      resumedFetches: end.pageFetches - atKill.pageFetches,
      totalPageFetches: end.pageFetches,
      duplicateFetches: end.duplicateFetches,
      missedPages: end.missedPages.length,
      notFoundFetches: end.notFound,
      queueRequests: queueAtEnd.requests,
      queueBytesPerUrl: Math.round(queueAtEnd.bytes / queueAtEnd.requests),
      queueDiskBytesPerUrl: Math.round(queueAtEnd.diskBytes / queueAtEnd.requests),
    };
  } finally {
    await site.stop();
  }
}

async function main(): Promise<void> {
  const managerAt = process.argv.indexOf('--manager');
  const options: Options = {
    manager: managerAt >= 0 ? process.argv[managerAt + 1]! : 'crawlee',
    pages: option('pages', 3_000),
    killAt: option('kill-at', 1_200),
    concurrency: option('concurrency', 10),
    trials: option('trials', 1),
  };
  const work = mkdtempSync(join(tmpdir(), 'seenstore-crawlee-resume-'));
  const results: Record<string, unknown>[] = [];
  try {
    for (let i = 0; i < options.trials; i++) {
      const result = await trial(options, work, i);
      process.stdout.write(`${JSON.stringify(result)}\n`);
      results.push(result);
    }
  } finally {
    if (!process.argv.includes('--keep')) rmSync(work, { recursive: true, force: true });
    else process.stderr.write(`kept ${work}\n`);
  }
  mkdirSync(join(BENCH_DIR, 'results'), { recursive: true });
  writeFileSync(
    join(BENCH_DIR, 'results', `crawlee-resume-${options.manager}.json`),
    `${JSON.stringify({ node: process.version, results }, null, 2)}\n`,
  );
}

const crawlerAt = process.argv.indexOf('--crawler');
if (crawlerAt >= 0)
  await crawlerMain(
    process.argv[crawlerAt + 1]!,
    Number(process.argv[crawlerAt + 2]),
    process.argv[crawlerAt + 3] ?? 'crawlee',
  );
else await main();
