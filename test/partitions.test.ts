import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { BloomFilter } from '../src/filters/bloom.js';
import { EpochHasher } from '../src/filters/epoch-hasher.js';
import { defaultPartitionCount, PARTITIONED_LAYOUT } from '../src/filters/partitions.js';
import { PositionPlan } from '../src/filters/positions.js';
import { blockedPositions, freshSeedHex } from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';
import { binomialUpper, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';
import { newEpochHeader } from '../src/epochs/create.js';
import { parseStrategy } from '../src/filters/strategy.js';
import { checkEpochSupported, readEpochHeader } from '../src/store/records.js';

const ROOT = join(import.meta.dirname, '..', '..');
const hash = await XxHash.load();

interface Vector {
  readonly key: string;
  readonly partitionSeed: string;
  readonly partitions: number;
  readonly seed: string;
  readonly mBits: number;
  readonly k: number;
  readonly partitionHash: string;
  readonly partition: number;
  readonly filterHash: string;
  readonly folded: number;
  readonly positions: number[];
}

/** The rows of "Test vectors of `partitioned-blocked`" in docs/format.md: the doc is their source. */
function docVectors(): Vector[] {
  const doc = readFileSync(join(ROOT, 'docs', 'format.md'), 'utf8');
  const start = doc.indexOf('#### Test vectors of `partitioned-blocked`');
  assert.ok(start >= 0, 'docs/format.md has the partitioned vectors');
  const vectors: Vector[] = [];
  for (const line of doc.slice(start).split('\n').slice(1)) {
    if (line.startsWith('#')) break;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim().replace(/^`|`$/g, ''));
    if (cells.length !== 11 || !/^[0-9a-f]{16}$/.test(cells[1]!)) continue;
    const [key, partitionSeed, partitions, seed, mBits, k, partitionHash, partition, filterHash, folded, positions] =
      cells as [string, ...string[]];
    vectors.push({
      key,
      partitionSeed: partitionSeed!,
      partitions: Number(partitions),
      seed: seed!,
      mBits: Number(mBits),
      k: Number(k),
      partitionHash: partitionHash!,
      partition: Number(partition),
      filterHash: filterHash!,
      folded: Number(folded),
      positions: positions!.split(' ').map(Number),
    });
  }
  return vectors;
}

/** XXH64 of a key under a seed, as 16 hex digits. */
function xxh64(key: string, seed: string): string {
  const words = new Uint32Array(2);
  hash.hashKeys([key], [BigInt(`0x${seed}`)], words, 2, 0);
  return words[1]!.toString(16).padStart(8, '0') + words[0]!.toString(16).padStart(8, '0');
}

