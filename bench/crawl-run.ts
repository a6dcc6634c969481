/**
 * One crawler process against the synthetic site (test/helpers/site.ts), for the resume benches:
 * run until it exits, or kill it with SIGKILL once the site has served a number of pages.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { coverage, type SiteProcess } from '../test/helpers/site.js';

const POLL_MS = 20;
/** A run that has not finished by then is killed and reported as unfinished. */
const RUN_LIMIT_MS = 20 * 60_000;

export interface CrawlerCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** The crawler's stdout and stderr are appended here. */
  readonly logFile: string;
}

export interface RunResult {
  readonly exitedMs: number;
  /** Milliseconds from the start until the site served this run's first page. */
  readonly firstFetchMs: number | null;
  /** Milliseconds from the start until the site served this run's last page (the rest is waiting). */
  readonly lastFetchMs: number | null;
  /** Milliseconds from the start until the site had served 99 % of this run's pages. */
  readonly mostFetchedMs: number | null;
  /** False when the run was killed (at `killAtFetches` or after the time limit). */
  readonly finished: boolean;
  /** Pages the site has served in all, this run and earlier ones. */
  readonly fetchesSeen: number;
}

/**
 * Runs the crawler until it exits, or kills it once the site has served `killAtFetches` pages in all
 * (earlier runs count). A run that exits non-zero on its own is an error.
 */
export async function runCrawler(
  site: SiteProcess,
  crawler: CrawlerCommand,
  killAtFetches?: number,
): Promise<RunResult> {
  const before = coverage(await site.stats()).pageFetches;
  const log = openSync(crawler.logFile, 'a');
  const started = performance.now();
  const child = spawn(crawler.command, crawler.args, {
    env: { ...process.env, ...crawler.env },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  let exited = false;
  const exit = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      exited = true;
      done(code);
    }),
  );
  let firstFetchMs: number | null = null;
  let lastFetchMs: number | null = null;
  let fetchesSeen = before;
  let killed = false;
  const samples: { ms: number; fetches: number }[] = [];
  while (!exited) {
    await new Promise((done) => setTimeout(done, POLL_MS));
    const fetchesNow = coverage(await site.stats()).pageFetches;
    if (fetchesNow > fetchesSeen) {
      lastFetchMs = performance.now() - started;
      firstFetchMs ??= lastFetchMs;
    }
    fetchesSeen = fetchesNow;
    samples.push({ ms: performance.now() - started, fetches: fetchesNow - before });
    const overTime = performance.now() - started > RUN_LIMIT_MS;
    if (!killed && !exited && ((killAtFetches !== undefined && fetchesSeen >= killAtFetches) || overTime)) {
      process.kill(child.pid!, 'SIGKILL');
      killed = true;
    }
  }
  const code = await exit;
  const exitedMs = performance.now() - started;
  const fetchesAtExit = coverage(await site.stats()).pageFetches;
  if (fetchesAtExit > fetchesSeen) {
    lastFetchMs = exitedMs;
    firstFetchMs ??= exitedMs;
  }
  fetchesSeen = fetchesAtExit;
  if (!killed && code !== 0) throw new Error(`the crawler exited with ${code}; see ${crawler.logFile}`);
  samples.push({ ms: exitedMs, fetches: fetchesSeen - before });
  const mostFetchedMs =
    samples.find(({ fetches }) => fetches > 0 && fetches >= 0.99 * (fetchesSeen - before))?.ms ?? null;
  return { exitedMs, firstFetchMs, lastFetchMs, mostFetchedMs, finished: !killed, fetchesSeen };
}

export function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

export function roundOrNull(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms);
}
