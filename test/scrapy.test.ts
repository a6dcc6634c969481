import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { runKillable, type KillableRun } from './helpers/killable.js';
import { startServer } from './helpers/server.js';
import { sized } from './helpers/scale.js';
import { coverage, spawnSite, type SiteStats } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

const SYSTEM_PYTHON = '/usr/bin/python3';
const NEEDS_SCRAPY: string | false =
  spawnSync(SYSTEM_PYTHON, ['-c', 'import scrapy, redis, venv, setuptools']).status === 0
    ? false
    : 'needs Debian python3-scrapy, python3-redis, python3-venv and python3-setuptools (CI installs them)';
/** The site's pages: 600 under `npm run test:full` (test/helpers/scale.ts). */
const PAGES = sized(600, 300);
/** The site of the dupefilter test, which crawls it three times. */
const DUPEFILTER_PAGES = sized(300, 100);

/**
 * The integration installed as its README says: `pip install ./integrations/scrapy` into a venv
 * made with --system-site-packages (Debian's Scrapy and redis-py), offline. A copy of the folder
 * is installed, so that the build's leftovers stay out of the checkout; the spider runs from
 * outside the package's folder (Python puts a script's own folder on its path), so it imports the
 * installed package. Returns the venv's python and the spiders' paths.
 */
function installed(): Installed {
  install ??= installOnce();
  return install;
}

interface Installed {
  readonly python: string;
  /** frontier_spider.py: Scrapy on the frontier scheduler. */
  readonly spider: string;
  /** dupefilter_spider.py: Scrapy's own scheduler with seenstore's dupefilter. */
  readonly dupefilterSpider: string;
}

/** The one install every test uses: a venv and a pip install each time cost seconds of CPU. */
let install: Installed | undefined;
/** Where it goes: made at the file's top level, so that it outlives the test that installs first. */
const INSTALL_DIR = tempDir('seenstore-scrapy-venv-');

