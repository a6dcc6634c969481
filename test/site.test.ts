import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SeenStore, type NormalizeMode } from '../src/index.js';
import { coverage, pageLinks, pagePath, spawnSite, startSite, type Site } from './helpers/site.js';
import { tempDir } from './helpers/tmp.js';

const CONCURRENCY = 8;

/**
 * A breadth-first crawl of `site` from its root that takes a link only when a seenstore scope in
 * `mode` says it is new: the simplest crawler that seenstore serves. Returns the number of fetches.
 */
async function crawl(site: Site, mode: NormalizeMode): Promise<number> {
  const store = await SeenStore.open(tempDir());
  try {
    const scope = store.scope('site', { normalize: mode });
    const pending = [`${site.url}/`];
    await scope.add(pending);
    let fetches = 0;
    while (pending.length > 0) {
      const batch = pending.splice(0, CONCURRENCY);
      const found = await Promise.all(
        batch.map(async (url) => {
          fetches++;
          const response = await fetch(url);
          if (!response.ok) return [];
          const html = await response.text();
          return [...html.matchAll(/href="([^"]+)"/g)].map(
            (match) => new URL(match[1]!.replaceAll('&amp;', '&'), url).href,
          );
        }),
      );
      const links = found.flat();
      const fresh = await scope.addIfAbsent(links);
      links.forEach((link, i) => {
        if (fresh[i]) pending.push(link);
      });
    }
    return fetches;
  } finally {
    await store.close();
  }
}

describe('synthetic crawl site', () => {
  test('its links are deterministic and vary in form: reordered queries, fragments, absolute, duplicates, 404s', () => {
    const origin = 'http://127.0.0.1:1';
    const links = Array.from({ length: 3_000 }, (_, page) => pageLinks(page, 3_000, origin));
    assert.deepEqual(pageLinks(5, 3_000, origin), links[5]);
    const all = links.flat();
    assert.ok(
      all.some((href) => href.includes('#')),
      'fragments',
    );
    assert.ok(
      all.some((href) => href.startsWith(origin)),
      'absolute links',
    );
    assert.ok(
      all.some((href) => href.includes('?id=')),
      'reordered query strings',
    );
    assert.ok(
      all.some((href) => href.startsWith('/missing/')),
      'links to missing pages',
    );
    assert.ok(
      links.some((hrefs) => new Set(hrefs).size < hrefs.length),
      'a link twice on one page',
    );
    assert.equal(new Set(Array.from({ length: 3_000 }, (_, page) => pagePath(page))).size, 3_000, 'distinct pages');
  });

  test('a crawl deduplicated by a crawler-form scope fetches every page of a separate site process exactly once', async () => {
    const site = await spawnSite({ pages: 3_000 });
    try {
      const fetches = await crawl(site, 'crawler');
      const result = coverage(await site.stats());
      assert.deepEqual(result.missedPages, []);
      assert.equal(result.duplicateFetches, 0);
      assert.equal(result.pageFetches, 3_000);
      // One 404 per page number that is a multiple of 97, each fetched once.
      assert.equal(result.notFound, Math.floor(2_999 / 97));
      assert.equal(fetches, 3_000 + result.notFound);
    } finally {
      await site.stop();
    }
    assert.throws(() => process.kill(site.pid, 0), 'the site process is gone after stop()');
  });

  test('the same crawl with the whatwg form fetches pages twice: the site makes the crawler form matter', async () => {
    const site = await startSite({ pages: 500 });
    try {
      await crawl(site, 'whatwg');
      const result = coverage(await site.stats());
      assert.deepEqual(result.missedPages, []);
      assert.ok(result.duplicateFetches > 100, `only ${result.duplicateFetches} duplicate fetches`);
    } finally {
      await site.stop();
    }
  });
});
