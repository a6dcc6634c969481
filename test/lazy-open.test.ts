import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { XxHash } from '../src/hash/xxhash.js';
import { BloomFilter } from '../src/filters/bloom.js';
import { BloomCopy } from '../src/store/lmdb/bloom-copy.js';
import { StoreEnv } from '../src/store/lmdb/env.js';
import { readHeader } from '../src/store/lmdb/metadata.js';
import { StreamedReads } from '../src/store/lmdb/streamed-reads.js';
import { allSharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

/** Capacity whose first slice spans hundreds of chunks (about 7 MB at 1 %). */
const CAPACITY_URLS = 5_000_000;

/** Flips a byte of the first chunk of epoch s/1 (its checksum then fails). */
async function editChunk(dir: string): Promise<void> {
  const root = open({ path: dir, maxDbs: 8 });
  const chunks = root.openDB({ name: 'chunks', encoding: 'binary' });
  const key = [...chunks.getKeys({ start: ['s', 1, 0, 0] })][0]!;
  const value = Buffer.from(chunks.getBinary(key)!);
  value[100] = value[100]! ^ 0x01;
  await chunks.put(key, value);
  await root.close();
}

async function builtStore(strategy: string, urls: readonly string[]): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  await store.scope('s', { capacityUrls: CAPACITY_URLS, strategy }).add(urls);
  await store.close();
  return dir;
}

/** A working copy of epoch s/1 as a process opening the store gets it, and the env to close. */
async function openCopy(dir: string, readOnly: boolean): Promise<{ copy: BloomCopy; env: StoreEnv; hash: XxHash }> {
  const env = StoreEnv.open(dir, { create: false, mapSizeBytes: 2 ** 30, readOnly });
  const hash = await XxHash.load();
  return { copy: BloomCopy.load(env, hash, readHeader(env, 's', 1), false), env, hash };
}

function answers(copy: BloomCopy, urls: readonly string[]): boolean[] {
  const words = new Uint32Array(2 * urls.length * copy.filterCount);
  copy.hashKeys(urls, words);
  const out = new Uint8Array(urls.length);
  copy.answer(words, urls.length, out);
  return [...out].map((answer) => answer === 1);
}

