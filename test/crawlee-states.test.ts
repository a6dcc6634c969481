import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { startSite } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

process.env.CRAWLEE_STORAGE_DIR = tempDir('seenstore-crawlee-storage-');
const { CheerioCrawler, Configuration, log } = await import('crawlee');
const { SeenstoreRequestManager, crawleeKeys, crawlerOptions } = await import('../src/crawlee/index.js');
log.setLevel(log.LEVELS.OFF);

/** A real CheerioCrawler over a local site on a store's scope `site`; what it handled. */
async function crawl(
  store: string,
  siteUrl: string,
  fail: (url: string) => boolean,
): Promise<{ keys: string[]; urls: string[]; failed: number }> {
  const seen = await SeenStore.open(store, { onWarning: () => {} });
  const keys: string[] = [];
  const urls: string[] = [];
  try {
    const manager = new SeenstoreRequestManager(seen.scope('site'), { sameDomainDelaySecs: 0, perQueue: 100 });
    const crawler = new CheerioCrawler(
      {
        ...crawlerOptions(manager),
        maxRequestRetries: 1,
        async requestHandler({ request, enqueueLinks }) {
          if (fail(request.url)) throw new Error('this page fails');
          await enqueueLinks();
          keys.push(request.uniqueKey);
          urls.push(request.url);
        },
      },
      new Configuration({ persistStorage: false }),
    );
    const stats = await crawler.run([`${siteUrl}/`]);
    assert.equal(
      await manager.handledCount(),
      stats.requestsFinished + stats.requestsFailed,
      "handledCount: as Crawlee's own queue, failures included",
    );
    return { keys, urls, failed: stats.requestsFailed };
  } finally {
    await seen.close();
  }
}

describe('Crawlee: failed requests and the keys to classify (issue 45)', () => {
  test('a request Crawlee gives up on is finished as failed, not done; frontier stats shows failed N', async () => {
    const site = await startSite({ pages: 40 });
    const store = join(tempDir(), 'store');
    try {
      const run = await crawl(store, site.url, (url) => url.includes('/blog/'));
      assert.ok(run.failed >= 2 && run.keys.length >= 2, `failed ${run.failed}, handled ${run.keys.length}`);
      const out = await runCli(['--store', store, '--scope', 'site', '--json', 'frontier', 'stats']);
      assert.equal(out.code, 0, out.stderr);
      const stats = JSON.parse(out.stdout) as { pending: number; leased: number; done: number; failed: number };
      assert.deepEqual([stats.pending, stats.leased, stats.done, stats.failed], [0, 0, run.keys.length, run.failed]);
      const text = await runCli(['--store', store, '--scope', 'site', 'frontier', 'stats']);
      assert.match(text.stdout, new RegExp(`, done ${run.keys.length}, failed ${run.failed}, `));
    } finally {
      await site.stop();
    }
  });

  test('classify of the keys the crawler handled, the bare origin included, says revisit after a rotate', async () => {
    const site = await startSite({ pages: 20 });
    const store = join(tempDir(), 'store');
    try {
      const run = await crawl(store, site.url, () => false);
      const origin = `${site.url}/`;
      assert.ok(run.urls.includes(origin));
      assert.deepEqual(crawleeKeys(run.urls), run.keys, 'crawleeKeys(url) is the key the manager recorded');
      assert.equal(crawleeKeys([origin])[0], site.url, "Crawlee's uniqueKey drops the origin's slash");
      assert.equal((await runCli(['--store', store, '--scope', 'site', 'epoch', 'rotate'])).code, 0);
      const classified = await runCli(['--store', store, '--scope', 'site', 'classify'], `${run.keys.join('\n')}\n`);
      assert.equal(classified.code, 0, classified.stderr);
      const lines = classified.stdout.trim().split('\n');
      assert.equal(lines.length, run.keys.length);
      for (const line of lines) assert.match(line, /^revisit\t/);
      const byUrl = await runCli(['--store', store, '--scope', 'site', 'classify'], `${origin}\n`);
      assert.equal(
        byUrl.stdout,
        `new\t${origin}\n`,
        'the URL as printed is not the key: what docs/crawlee.md warns of',
      );
    } finally {
      await site.stop();
    }
  });
});
