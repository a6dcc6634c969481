import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { runKillable, type KillableRun } from './helpers/killable.js';
import { startServer } from './helpers/server.js';
import { coverage, spawnSite } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

const PYTHON = '/usr/bin/python3';
const SPIDER = join(ROOT, 'integrations', 'scrapy', 'frontier_spider.py');
const NEEDS_SCRAPY: string | false =
  spawnSync(PYTHON, ['-c', 'import scrapy, redis']).status === 0 ? false : 'needs Debian python3-scrapy and python3-redis (CI installs them)';
const PAGES = 600;

/** Runs the spider; kills it with SIGKILL once it has printed `killAfter` pages. */
function spider(siteUrl: string, seenstoreUrl: string, killAfter = Infinity): Promise<KillableRun> {
  return runKillable(PYTHON, [SPIDER, siteUrl, seenstoreUrl], 'fetched ', killAfter);
}

describe('Scrapy on the seenstore frontier (Debian Scrapy, redis-py, seenstore serve, a local site)', { skip: NEEDS_SCRAPY }, () => {
  test('killed -9 mid-crawl and restarted: every page fetched, at most the in-flight pages twice', async () => {
    const site = await spawnSite({ pages: PAGES });
    const server = await startServer(join(tempDir(), 'store'));
    try {
      const url = `redis://127.0.0.1:${server.port}`;
      const first = await spider(site.url, url, 200);
      assert.ok(!first.finished, 'the crawl finished before the kill');
      // In flight at the kill: pages the site served that the frontier had not been told are done
      // (downloading, or downloaded and waiting in Scrapy's scraper queue to be parsed).
      const servedAtKill = coverage(await site.stats()).pageFetches;
      const frontier = execFileSync('redis-cli', ['-p', String(server.port), 'SEEN.FRONTIER', 'site'], { encoding: 'utf8' }).split('\n');
      const doneAtKill = Number(frontier[frontier.indexOf('done') + 1]);
      const inFlight = servedAtKill - doneAtKill;
      const resumed = await spider(site.url, url);
      assert.ok(resumed.finished);
      const seen = coverage(await site.stats());
      assert.deepEqual(seen.missedPages, [], 'pages found before the kill were never fetched');
      // The pages in flight at the kill, plus the start page (Scrapy fetches start URLs even when seen).
      assert.ok(seen.duplicateFetches <= inFlight + 1, `${seen.duplicateFetches} pages fetched twice, ${inFlight} were in flight at the kill`);
      process.stderr.write(`scrapy resume: ${seen.duplicateFetches} pages fetched twice; in flight at the kill: ${inFlight} (served ${servedAtKill}, done ${doneAtKill})\n`);
    } finally {
      await server.stop();
      await site.stop();
    }
  });
});
