import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { runKillable, type KillableRun } from './helpers/killable.js';
import { redisMissing, startRedisCluster } from './helpers/redis-cluster.js';
import { sized } from './helpers/scale.js';
import { coverage, spawnSite } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

const CHILD = join(ROOT, 'dist', 'test', 'helpers', 'crawlee-child.js');
/** The site's pages: 600 under `npm run test:full` (test/helpers/scale.ts). */
const PAGES = sized(600, 300);
const CONCURRENCY = 8;
/** Requests the manager takes ahead of the crawler (its default). */
const PREFETCH = 5;

/** Runs the Crawlee child; kills it with SIGKILL once it has printed `killAfter` fetches. */
function crawl(store: string, siteUrl: string, killAfter = Infinity): Promise<KillableRun> {
  return runKillable(process.execPath, [CHILD, store, siteUrl, String(CONCURRENCY)], 'fetched ', killAfter);
}

describe('Crawlee on the seenstore frontier (a real CheerioCrawler, a local site)', () => {
  test('a whole crawl fetches every page exactly once', async () => {
    const site = await spawnSite({ pages: PAGES });
    try {
      const run = await crawl(tempDir(), site.url);
      assert.ok(run.finished);
      const seen = coverage(await site.stats());
      assert.deepEqual(seen.missedPages, []);
      assert.equal(seen.duplicateFetches, 0);
    } finally {
      await site.stop();
    }
  });

  test('killed -9 mid-crawl and restarted: every page fetched, at most the in-flight pages twice, no wait for leases', async () => {
    const site = await spawnSite({ pages: PAGES });
    try {
      const store = tempDir();
      const first = await crawl(store, site.url, PAGES / 3);
      assert.ok(!first.finished, 'the crawl finished before the kill');
      const resumed = await crawl(store, site.url);
      assert.ok(resumed.finished);
      const seen = coverage(await site.stats());
      assert.deepEqual(seen.missedPages, [], 'pages found before the kill were never fetched');
      assert.ok(
        seen.duplicateFetches <= CONCURRENCY + PREFETCH,
        `${seen.duplicateFetches} pages fetched twice (bound: ${CONCURRENCY} in flight + ${PREFETCH} taken ahead)`,
      );
      // The dead crawler's leases (60 s) are taken back at once by its successor (same owner).
      assert.ok(resumed.seconds < 45, `the resumed crawl took ${resumed.seconds.toFixed(1)} s: it waited for leases`);
    } finally {
      await site.stop();
    }
  });

  test('two crawler processes sharing one frontier on a Redis cluster: every page fetched exactly once between them', {
    skip: redisMissing(),
  }, async () => {
    const site = await spawnSite({ pages: PAGES });
    const cluster = await startRedisCluster();
    try {
      const location = cluster.location();
      const machines = ['machine-a', 'machine-b'].map((owner) =>
        runKillable(
          process.execPath,
          [CHILD, tempDir(), site.url, String(CONCURRENCY), owner, location],
          'fetched ',
          Infinity,
        ),
      );
      const runs = await Promise.all(machines);
      assert.ok(
        runs.every((run) => run.finished),
        'a crawler did not finish',
      );
      const seen = coverage(await site.stats());
      assert.deepEqual(seen.missedPages, []);
      assert.equal(seen.duplicateFetches, 0, 'a page was fetched by both crawlers, or twice by one');
      assert.ok(
        runs.every((run) => run.counted > PAGES / 10),
        `the work was not shared: ${runs.map((run) => run.counted).join(' + ')} pages`,
      );
    } finally {
      await Promise.all([site.stop(), cluster.stop()]);
    }
  });
});

describe('examples/crawlee (issue 30)', () => {
  test('installed by path (this checkout, not a registry package), it crawls a site and writes no ./storage', async () => {
    const readme = readFileSync(join(ROOT, 'examples', 'crawlee', 'README.md'), 'utf8');
    assert.doesNotMatch(readme, /npm install seenstore/, 'would install whatever a registry has under that name');
    assert.match(
      readme,
      /npm install --no-save \.\.\/\.\.\/seenstore-\*\.tgz/,
      "would write this machine's tarball path into the tracked package.json",
    );
    // `npm install ../..` makes exactly this link; crawlee is the checkout's own (no registry here).
    const project = tempDir('seenstore-example-');
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(ROOT, join(project, 'node_modules', 'seenstore'));
    symlinkSync(join(ROOT, 'node_modules', 'crawlee'), join(project, 'node_modules', 'crawlee'));
    copyFileSync(join(ROOT, 'examples', 'crawlee', 'crawl.mjs'), join(project, 'crawl.mjs'));
    const site = await spawnSite({ pages: 60 });
    try {
      const { CRAWLEE_STORAGE_DIR: _unset, ...rest } = process.env;
      // The local site is ours: no delay between its pages (the example waits 1 s by default).
      const tmp = tempDir('seenstore-example-tmp-');
      const env = { ...rest, SAME_DOMAIN_DELAY_SECS: '0', TMPDIR: tmp };
      const { stdout } = await promisify(execFile)(process.execPath, ['crawl.mjs', `${site.url}/`, './crawl-store'], {
        cwd: project,
        env,
        timeout: 120_000,
      });
      assert.equal(stdout.split('\n').filter((line) => line.startsWith('http')).length, 60, 'every page once');
      assert.deepEqual(coverage(await site.stats()).missedPages, []);
      assert.ok(existsSync(join(project, 'crawl-store', 'data.mdb')), 'the crawl state is in the store');
      assert.deepEqual(
        readdirSync(project).sort(),
        ['crawl-store', 'crawl.mjs', 'node_modules'],
        'no ./storage left by Crawlee',
      );
      assert.deepEqual(readdirSync(tmp), [], "Crawlee's temporary storage was left behind");
    } finally {
      await site.stop();
    }
  });
});