describe('opens that cost what they touch', () => {
  const urls = allSharedUrls().slice(0, 20_000);
  const added = urls.slice(0, 10_000);
  const probes = urls.slice(10_000);

  for (const [strategy, chunksPerUrl] of [
    ['blocked', '1'],
    ['classic', 'k'],
  ] as const) {
    test(`${strategy}: an open loads no chunk; a writer's query of one URL loads at most ${chunksPerUrl}`, async () => {
      const dir = await builtStore(strategy, added);
      const { copy, env } = await openCopy(dir, false);
      try {
        assert.equal(copy.takeChunksLoaded(), 0, 'the open read headers, not bits');
        assert.deepEqual(answers(copy, [added[0]!]), [true]);
        const loaded = copy.takeChunksLoaded();
        const most = chunksPerUrl === '1' ? copy.filterCount : copy.header.slices[0]!.k * copy.filterCount;
        assert.ok(loaded >= 1 && loaded <= most, `${loaded} chunks for one URL, at most ${most}`);
        assert.deepEqual(answers(copy, [added[0]!]), [true]);
        assert.equal(copy.takeChunksLoaded(), 0, 'a chunk in memory is not loaded again');
      } finally {
        await env.close();
      }
    });
  }

  for (const strategy of ['classic', 'blocked']) {
    test(`${strategy}: answers read chunk by chunk (a writer's copy) or streamed (read-only) are those of a copy loaded whole`, async () => {
      const dir = await builtStore(strategy, added);
      // A journal tail beside the chunks (the writer is killed before any checkpoint): a read
      // must OR the bits in memory with the stored ones.
      const script = `
        import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
        const store = await SeenStore.open(process.argv[1]);
        const chunks = [];
        for await (const chunk of process.stdin) chunks.push(chunk);
        await store.scope('s').add(JSON.parse(Buffer.concat(chunks).toString()));
        process.kill(process.pid, 'SIGKILL');`;
      const killed = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], {
        input: JSON.stringify(probes.slice(0, 1000)),
        encoding: 'utf8',
      });
      assert.equal(killed.signal, 'SIGKILL', killed.stderr);
      const lazy = await openCopy(dir, false);
      const streamed = await openCopy(dir, true);
      const whole = await openCopy(dir, true);
      try {
        whole.copy.summary();
        assert.ok(whole.copy.takeChunksLoaded() > 100, 'the summary loaded every chunk');
        const expected = [...answers(whole.copy, probes), ...answers(whole.copy, added)];
        assert.ok(
          expected.slice(probes.length).every(Boolean) && expected.slice(0, 1000).every(Boolean),
          'every added URL is seen',
        );
        assert.deepEqual([...answers(lazy.copy, probes), ...answers(lazy.copy, added)], expected);
        assert.deepEqual([...answers(streamed.copy, probes), ...answers(streamed.copy, added)], expected);
        assert.equal(streamed.copy.takeChunksLoaded(), 0, 'a read-only handle keeps no chunk');
        assert.deepEqual(lazy.copy.summary(), whole.copy.summary());
      } finally {
        await lazy.env.close();
        await streamed.env.close();
        await whole.env.close();
      }
    });
  }

  test('a read-only handle that has streamed twice its filters loads chunks from then on, with the same answers', async () => {
    const dir = await builtStore('classic', added);
    const { copy, env } = await openCopy(dir, true);
    try {
      const first = answers(copy, added);
      assert.ok(first.every(Boolean));
      assert.equal(copy.takeChunksLoaded(), 0, 'streamed: every chunk read once');
      assert.deepEqual(answers(copy, added), first);
      assert.equal(copy.takeChunksLoaded(), 0, 'streamed again: twice the filter read');
      assert.deepEqual(answers(copy, added), first);
      assert.ok(copy.takeChunksLoaded() > 100, 'then loaded');
    } finally {
      await env.close();
    }
  });

  test('a streamed read tests memory only in chunks resident or holding bits not yet stored', () => {
    // One 64-byte block per URL and one chunk per block: each URL below touches one chunk.
    const filter = new BloomFilter({ layout: 'blocked', mBits: 512 * 64, k: 7 }, { regionBytes: 64 });
    const regionOf = (words: Uint32Array): number => {
      const positions = new Float64Array(7);
      filter.positionsOf(words, 0, 2, 0, 1, positions);
      return Math.floor(positions[0]! / 512);
    };
    // Hashes in four different chunks.
    const picked: Uint32Array[] = [];
    for (let seed = 1; picked.length < 4; seed++) {
      const words = new Uint32Array([Math.imul(seed, 0x9e3779b1) >>> 0, Math.imul(seed, 0x85ebca6b) >>> 0]);
      if (!picked.some((other) => regionOf(other) === regionOf(words))) picked.push(words);
    }
    const [inMemory, stored, stale, resident] = picked as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];
    const bitsOf = (words: Uint32Array): Uint8Array => {
      const alone = new BloomFilter(filter.geometry, { regionBytes: 64 });
      alone.addAll(words, 0, 2, 1);
      return alone.region(regionOf(words)).slice();
    };
    filter.addAll(inMemory, 0, 2, 1); // a journal tail replayed: its chunk is dirty
    // Bits of a stale or resident chunk are in memory, the chunk clean (as after a checkpoint, or a load).
    filter.region(regionOf(stale)).set(bitsOf(stale));
    filter.region(regionOf(resident)).set(bitsOf(resident));
    const payloads = new Map([[regionOf(stored), bitsOf(stored)]]);
    const source = {
      resident: (_index: number, region: number) => region === regionOf(resident),
      payload: (_index: number, region: number) => payloads.get(region),
    };
    const words = new Uint32Array([...inMemory, ...stored, ...stale, ...resident]);
    const out = new Uint8Array(4);
    new StreamedReads().answer([{ filters: [filter], offset: 0, at: 0 }], words, 2, 4, source, out);
    // The stale chunk's memory is not read: a clean chunk's bits in memory are stored ones, and
    // reading memory nobody wrote costs a page where the kernel has no shared zero page.
    assert.deepEqual([...out], [1, 1, 0, 1]);
  });

  test("Scope.settings reads the epoch's header only: no chunk, so not a damaged one either", async () => {
    const dir = await builtStore('classic', added);
    const store = await SeenStore.open(dir);
    const details = await store.scope('s').epoch(1);
    await store.close();
    await editChunk(dir);
    const reopened = await SeenStore.open(dir, { readOnly: true });
    try {
      const settings = await reopened.scope('s').settings(1);
      assert.deepEqual(settings, {
        epoch: 1,
        state: 'open',
        capacityUrls: details.capacityUrls,
        fprTarget: details.fprTarget,
        strategy: details.strategy,
        normalize: details.normalize,
        slices: details.slices,
        seeds: details.sliceDetails.map((slice) => slice.seeds),
      });
      await expectCode('STORE_CORRUPT', () => reopened.scope('s').epoch(1));
    } finally {
      await reopened.close();
    }
  });

  test('a writer decides against stored chunks it had not loaded: added URLs are never new again', async () => {
    const dir = await builtStore('classic', added);
    const store = await SeenStore.open(dir);
    try {
      const scope = store.scope('s');
      assert.deepEqual(
        await scope.addIfAbsent(added.slice(0, 5000)),
        added.slice(0, 5000).map(() => false),
      );
      const fresh = await scope.addIfAbsent(probes.slice(0, 5000));
      assert.ok(fresh.filter(Boolean).length > 4900, 'new URLs are new');
      assert.ok((await scope.has([...added, ...probes.slice(0, 5000)])).every(Boolean));
    } finally {
      await store.close();
    }
    const reopened = await SeenStore.open(dir);
    try {
      assert.deepEqual(
        await reopened.scope('s').addIfAbsent(probes.slice(0, 5000)),
        probes.slice(0, 5000).map(() => false),
      );
    } finally {
      await reopened.close();
    }
  });

  test("a chunk another process checkpointed after it was loaded is loaded again: that process's URLs are seen", async () => {
    const dir = await builtStore('classic', added);
    const reader = await SeenStore.open(dir, { readOnly: true });
    try {
      assert.ok((await reader.scope('s').has(added)).every(Boolean), 'every chunk loaded once');
      const script = `
        import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
        const store = await SeenStore.open(process.argv[1]);
        const chunks = [];
        for await (const chunk of process.stdin) chunks.push(chunk);
        await store.scope('s').add(JSON.parse(Buffer.concat(chunks).toString()));
        await store.scope('s').checkpoint();
        await store.close();`;
      const writer = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], {
        input: JSON.stringify(probes),
        encoding: 'utf8',
      });
      assert.equal(writer.status, 0, `${writer.signal ?? ''} ${writer.stderr}`);
      const after = await SeenStore.open(join(dir), { readOnly: true });
      try {
        assert.equal(
          (await after.scope('s').stats()).epochs[0]!.journalRecords,
          0,
          'the journal was trimmed: only the chunks hold the URLs',
        );
      } finally {
        await after.close();
      }
      assert.ok((await reader.scope('s').has(probes)).every(Boolean));
    } finally {
      await reader.close();
    }
  });
});
