import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { Packr } from 'msgpackr';
import { FORMAT_VERSION, SeenStore, SeenStoreError } from '../src/index.js';
import { allSharedUrls, binomialUpper, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** Edits a closed store's LMDB records directly, to simulate other versions or damage. */
// biome-ignore lint/suspicious/noExplicitAny: raw records of any format version, edited as each test needs.
async function editStore(dir: string, edit: (dbs: { meta: any; chunks: any; journal: any }) => void): Promise<void> {
  const root = open({ path: dir, maxDbs: 8 });
  const dbs = {
    meta: root.openDB({ name: 'meta', encoding: 'binary' }),
    chunks: root.openDB({ name: 'chunks', encoding: 'binary' }),
    journal: root.openDB({ name: 'journal', encoding: 'binary' }),
  };
  root.transactionSync(() => edit(dbs));
  await root.close();
}

/** A store holding https://a.example/ in epoch default/1, whose stored header `change` then rewrote. */
// biome-ignore lint/suspicious/noExplicitAny: raw records of any format version, edited as each test needs.
async function storeWithEpochHeader(change: (header: any) => object): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  await store.scope().add(['https://a.example/']);
  await store.close();
  await editStore(dir, ({ meta }) => {
    meta.putSync(['epoch', 'default', 1], packr.pack(change(packr.unpack(meta.getBinary(['epoch', 'default', 1])))));
  });
  return dir;
}