function installOnce(): Installed {
  const dir = INSTALL_DIR;
  const source = join(dir, 'scrapy');
  cpSync(join(ROOT, 'integrations', 'scrapy'), source, { recursive: true });
  execFileSync(SYSTEM_PYTHON, ['-m', 'venv', '--system-site-packages', join(dir, 'venv')]);
  const python = join(dir, 'venv', 'bin', 'python');
  execFileSync(python, ['-m', 'pip', 'install', '--quiet', '--no-index', '--no-build-isolation', '--no-deps', source], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const spider = join(dir, 'frontier_spider.py');
  cpSync(join(source, 'frontier_spider.py'), spider);
  const dupefilterSpider = join(dir, 'dupefilter_spider.py');
  cpSync(join(source, 'dupefilter_spider.py'), dupefilterSpider);
  rmSync(source, { recursive: true });
  return { python, spider, dupefilterSpider };
}

/** Runs the spider; kills it with SIGKILL once it has printed `killAfter` pages. */
function spider(
  { python, spider }: Installed,
  siteUrl: string,
  seenstoreUrl: string,
  killAfter = Infinity,
): Promise<KillableRun> {
  return runKillable(python, [spider, siteUrl, seenstoreUrl], 'fetched ', killAfter);
}

describe('Scrapy on seenstore: the frontier and the dupefilter (Debian Scrapy, redis-py, seenstore serve, a local site)', {
  skip: NEEDS_SCRAPY,
}, () => {
  test('pip install ./integrations/scrapy into a --system-site-packages venv works offline; the spider needs it installed', () => {
    const { python } = installed();
    const where = execFileSync(python, ['-c', 'import seenstore_scrapy; print(seenstore_scrapy.__file__)'], {
      encoding: 'utf8',
    }).trim();
    assert.match(where, /\/venv\/lib\/python3[.\d]*\/site-packages\/seenstore_scrapy\/__init__\.py$/);
    assert.notEqual(
      spawnSync(SYSTEM_PYTHON, ['-c', 'import seenstore_scrapy']).status,
      0,
      'not importable without the install',
    );
  });

  test('killed -9 mid-crawl and restarted: every page fetched, at most the in-flight pages twice', async () => {
    const python = installed();
    const site = await spawnSite({ pages: PAGES });
    const server = await startServer(join(tempDir(), 'store'));
    try {
      const url = `redis://127.0.0.1:${server.port}`;
      const first = await spider(python, site.url, url, PAGES / 3);
      assert.ok(!first.finished, 'the crawl finished before the kill');
      // In flight at the kill: pages the site served that the frontier had not been told are done
      // (downloading, or downloaded and waiting in Scrapy's scraper queue to be parsed).
      const servedAtKill = coverage(await site.stats()).pageFetches;
      const frontier = execFileSync('redis-cli', ['-p', String(server.port), 'SEEN.FRONTIER', 'site'], {
        encoding: 'utf8',
      }).split('\n');
      const doneAtKill = Number(frontier[frontier.indexOf('done') + 1]);
      const inFlight = servedAtKill - doneAtKill;
      const resumed = await spider(python, site.url, url);
      assert.ok(resumed.finished);
      const seen = coverage(await site.stats());
      assert.deepEqual(seen.missedPages, [], 'pages found before the kill were never fetched');
      // The pages in flight at the kill, plus the start page (Scrapy fetches start URLs even when seen).
      assert.ok(
        seen.duplicateFetches <= inFlight + 1,
        `${seen.duplicateFetches} pages fetched twice, ${inFlight} were in flight at the kill`,
      );
      process.stderr.write(
        `scrapy resume: ${seen.duplicateFetches} pages fetched twice; in flight at the kill: ${inFlight} (served ${servedAtKill}, done ${doneAtKill})\n`,
      );
    } finally {
      await server.stop();
      await site.stop();
    }
  });

  test('the dupefilter keeps one seen-set per spider: a second spider fetches every page too, a rerun only its start page', async () => {
    const { python, dupefilterSpider } = installed();
    const site = await spawnSite({ pages: DUPEFILTER_PAGES });
    const server = await startServer(join(tempDir(), 'store'));
    try {
      const url = `redis://127.0.0.1:${server.port}`;
      const crawl = (name: string): Promise<KillableRun> =>
        runKillable(python, [dupefilterSpider, name, site.url, url], 'fetched ');
      const first = await crawl('spider-a');
      assert.ok(first.finished);
      // The start URL is fetched without the dupefilter (dont_filter), so a link back to it is
      // fetched once more: every other page counts exactly one fetch per spider run.
      const fetchesBeyondStart = (stats: SiteStats): number[] => stats.pageFetches.slice(1);
      const afterFirst = await site.stats();
      assert.deepEqual(coverage(afterFirst).missedPages, [], 'spider A crawled the whole site');
      assert.deepEqual(
        fetchesBeyondStart(afterFirst).filter((count) => count !== 1),
        [],
        'spider A fetched every page once',
      );
      // Spider B has never seen the site: a seen-set shared with A (the old default scope
      // "scrapy") would let it fetch only its start page.
      const second = await crawl('spider-b');
      assert.ok(second.finished);
      assert.equal(second.counted, first.counted, 'spider B parsed as many responses as spider A');
      const afterSecond = await site.stats();
      assert.deepEqual(
        fetchesBeyondStart(afterSecond).filter((count) => count !== 2),
        [],
        'every page fetched once more, by spider B',
      );
      // Spider A again: its own seen-set holds every page; only the start URL is fetched.
      const rerun = await crawl('spider-a');
      assert.ok(rerun.finished);
      assert.equal(rerun.counted, 1, 'the rerun of spider A fetched only its start page');
      const afterRerun = await site.stats();
      assert.deepEqual(
        fetchesBeyondStart(afterRerun),
        fetchesBeyondStart(afterSecond),
        'the rerun fetched no page but the start page',
      );
      assert.equal(afterRerun.pageFetches[0], afterSecond.pageFetches[0]! + 1);
      const info = execFileSync('redis-cli', ['-p', String(server.port), 'INFO', 'scopes'], { encoding: 'utf8' });
      assert.deepEqual(
        [...info.matchAll(/^scope_([^:]+):/gm)].map((match) => match[1]).sort(),
        ['spider-a', 'spider-b'],
        'one scope per spider, named after it',
      );
    } finally {
      await server.stop();
      await site.stop();
    }
  });
});
