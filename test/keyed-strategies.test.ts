import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { eigenFeatures, urlLayers } from '../src/filters/keying.js';
import { runCli, runCrashChild } from './helpers/cli.js';
import { allSharedUrls, binomialUpper, sharedUrls } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

const benign = sharedUrls('crawl-benign-35k.txt');
const benignSet = new Set(benign);
const probes = sharedUrls('crawl-sitelist-15k.txt').filter((url) => !benignSet.has(url));

describe('eigen and multilayer keying', () => {
  test('multilayer layers give back every real URL exactly, so no two URLs share all their layers', () => {
    const parts = new Array<string>(4);
    const tuples = new Set<string>();
    const urls = allSharedUrls();
    for (const url of urls) {
      urlLayers(url, 4, parts);
      assert.equal(parts.join(''), url);
      for (let layer = 1; layer < 3; layer++)
        assert.ok(
          parts[layer] === '' || (parts[layer]!.startsWith('/') && !/[/?#]/.test(parts[layer]!.slice(1))),
          `${url}: layer ${layer} ${parts[layer]}`,
        );
      tuples.add(parts.join('\u0000'));
    }
    assert.equal(tuples.size, urls.length);
    urlLayers('https://Example.com:8080/a/b/c/d?x=1#f', 4, parts);
    assert.deepEqual(parts, ['https://Example.com:8080', '/a', '/b', '/c/d?x=1#f']);
    urlLayers('https://example.com/a?x=1', 4, parts);
    assert.deepEqual(parts, ['https://example.com', '/a', '', '?x=1']);
    urlLayers('https://example.com', 3, parts);
    assert.deepEqual(parts.slice(0, 3), ['https://example.com', '', '']);
  });

  test('eigen with more feature hashes than URL hashes: a large batch is decided in runs that suit both filters', async () => {
    // eigen:16 at 1 %: the URL filter has k = 7, the feature filter k = 16, so the feature filter
    // computes fewer positions ahead per run (a run sized for k = 7 would overflow its buffer).
    const store = await SeenStore.open(tempDir());
    const scope = store.scope('eigen16', { strategy: 'eigen:16', capacityUrls: 40_000, fprTarget: 0.01 });
    const urls = allSharedUrls().slice(0, 30_000);
    const first = await scope.addIfAbsent(urls);
    assert.ok(first.filter(Boolean).length > 29_000, `${first.filter(Boolean).length} new of 30,000`);
    assert.ok((await scope.addIfAbsent(urls)).every((isNew) => !isNew));
    await store.close();
  });

  test('eigen features: scheme, host, depth, path length, extension, query names', () => {
    assert.equal(
      eigenFeatures('https://Example.com/a/b/page.HTML?id=3&sort=asc#top'),
      ['https', 'example.com', 3, 14, 'html', 'id&sort'].join('\u001f'),
    );
    assert.equal(eigenFeatures('http://h/'), ['http', 'h', 0, 1, '', ''].join('\u001f'));
    // Same shape on the same host: same features (the extension region cannot tell them apart).
    assert.equal(eigenFeatures('https://github.com/user1/repo1'), eigenFeatures('https://github.com/user2/repo2'));
  });

  for (const strategy of ['eigen:3', 'multilayer:4']) {
    test(`${strategy} is persisted: no false negatives, the FPR promise kept, the same answers after reopen, export and import`, async () => {
      const dir = tempDir();
      const inserted = benign.slice(0, 20_000);
      let store = await SeenStore.open(dir);
      const scope = store.scope('keyed', { strategy, capacityUrls: 20_000, fprTarget: 0.02 });
      await scope.add(inserted);
      const details = await scope.epoch(1);
      assert.equal(details.strategy, strategy);
      const keying = details.sliceDetails[0]!.keying;
      assert.equal(keying?.kind, strategy.startsWith('eigen') ? 'eigen-v1' : 'multilayer-v1');
      assert.ok((await scope.has(inserted)).every(Boolean), 'no false negatives');
      const measured = (await scope.has(probes)).filter(Boolean).length;
      // The URL filter alone keeps the promise; the derived keys can only lower the rate.
      assert.ok(measured <= binomialUpper(probes.length, 0.02), `${measured} false positives of ${probes.length}`);
      const file = join(dir, 'keyed.ssx');
      await scope.export(file);
      await store.close();

      store = await SeenStore.open(dir);
      assert.ok((await store.scope('keyed').has(inserted)).every(Boolean), 'no false negatives after reopen');
      assert.equal((await store.scope('keyed').has(probes)).filter(Boolean).length, measured);
      assert.ok((await store.verify()).ok);
      await store.import(file, { scope: 'copy' });
      assert.ok((await store.scope('copy').has(inserted, { epochs: 1 })).every(Boolean));
      assert.equal((await store.scope('copy').has(probes, { epochs: 1 })).filter(Boolean).length, measured);
      assert.equal(
        (await store.scope('copy').epoch(2)).strategy,
        strategy,
        'the epoch after an import keeps the strategy',
      );
      await store.close();
    });
  }

  for (const point of ['add:after-commit', 'checkpoint:after-chunk-txn']) {
    test(`multilayer:3 killed at ${point}: every acknowledged URL is seen, replay adds nothing twice`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      const urls = benign.slice(0, 20_000);
      writeFileSync(file, `${urls.join('\n')}\n`);
      const env = { CHILD_CAPACITY: '1000000', CHILD_STRATEGY: 'multilayer:3' };
      const crashed = await runCrashChild([dir, 'default', file, '5000', point, 'checkpoint-each'], env);
      assert.equal(crashed.signal, 'SIGKILL', `${point} was never reached`);
      const store = await SeenStore.open(dir, { lockStaleMs: 2_000 });
      assert.equal((await store.scope().epoch(1)).strategy, 'multilayer:3');
      assert.equal((await store.scope().has(urls.slice(0, crashed.acked * 5000))).filter((s) => !s).length, 0);
      const fill = (await store.scope().stats()).epochs[0]!.fillRatio;
      await store.close();
      const again = await SeenStore.open(dir);
      assert.equal(
        (await again.scope().stats()).epochs[0]!.fillRatio,
        fill,
        'replay over checkpointed chunks sets no new bit',
      );
      await again.close();
    });
  }

  test('simulate runs eigen and multilayer, reporting every filter and the independence theory', async () => {
    const urls = join(tempDir(), 'urls.txt');
    writeFileSync(urls, `${benign.join('\n')}\n`);
    for (const strategy of ['eigen:2', 'multilayer:3']) {
      const run = await runCli(['simulate', '--urls', urls, '--strategy', strategy, '--fpr', '0.01', '--json']);
      assert.equal(run.code, 0, run.stderr);
      const result = JSON.parse(run.stdout) as {
        geometries: { mBits: number; k: number }[];
        mean: number;
        theory: number;
        bitsPerUrl: number;
      };
      assert.equal(result.geometries.length, strategy === 'eigen:2' ? 2 : 4);
      if (strategy === 'eigen:2') assert.equal(result.geometries[1]!.k, 2);
      assert.ok(result.mean <= binomialUpper(17_689, 0.01) / 17_689, `${strategy}: ${result.mean}`);
      assert.ok(result.theory < 0.01 && result.bitsPerUrl > 9.6);
    }
  });
});