describe('store API', () => {
  test('a store directory with a dot in its name (mktemp -d, crawl.v2) is a directory, existing or not', async () => {
    for (const name of ['crawl.v2', 'tmp.AbC123']) {
      for (const existing of [false, true]) {
        const dir = join(tempDir(), name);
        if (existing) mkdirSync(dir);
        const store = await SeenStore.open(dir);
        assert.deepEqual(await store.scope().addIfAbsent(['https://a.example/']), [true]);
        await store.close();
        assert.ok(statSync(join(dir, 'data.mdb')).isFile(), `${name} (existing: ${existing})`);
        const reopened = await SeenStore.open(dir);
        assert.deepEqual(await reopened.scope().has(['https://a.example/']), [true]);
        await reopened.close();
      }
    }
  });

  test('no false negatives: every shared URL is seen, in the same handle and after reopen', async () => {
    const dir = tempDir();
    const urls = allSharedUrls();
    const store = await SeenStore.open(dir);
    const scope = store.scope('default', { capacityUrls: urls.length, fprTarget: 0.01 });
    const answers = await scope.addIfAbsent(urls);
    assert.ok(answers.filter(Boolean).length > urls.length * 0.99);
    assert.ok((await scope.has(urls)).every(Boolean));
    await store.close();
    const reopened = await SeenStore.open(dir);
    const seen = await reopened.scope().has(urls);
    assert.equal(seen.filter((s) => !s).length, 0);
    assert.equal((await reopened.scope().addIfAbsent(urls)).filter(Boolean).length, 0);
    await reopened.close();
  });

  test('measured FPR on never-added real URLs stays within a binomial bound of the target', async () => {
    const dir = tempDir();
    const inserted = sharedUrls('crawl-benign-35k.txt');
    const insertedSet = new Set(inserted);
    const probes = sharedUrls('crawl-sitelist-15k.txt').filter((url) => !insertedSet.has(url));
    const store = await SeenStore.open(dir);
    const scope = store.scope('fpr', { capacityUrls: inserted.length, fprTarget: 0.01 });
    await scope.add(inserted);
    const falsePositives = (await scope.has(probes)).filter(Boolean).length;
    const bound = binomialUpper(probes.length, 0.01);
    assert.ok(falsePositives <= bound, `${falsePositives} of ${probes.length} probes, bound ${bound.toFixed(1)}`);
    assert.ok(falsePositives > 0, 'a 1% filter at capacity shows some false positives on 15k probes');
    // The first slice is sized for half the target, leaving the other half to growth slices.
    const stats = (await scope.stats()).epochs[0]!;
    assert.ok(Math.abs(stats.estimatedFpr - 0.005) < 0.0015, `estimated FPR ${stats.estimatedFpr}`);
    await store.close();
  });

  test('add-if-absent: duplicates in a batch are new once; answers are exact with a tiny FPR', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('exact', { capacityUrls: 100_000, fprTarget: 1e-9 });
    const urls = sharedUrls('crawl-sitelist-15k.txt').slice(0, 5000);
    const batch = [...urls, ...urls.slice(0, 100)];
    const answers = await scope.addIfAbsent(batch);
    assert.deepEqual(answers, [...urls.map(() => true), ...urls.slice(0, 100).map(() => false)]);
    const mixed = await scope.addIfAbsent(['https://new.example/1', urls[7]!, 'https://new.example/1']);
    assert.deepEqual(mixed, [true, false, false]);
    const stats = (await scope.stats()).epochs[0]!;
    assert.equal(stats.submitted, 5103);
    assert.equal(stats.added, 5001);
    await store.close();
  });

  test('large calls are split into several journal records and stay exact', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('big', { capacityUrls: 200_000, fprTarget: 1e-9 });
    const urls = Array.from({ length: 150_000 }, (_, i) => `https://split.example/${i}`);
    const summary = await scope.add(urls);
    assert.deepEqual(summary, { submitted: 150_000, added: 150_000 });
    assert.equal((await scope.stats()).epochs[0]!.journalRecords, 3);
    await store.close();
  });

  test('invalid URLs and misuse: typed errors, nothing written', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('bad', { capacityUrls: 1000 });
    await scope.add(['https://ok.example/']);
    await expectCode('INVALID_URL', () => scope.addIfAbsent(['https://fine.example/', '']));
    await expectCode('INVALID_URL', () => scope.addIfAbsent(['https://fine.example/', 'bad\uD800surrogate']));
    await expectCode('INVALID_URL', () => scope.addIfAbsent(['x'.repeat(70_000)]));
    await assert.rejects(scope.addIfAbsent([42 as unknown as string]), TypeError);
    assert.deepEqual(await scope.has(['https://fine.example/']), [false]);
    assert.equal((await scope.stats()).epochs[0]!.submitted, 1);
    assert.throws(
      () => store.scope('no/slash'),
      (e: unknown) => e instanceof SeenStoreError && e.code === 'USAGE',
    );
    assert.throws(
      () => store.scope('x', { capacityUrls: 0 }),
      (e: unknown) => e instanceof SeenStoreError && e.code === 'USAGE',
    );
    assert.throws(
      () => store.scope('y', { fprTarget: 1.5 }),
      (e: unknown) => e instanceof SeenStoreError && e.code === 'USAGE',
    );
    const whatwg = store.scope('norm', { normalize: 'whatwg' });
    await expectCode('INVALID_URL', () => whatwg.add(['not a url']));
    await whatwg.add(['HTTPS://Example.COM:443/a/../b']);
    assert.deepEqual(await whatwg.has(['https://example.com/b']), [true]);
    await store.close();
    await expectCode('STORE_CLOSED', () => scope.has(['https://ok.example/']));
    await expectCode('NOT_FOUND', () => SeenStore.open(join(dir, 'missing'), { create: false }));
  });

  test('loading a large epoch lets its file pages go (RSS), and the store keeps working, also with an add not yet awaited', async () => {
    const dir = tempDir();
    const urls = allSharedUrls().slice(0, 20_000);
    // 26M URLs at 1 %: a 36 MB first slice, over the 32 MB after which the map is released.
    const plan = { capacityUrls: 26_000_000, fprTarget: 0.01 };
    let store = await SeenStore.open(dir);
    await store.scope('big', plan).add(urls.slice(0, 10_000));
    await store.scope('other', plan).add(urls.slice(10_000));
    await store.close();
    store = await SeenStore.open(dir);
    try {
      const big = store.scope('big');
      assert.ok((await big.has(urls.slice(0, 10_000))).every(Boolean));
      if (existsSync('/proc/self/smaps'))
        assert.ok(mappedStoreKb(dir) < 8 * 1024, `${mappedStoreKb(dir)} kB of the store still mapped`);
      // An add whose promise is not yet awaited (its commit is done, the acknowledgement pending), then
      // another large load.
      const pending = big.addIfAbsent(['https://after-release.example/1']);
      assert.ok((await store.scope('other').has(urls.slice(10_000))).every(Boolean));
      assert.deepEqual(await pending, [true]);
      assert.deepEqual(await store.scope('other').addIfAbsent(['https://after-release.example/2', urls[10_000]!]), [
        true,
        false,
      ]);
      assert.deepEqual(await big.has(['https://after-release.example/1', 'https://after-release.example/2']), [
        true,
        false,
      ]);
      await store.snapshot('after');
    } finally {
      await store.close();
    }
    store = await SeenStore.open(dir);
    try {
      assert.deepEqual(await store.scope('other').has(['https://after-release.example/2']), [true]);
      assert.deepEqual((await store.verify()).damage, []);
      if (existsSync('/proc/self/smaps'))
        assert.ok(mappedStoreKb(dir) < 8 * 1024, `${mappedStoreKb(dir)} kB of the store still mapped after verify`);
    } finally {
      await store.close();
    }
  });

  test('a lone surrogate is refused on every path, wherever it sits; a real U+FFFD is a fine URL', async () => {
    const dir = tempDir();
    for (const hashThreads of [1, 2]) {
      const store = await SeenStore.open(join(dir, `t${hashThreads}`), { hashThreads });
      const filler = Array.from({ length: 5000 }, (_, i) => `https://filler.example/${i}/é`);
      for (const strategy of ['classic', 'multilayer:3']) {
        const scope = store.scope(strategy.replace(':', '-'), { capacityUrls: 100_000, strategy });
        await scope.add(['https://ok.example/']);
        // A pair split across two keys is a valid pair in the joined batch, but two lone halves.
        for (const bad of [['x\uD800', '\uDC00y'], ['\uDFFFlow-first'], ['https://a.example/\uD83D']]) {
          await expectCode('INVALID_URL', () => scope.addIfAbsent([...filler, ...bad]));
          await expectCode('INVALID_URL', () => scope.has([...filler, ...bad]));
        }
        // A call of several transactions is checked whole before its first part is written.
        const many = Array.from({ length: 70_000 }, (_, i) => `https://many.example/${i}`);
        await expectCode('INVALID_URL', () => scope.add([...many, 'late\uD800']));
        assert.deepEqual(
          await scope.has([filler[0]!, many[0]!]),
          [false, false],
          `${strategy}: nothing of a refused call was written`,
        );
        assert.deepEqual(await scope.addIfAbsent(['https://replacement.example/\uFFFD', 'https://pair.example/😀']), [
          true,
          true,
        ]);
        assert.equal((await scope.stats()).epochs[0]!.submitted, 3);
      }
      await store.close();
    }
  });

  test('a store of a newer format version is refused with FORMAT_UNSUPPORTED, and migrate will not touch it', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    await store.scope().add(['https://a.example/']);
    await store.close();
    await editStore(dir, ({ meta }) => {
      const header = packr.unpack(meta.getBinary('store'));
      meta.putSync('store', packr.pack({ ...header, formatVersion: FORMAT_VERSION + 1 }));
    });
    const error = await expectCode('FORMAT_UNSUPPORTED', () => SeenStore.open(dir));
    assert.match(error.message, /newer seenstore/);
    await expectCode('FORMAT_UNSUPPORTED', () => SeenStore.migrate(dir));
  });

  test('an epoch written with an unknown hash scheme is refused, never reinterpreted', async () => {
    const dir = await storeWithEpochHeader((header) => ({ ...header, hashScheme: 'xxh64-km-v9' }));
    const reopened = await SeenStore.open(dir);
    await expectCode('FORMAT_UNSUPPORTED', () => reopened.scope().has(['https://a.example/']));
    await reopened.close();
  });

  // The soak's damaged-store part flipped a byte of a stored seed (one hex digit became a byte
  // that is no UTF-8): every command failed with INTERNAL, from the hasher, instead of naming the
  // damaged record.
  test('an epoch header whose seed is damaged is STORE_CORRUPT, not INTERNAL', async () => {
    const dir = await storeWithEpochHeader((header) => {
      const [slice, ...rest] = header.slices;
      return {
        ...header,
        slices: [{ ...slice, seeds: [`${slice.seeds[0].slice(0, 15)}\ufffd`, ...slice.seeds.slice(1)] }, ...rest],
      };
    });
    const reopened = await SeenStore.open(dir);
    await expectCode('STORE_CORRUPT', () => reopened.scope().has(['https://a.example/']));
    await reopened.close().catch(() => undefined);
  });

  test('a damaged chunk is detected when it is loaded, never answered from', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const urls = sharedUrls('crawl-sitelist-15k.txt');
    await store.scope().add(urls);
    await store.close();
    await editStore(dir, ({ chunks }) => {
      const key = [...chunks.getKeys({ start: ['default', 1, 0, 0] })][3];
      const value = Buffer.from(chunks.getBinary(key));
      value[1000] = value[1000]! ^ 0x10;
      chunks.putSync(key, value);
    });
    // Chunks come in when a query touches them (15k URLs touch every chunk of the 1.2 MB filter),
    // or all at once for what reads the whole filter (stats).
    for (const read of [(s: SeenStore) => s.scope().has(urls), (s: SeenStore) => s.scope().stats()]) {
      const reopened = await SeenStore.open(dir);
      await expectCode('STORE_CORRUPT', () => read(reopened));
      await reopened.close().catch(() => undefined);
    }
  });

  test('a damaged journal record is detected on replay', async () => {
    const dir = tempDir();
    const script = `
      import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
      const store = await SeenStore.open(process.argv[1]);
      await store.scope().add(['https://j.example/1', 'https://j.example/2']);
      await store.scope().add(['https://j.example/3']);
      process.kill(process.pid, 'SIGKILL');`;
    spawnSync(process.execPath, ['--input-type=module', '-e', script, dir]);
    // A byte of the first frame's record: the second frame was written after it had been synced.
    const journal = readFileSync(join(dir, 'journal.log'));
    const firstEnd = 16 + journal.readUInt32LE(16);
    journal[firstEnd - 1] = journal[firstEnd - 1]! ^ 0x01;
    writeFileSync(join(dir, 'journal.log'), journal);
    const reopened = await SeenStore.open(dir);
    await expectCode('STORE_CORRUPT', () => reopened.scope().has(['https://j.example/1']));
    await reopened.close().catch(() => undefined);
  });

  test('the store path being a file, or not a seenstore, gives a typed error', async () => {
    const dir = tempDir();
    const file = join(dir, 'plain-file');
    await import('node:fs').then((fs) => fs.writeFileSync(file, 'hello'));
    await expectCode('IO_ERROR', () => SeenStore.open(file));
    const foreign = join(dir, 'foreign');
    const root = open({ path: foreign });
    await root.put('someone-else', 'data');
    await root.close();
    await expectCode('STORE_CORRUPT', () => SeenStore.open(foreign));
  });
});

/** Resident kB of this process's mappings of the store's data file (from /proc/self/smaps). */
function mappedStoreKb(dir: string): number {
  let inStore = false;
  let kb = 0;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inStore = line.endsWith(join(dir, 'data.mdb'));
    else if (inStore && line.startsWith('Rss:')) kb += Number(/(\d+)/.exec(line)![1]);
  }
  return kb;
}
