/**
 * The Scrapy baseline of issue 21: integrations/scrapy/site_spider.py (Debian's python3-scrapy,
 * run by /usr/bin/python3) over the synthetic site served from a process of its own.
 *
 * 1. In memory: Scrapy's default scheduler and RFPDupeFilter, one uninterrupted crawl, timed.
 * 2. Resume with Scrapy's own persistence (JOBDIR: pickled disk queues and requests.seen): the
 *    spider is killed with kill -9 after about KILL_AT page fetches and started again on the same
 *    JOBDIR; recorded are the resumed run's time, duplicate fetches and missed pages.
 *
 *   node dist/bench/scrapy-resume.js [--pages 3000] [--kill-at 1200] [--trials 1]
 *
 * Prints a JSON line per trial and writes them to bench/results/scrapy-resume.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { coverage, spawnSite, type SiteProcess } from '../test/helpers/site.js';
import { option, roundOrNull, runCrawler, type CrawlerCommand } from './crawl-run.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SPIDER = join(ROOT, 'integrations', 'scrapy', 'site_spider.py');
const PYTHON = '/usr/bin/python3';

function spider(site: SiteProcess, logFile: string, jobDir?: string): CrawlerCommand {
  return { command: PYTHON, args: [SPIDER, site.url, ...(jobDir === undefined ? [] : [jobDir])], logFile };
}

async function withSite<T>(pages: number, body: (site: SiteProcess) => Promise<T>): Promise<T> {
  const site = await spawnSite({ pages });
  try {
    return await body(site);
  } finally {
    await site.stop();
  }
}

async function trial(pages: number, killAt: number, work: string, index: number): Promise<Record<string, unknown>> {
  const inMemory = await withSite(pages, async (site) => {
    const run = await runCrawler(site, spider(site, join(work, `memory-${index}.log`)));
    return { run, end: coverage(await site.stats()) };
  });
  const resume = await withSite(pages, async (site) => {
    const jobDir = join(work, `job-${index}`);
    const log = join(work, `resume-${index}.log`);
    const first = await runCrawler(site, spider(site, log, jobDir), killAt);
    const atKill = coverage(await site.stats());
    const resumed = await runCrawler(site, spider(site, log, jobDir));
    return { first, atKill, resumed, end: coverage(await site.stats()) };
  });
  return {
    pages,
    inMemoryCrawlMs: Math.round(inMemory.run.exitedMs),
    inMemoryPageFetches: inMemory.end.pageFetches,
    inMemoryDuplicateFetches: inMemory.end.duplicateFetches,
    inMemoryMissedPages: inMemory.end.missedPages.length,
    jobDirKilledAfterMs: Math.round(resume.first.exitedMs),
    fetchesAtKill: resume.atKill.pageFetches,
    resumedFinished: resume.resumed.finished,
    resumedCrawlMs: Math.round(resume.resumed.exitedMs),
    resumedFirstFetchMs: roundOrNull(resume.resumed.firstFetchMs),
    resumedLastFetchMs: roundOrNull(resume.resumed.lastFetchMs),
    resumedMostFetchedMs: roundOrNull(resume.resumed.mostFetchedMs),
    resumedFetches: resume.end.pageFetches - resume.atKill.pageFetches,
    duplicateFetches: resume.end.duplicateFetches,
    missedPages: resume.end.missedPages.length,
  };
}

const pages = option('pages', 3_000);
const killAt = option('kill-at', 1_200);
const trials = option('trials', 1);
const work = mkdtempSync(join(tmpdir(), 'seenstore-scrapy-resume-'));
const results: Record<string, unknown>[] = [];
try {
  for (let i = 0; i < trials; i++) {
    const result = await trial(pages, killAt, work, i);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    results.push(result);
  }
} finally {
  if (process.argv.includes('--keep')) process.stderr.write(`kept ${work}\n`);
  else rmSync(work, { recursive: true, force: true });
}
mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench', 'results', 'scrapy-resume.json'),
  `${JSON.stringify({ node: process.version, results }, null, 2)}\n`,
);
