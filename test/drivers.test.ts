import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { sharedUrls } from './helpers/data.js';
import { driverFor, supportedSchemes } from '../src/store/open.js';
import { runCli } from './helpers/cli.js';
import { expectCode } from './helpers/errors.js';
import { memoryStore } from './helpers/memory.js';
import { tempDir } from './helpers/tmp.js';

describe('drivers: the registry of backends', () => {
  test('a location with a scheme no driver serves is refused (USAGE), never taken for a directory', async () => {
    const cwd = tempDir('seenstore-drivers-');
    const error = await expectCode('USAGE', () => SeenStore.open('postgres://db.example/crawl'));
    assert.match(error.message, /postgres:\/\//);
    for (const scheme of supportedSchemes())
      assert.ok(error.message.includes(`${scheme}://`), `the refusal lists ${scheme}://`);
    const cli = await runCli(['add', '--store', 'postgres://db.example/crawl'], 'https://a.example/\n', {}, cwd);
    assert.equal(cli.code, 2, cli.stderr);
    assert.match(cli.stderr, /unknown store scheme postgres:\/\//);
    assert.equal(existsSync(join(cwd, 'postgres:')), false, 'a directory was created for the URL');
  });

  test('the registry lists each scheme once, and a path (also a relative one with a colon) is a directory', () => {
    const schemes = supportedSchemes();
    assert.deepEqual([...new Set(schemes)], schemes);
    assert.ok(schemes.includes('redis') && schemes.includes('rediss'));
    for (const scheme of schemes)
      assert.deepEqual(driverFor(`${scheme.toUpperCase()}://x`).schemes.includes(scheme), true);
    for (const path of ['/tmp/crawl', 'crawl.v2', 'a:b', 'C:\\crawl'])
      assert.deepEqual(driverFor(path).schemes, [], path);
  });
});

describe('drivers: the memory driver', () => {
  test('handles on one name share the store; a name never created is NOT_FOUND without create; no maintenance', async () => {
    const location = memoryStore('drivers');
    await expectCode('NOT_FOUND', () => SeenStore.open(location, { create: false }));
    await expectCode('NOT_FOUND', () => SeenStore.open(location, { readOnly: true }));
    const first = await SeenStore.open(location);
    const second = await SeenStore.open(location, { create: false });
    try {
      assert.deepEqual(await first.scope().addIfAbsent(['https://a.example/', 'https://b.example/']), [true, true]);
      assert.deepEqual(await second.scope().addIfAbsent(['https://b.example/', 'https://c.example/']), [false, true]);
      assert.deepEqual(await second.scopeNames(), ['default']);
      await expectCode('UNSUPPORTED', () => first.snapshot());
      await expectCode('UNSUPPORTED', () => first.verify());
      await expectCode('UNSUPPORTED', () => SeenStore.migrate(location));
    } finally {
      await first.close();
      await second.close();
    }
  });

  test('the clock option stamps epochs and leases: a clock ahead makes a lease run out at once', async () => {
    let nowMs = Date.UTC(2030, 0, 1);
    const store = await SeenStore.open(memoryStore('drivers-clock'), { clock: () => nowMs });
    try {
      const scope = store.scope('f');
      await scope.enqueue(['https://a.example/']);
      assert.equal((await scope.epoch(1)).createdAtMs, nowMs);
      const frontier = scope.frontier();
      const [taken] = await frontier.take(1, { leaseMs: 60_000 });
      assert.equal(taken!.leaseUntilMs, nowMs + 60_000);
      assert.deepEqual(await frontier.take(1), [], 'taken again while leased');
      nowMs += 60_001;
      const [again] = await frontier.take(1, { leaseMs: 60_000 });
      assert.equal(again?.attempts, 2, 'the lease did not run out by the clock');
    } finally {
      await store.close();
    }
  });

  for (const strategy of ['classic', 'blocked', 'partitioned:16', 'spatial:2', 'eigen:2', 'multilayer:3', 'counting']) {
    test(`${strategy}: decides, counts and fills exactly as the LMDB driver on the same epoch`, async () => {
      const urls = sharedUrls('crawl-benign-35k.txt');
      const probes = sharedUrls('crawl-sitelist-15k.txt').slice(0, 5_000);
      const file = join(tempDir('seenstore-drivers-'), 'e.ssx');
      const lmdb = await SeenStore.open(tempDir('seenstore-drivers-'));
      const memory = await SeenStore.open(memoryStore('drivers-same'));
      try {
        // Grown to two slices on LMDB, then the same epoch (seeds of both slices) opened in memory.
        const onDisk = lmdb.scope('s', { strategy, capacityUrls: 4_000, fprTarget: 0.01 });
        await onDisk.add(urls.slice(0, 6_000));
        await onDisk.export(file);
        await memory.import(file, { scope: 's', open: true });
        const inMemory = memory.scope('s');
        const more = [...urls.slice(6_000, 9_000), ...urls.slice(0, 1_000), ...urls.slice(8_500, 9_000)];
        assert.deepEqual(await inMemory.addIfAbsent(more), await onDisk.addIfAbsent(more), 'the answers differ');
        const probe = [...probes, ...urls.slice(0, 10_000)];
        assert.deepEqual(await inMemory.has(probe), await onDisk.has(probe), 'membership differs');
        if (strategy === 'counting')
          assert.deepEqual(await inMemory.count(probe), await onDisk.count(probe), 'counts differ');
        const [a, b] = [await inMemory.epoch(1), await onDisk.epoch(1)];
        for (const field of ['slices', 'submitted', 'added', 'estimatedDistinct', 'fillRatio', 'estimatedFpr'] as const)
          assert.equal(a[field], b[field], field);
        assert.deepEqual(a.sliceDetails, b.sliceDetails);
      } finally {
        await lmdb.close();
        await memory.close();
      }
    });
  }
});
