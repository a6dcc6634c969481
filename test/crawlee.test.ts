import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { coverage, spawnSite } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

const CHILD = join(ROOT, 'dist', 'test', 'helpers', 'crawlee-child.js');
const PAGES = 600;
const CONCURRENCY = 8;
/** Requests the manager takes ahead of the crawler (its default). */
const PREFETCH = 5;

interface Crawl {
  readonly fetched: number;
  readonly finished: boolean;
  readonly seconds: number;
}

/** Runs the Crawlee child; kills it with SIGKILL once it has printed `killAfter` fetches. */
function crawl(store: string, siteUrl: string, killAfter = Infinity): Promise<Crawl> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [CHILD, store, siteUrl, String(CONCURRENCY)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let fetched = 0;
    let finished = false;
    let err = '';
    let rest = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('fetched ')) fetched++;
        if (line === 'finished') finished = true;
      }
      if (fetched >= killAfter && child.exitCode === null) child.kill('SIGKILL');
    });
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`crawlee child failed (${code}): ${err.slice(-2000)}`));
      else resolve({ fetched, finished, seconds });
    });
  });
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
      const first = await crawl(store, site.url, 200);
      assert.ok(!first.finished, 'the crawl finished before the kill');
      const resumed = await crawl(store, site.url);
      assert.ok(resumed.finished);
      const seen = coverage(await site.stats());
      assert.deepEqual(seen.missedPages, [], 'pages found before the kill were never fetched');
      assert.ok(seen.duplicateFetches <= CONCURRENCY + PREFETCH, `${seen.duplicateFetches} pages fetched twice (bound: ${CONCURRENCY} in flight + ${PREFETCH} taken ahead)`);
      // The dead crawler's leases (60 s) are taken back at once by its successor (same owner).
      assert.ok(resumed.seconds < 45, `the resumed crawl took ${resumed.seconds.toFixed(1)} s: it waited for leases`);
    } finally {
      await site.stop();
    }
  });
});