describe('partitioned layout', () => {
  test('the docs/format.md vectors: the statements of the doc (in BigInt) and the implementation agree with every row', () => {
    const vectors = docVectors();
    assert.ok(vectors.length >= 5, `only ${vectors.length} vectors parsed`);
    for (const v of vectors) {
      assert.equal(xxh64(v.key, v.partitionSeed), v.partitionHash, v.key);
      assert.equal(xxh64(v.key, v.seed), v.filterHash, v.key);
      // The doc's statements, in BigInt: p = floor(ph * P / 2^32), lo' = p * b + (lo mod b).
      const ph = BigInt(`0x${v.partitionHash}`) >> 32n;
      const p = Number((ph * BigInt(v.partitions)) >> 32n);
      assert.equal(p, v.partition, v.key);
      const b = BigInt(v.mBits / 512 / v.partitions);
      const lo = BigInt(`0x${v.filterHash}`) & 0xffffffffn;
      assert.equal(Number(BigInt(p) * b + (lo % b)), v.folded, v.key);
      const reference = new Float64Array(v.k);
      blockedPositions(
        v.mBits / 512,
        v.k,
        Number(BigInt(`0x${v.filterHash}`) >> 32n),
        v.folded,
        reference,
        'xxh64-km-v2',
      );
      assert.deepEqual([...reference], v.positions, v.key);
      // The implementation: the epoch hasher folds, a blocked BloomFilter sets exactly those bits.
      const slices = [{ layout: PARTITIONED_LAYOUT, mBits: v.mBits, k: v.k, seeds: [v.seed] }];
      const hasher = new EpochHasher(hash, 'url', slices, { count: v.partitions, seed: v.partitionSeed });
      const words = new Uint32Array(hasher.stride);
      hasher.hash([v.key], words);
      assert.equal(hasher.partition(0), v.partition);
      assert.equal(words[0], v.folded);
      const filter = new BloomFilter({ layout: 'blocked', mBits: v.mBits, k: v.k });
      filter.add(words[1]!, words[0]!);
      const set: number[] = [];
      filter.bytes.forEach((byte, at) => {
        for (let bit = 0; bit < 8; bit++) if (byte & (1 << bit)) set.push(at * 8 + bit);
      });
      assert.deepEqual(
        set,
        [...new Set(v.positions)].sort((x, y) => x - y),
        v.key,
      );
    }
  });

  test('every slice puts a URL in its partition; the positions a store of partitions gets are the partition-relative bits', () => {
    const keys = Array.from({ length: 4_000 }, (_, i) => `https://example.org/p/${i}?q=${i * 13}`);
    const partitions = { count: 32, seed: freshSeedHex() };
    const slices = [
      { layout: PARTITIONED_LAYOUT, mBits: 512 * 32 * 3, k: 7, seeds: [freshSeedHex()] },
      { layout: PARTITIONED_LAYOUT, mBits: 512 * 32 * 11, k: 9, seeds: [freshSeedHex()] },
    ];
    const hasher = new EpochHasher(hash, 'url', slices, partitions);
    const words = new Uint32Array(keys.length * hasher.stride);
    hasher.hash(keys, words);
    const local = new PositionPlan(slices, 'xxh64-km-v2', partitions.count);
    const whole = new PositionPlan(slices, 'xxh64-km-v2');
    const perKey = 7 + 9;
    const localOut = Buffer.alloc(keys.length * perKey * 4);
    const wholeOut = Buffer.alloc(keys.length * perKey * 4);
    local.writeU32(words, hasher.stride, keys.length, localOut, (p) => p);
    whole.writeU32(words, hasher.stride, keys.length, wholeOut, (p) => p);
    const load = new Array<number>(partitions.count).fill(0);
    for (let i = 0; i < keys.length; i++) {
      const p = hasher.partition(i);
      load[p]!++;
      for (let j = 0; j < perKey; j++) {
        const slice = j < 7 ? slices[0]! : slices[1]!;
        const region = slice.mBits / partitions.count;
        const global = wholeOut.readUInt32LE((i * perKey + j) * 4);
        assert.equal(Math.floor(global / region), p, `key ${i}: position ${global} outside partition ${p}`);
        assert.equal(localOut.readUInt32LE((i * perKey + j) * 4), global - p * region);
      }
    }
    // Partitions are hash-chosen: every one takes its share (4,000 / 32 = 125, within 4.5 sigma).
    for (const n of load)
      assert.ok(n > 125 - 4.5 * Math.sqrt(125) && n < 125 + 4.5 * Math.sqrt(125), `loads ${load.join(' ')}`);
  });

  test('the default partition count: many small partitions, each at most 2 MiB in the first slice and at least 8 blocks', () => {
    assert.equal(defaultPartitionCount(512 * 8), 1);
    assert.equal(defaultPartitionCount(512 * 100), 8);
    assert.equal(defaultPartitionCount(9_585_152), 64);
    const big = 8 * 2 ** 30 * 8; // 8 GiB of bits: 4096 partitions of 2 MiB
    assert.equal(defaultPartitionCount(big), 4096);
    assert.equal(defaultPartitionCount(big * 4), 4096);
  });

  test('a header that does not fit its partitions is STORE_CORRUPT; the layout id is what an older reader refuses', async () => {
    const header = newEpochHeader('s', 1, {
      capacityUrls: 100_000,
      fprTarget: 0.01,
      strategy: parseStrategy('partitioned:8'),
      normalize: 'none',
      sizing: { policy: 'explicit', reason: 'test', inputs: {} },
    });
    assert.equal(header.partitions?.count, 8);
    assert.equal(header.slices[0]!.mBits % (8 * 512), 0);
    checkEpochSupported(readEpochHeader(JSON.parse(JSON.stringify(header))));
    const { partitions: _, ...without } = header;
    await expectCode('STORE_CORRUPT', async () => checkEpochSupported(without));
    await expectCode('STORE_CORRUPT', async () =>
      checkEpochSupported({ ...header, slices: [{ ...header.slices[0]!, mBits: header.slices[0]!.mBits + 512 }] }),
    );
    await expectCode('STORE_CORRUPT', async () => readEpochHeader({ ...header, partitions: { count: 0, seed: 'x' } }));
    // A version without the layout sees an unknown layout id: FORMAT_UNSUPPORTED (as this one does for a made-up one).
    await expectCode('FORMAT_UNSUPPORTED', async () =>
      checkEpochSupported({ ...header, slices: [{ ...header.slices[0]!, layout: 'partitioned-blocked-v9' }] }),
    );
  });

  test('a directory store holds partitioned epochs: exact add-if-absent, growth within the promise, rotation keeps the layout, an export answers alike', async () => {
    const benign = sharedUrls('crawl-benign-35k.txt');
    const benignSet = new Set(benign);
    const probes = sharedUrls('crawl-sitelist-15k.txt').filter((url) => !benignSet.has(url));
    const dir = tempDir();
    const store = await SeenStore.open(join(dir, 'store'));
    try {
      const scope = store.scope('p', { strategy: 'partitioned:16', capacityUrls: 8_000, fprTarget: 0.01 });
      const inserted = benign.slice(0, 24_000);
      const first = await scope.addIfAbsent(inserted);
      assert.ok(
        (await scope.addIfAbsent(inserted)).every((isNew) => !isNew),
        'a URL was new twice',
      );
      const details = await scope.epoch(1);
      assert.equal(details.strategy, 'partitioned');
      assert.equal(details.partitions?.count, 16);
      assert.ok(details.sliceDetails.length >= 2, 'the epoch grew');
      assert.ok((await scope.has(inserted)).every(Boolean), 'no false negatives');
      const falsePositives = (await scope.has(probes)).filter(Boolean).length;
      assert.ok(
        falsePositives <= binomialUpper(probes.length, 0.01),
        `${falsePositives} false positives of ${probes.length} at a 1 % promise`,
      );
      assert.ok(first.filter(Boolean).length >= inserted.length - binomialUpper(inserted.length, 0.01));
      const file = join(dir, 'p.ssx');
      await scope.export(file);
      const rotated = await scope.rotate();
      // The next epoch is partitioned too, its P planned anew from its size (here: small, 8 blocks a partition at least).
      assert.equal(rotated.opened.strategy, 'partitioned');
      assert.ok((rotated.opened.partitions?.count ?? 0) >= 1);
      const copy = await SeenStore.open(join(dir, 'copy'));
      try {
        await copy.import(file, { scope: 'q' });
        const sample = [...inserted.slice(0, 5_000), ...probes.slice(0, 5_000)];
        assert.deepEqual(await copy.scope('q').has(sample, { epochs: 1 }), await scope.has(sample, { epochs: 1 }));
      } finally {
        await copy.close();
      }
      await expectCode('USAGE', async () =>
        store.scope('x', { strategy: 'partitioned:5000' }).add(['https://example.com/']),
      );
    } finally {
      await store.close();
    }
  });
});
