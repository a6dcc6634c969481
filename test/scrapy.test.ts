import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { runKillable, type KillableRun } from './helpers/killable.js';
import { startServer } from './helpers/server.js';
import { sized } from './helpers/scale.js';
import { coverage, spawnSite } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

const SYSTEM_PYTHON = '/usr/bin/python3';
const NEEDS_SCRAPY: string | false =
  spawnSync(SYSTEM_PYTHON, ['-c', 'import scrapy, redis, venv, setuptools']).status === 0
    ? false
    : 'needs Debian python3-scrapy, python3-redis, python3-venv and python3-setuptools (CI installs them)';
/** The site's pages: 600 under `npm run test:full` (test/helpers/scale.ts). */
const PAGES = sized(600, 300);

/**
 * The integration installed as its README says: `pip install ./integrations/scrapy` into a venv
 * made with --system-site-packages (Debian's Scrapy and redis-py), offline. A copy of the folder
 * is installed, so that the build's leftovers stay out of the checkout; the spider runs from
 * outside the package's folder (Python puts a script's own folder on its path), so it imports the
 * installed package. Returns the venv's python and the spider's path.
 */
function installed(): { python: string; spider: string } {
  install ??= installOnce();
  return install;
}

/** The one install both tests use: a venv and a pip install each time cost seconds of CPU. */
let install: { python: string; spider: string } | undefined;
/** Where it goes: made at the file's top level, so that it outlives the test that installs first. */
const INSTALL_DIR = tempDir('seenstore-scrapy-venv-');

function installOnce(): { python: string; spider: string } {
  const dir = INSTALL_DIR;
  const source = join(dir, 'scrapy');
  cpSync(join(ROOT, 'integrations', 'scrapy'), source, { recursive: true });
  execFileSync(SYSTEM_PYTHON, ['-m', 'venv', '--system-site-packages', join(dir, 'venv')]);
  const python = join(dir, 'venv', 'bin', 'python');
  execFileSync(python, ['-m', 'pip', 'install', '--quiet', '--no-index', '--no-build-isolation', '--no-deps', source], { stdio: ['ignore', 'pipe', 'pipe'] });
  const spider = join(dir, 'frontier_spider.py');
  cpSync(join(source, 'frontier_spider.py'), spider);
  rmSync(source, { recursive: true });
  return { python, spider };
}

/** Runs the spider; kills it with SIGKILL once it has printed `killAfter` pages. */
function spider({ python, spider }: { python: string; spider: string }, siteUrl: string, seenstoreUrl: string, killAfter = Infinity): Promise<KillableRun> {
  return runKillable(python, [spider, siteUrl, seenstoreUrl], 'fetched ', killAfter);
}

describe('Scrapy on the seenstore frontier (Debian Scrapy, redis-py, seenstore serve, a local site)', { skip: NEEDS_SCRAPY }, () => {
  test('pip install ./integrations/scrapy into a --system-site-packages venv works offline; the spider needs it installed', () => {
    const { python } = installed();
    const where = execFileSync(python, ['-c', 'import seenstore_scrapy; print(seenstore_scrapy.__file__)'], { encoding: 'utf8' }).trim();
    assert.match(where, /\/venv\/lib\/python3[.\d]*\/site-packages\/seenstore_scrapy\/__init__\.py$/);
    assert.notEqual(spawnSync(SYSTEM_PYTHON, ['-c', 'import seenstore_scrapy']).status, 0, 'not importable without the install');
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
      const frontier = execFileSync('redis-cli', ['-p', String(server.port), 'SEEN.FRONTIER', 'site'], { encoding: 'utf8' }).split('\n');
      const doneAtKill = Number(frontier[frontier.indexOf('done') + 1]);
      const inFlight = servedAtKill - doneAtKill;
      const resumed = await spider(python, site.url, url);
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
