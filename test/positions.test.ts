import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BloomFilter } from '../src/filters/bloom.js';
import { CountingFilter } from '../src/filters/counting.js';
import { EpochHasher } from '../src/filters/epoch-hasher.js';
import { NO_POSITION, PositionPlan } from '../src/filters/positions.js';
import { freshSeedHex } from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';

// The positions the Redis backend sends (filters/positions.ts) must be the bits the filters set
// themselves: one layout, whatever stores the bits. A filter that sets exactly the listed
// positions, and nothing else, is the check.
const hash = await XxHash.load();
const keys = Array.from({ length: 2_000 }, (_, i) => `https://example.org/a/${i}?q=${i * 7}`);

for (const scheme of ['xxh64-km-v2', 'xxh64-km-v1'] as const) {
  for (const layout of ['classic', 'blocked'] as const) {
    test(`positions of ${layout} filters under ${scheme} are the bits BloomFilter sets`, () => {
      const slices = [
        { layout, mBits: 512 * 97, k: 7, seeds: [freshSeedHex()] },
        { layout, mBits: 512 * 3001, k: 11, seeds: [freshSeedHex(), freshSeedHex()] },
      ];
      const hasher = new EpochHasher(hash, 'url', slices);
      const words = new Uint32Array(keys.length * hasher.stride);
      hasher.hash(keys, words);
      const plan = new PositionPlan(slices, scheme);
      assert.equal(plan.perKey, 7 + 11 + 11);
      const out = Buffer.alloc(keys.length * plan.perKey * 4);
      plan.writeU32(words, hasher.stride, keys.length, out, (p) => p);
      // A buffer that is not 4-byte aligned takes the other path: the same bytes.
      const unaligned = Buffer.alloc(out.length + 1).subarray(1);
      plan.writeU32(words, hasher.stride, keys.length, unaligned, (p) => p);
      assert.ok(unaligned.equals(out), 'an unaligned buffer gets the same positions');
      plan.filters.forEach(({ geometry }, f) => {
        const filter = new BloomFilter(geometry, { scheme });
        const expected = new Uint8Array(geometry.mBits / 8);
        const offset = plan.filters.slice(0, f).reduce((sum, other) => sum + other.geometry.k, 0);
        for (let i = 0; i < keys.length; i++) {
          filter.add(words[i * hasher.stride + 2 * f + 1]!, words[i * hasher.stride + 2 * f]!);
          for (let j = 0; j < geometry.k; j++) {
            const p = out.readUInt32LE((i * plan.perKey + offset + j) * 4);
            expected[p >>> 3]! |= 1 << (p & 7);
          }
        }
        assert.deepEqual(filter.bytes, expected, `filter ${f}`);
      });
    });
  }
}

test('positions of a counting slice are the counters CountingFilter increments, each once', () => {
  const slices = [
    {
      layout: 'classic',
      mBits: 8 * 4096,
      k: 6,
      seeds: [freshSeedHex(), freshSeedHex()],
      keying: { kind: 'counting-v1' as const, secondaryCells: 1024 },
    },
  ];
  const hasher = new EpochHasher(hash, 'url', slices);
  const words = new Uint32Array(keys.length * hasher.stride);
  hasher.hash(keys, words);
  const plan = new PositionPlan(slices, 'xxh64-km-v2');
  const out = Buffer.alloc(keys.length * plan.perKey * 4);
  plan.writeU32(words, hasher.stride, keys.length, out, () => {
    throw new Error('counter positions are never mapped');
  });
  const cells = [4096, 1024];
  plan.filters.forEach((_, f) => {
    const filter = new CountingFilter(cells[f]!, 6);
    const expected = new Uint8Array(cells[f]!);
    for (let i = 0; i < keys.length; i++) {
      filter.increment(words[i * hasher.stride + 2 * f + 1]!, words[i * hasher.stride + 2 * f]!);
      for (let j = 0; j < 6; j++) {
        const p = out.readUInt32LE((i * plan.perKey + 6 * f + j) * 4);
        if (p !== NO_POSITION) expected[p] = Math.min(255, expected[p]! + 1);
      }
    }
    assert.deepEqual(filter.counters, expected, `filter ${f}`);
  });
});
