import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BloomFilter, type Layout } from '../src/filters/bloom.js';
import { HASH_SCHEMES } from '../src/hash/scheme.js';
import { xorshift32 } from './helpers/data.js';

/** Positions of a single hash (hi, lo) by positionsOf. */
function positions(filter: BloomFilter, hi: number, lo: number): number[] {
  const out = new Float64Array(filter.geometry.k);
  filter.positionsOf(new Uint32Array([lo, hi]), 0, 2, 0, 1, out);
  return [...out];
}

function setBits(filter: BloomFilter, near: readonly number[]): number[] {
  const found = new Set<number>();
  for (const p of near) {
    // The bits set lie in the bytes of the positions: scanning those bytes finds them all.
    const byte = Math.floor(p / 8);
    for (let b = 0; b < 8; b++) if ((filter.bytes[byte]! & (1 << b)) !== 0) found.add(byte * 8 + b);
  }
  return [...found].sort((a, b) => a - b);
}

describe('BloomFilter.positionsOf: the positions has() tests and add() sets', () => {
  // 2^31 + 512 bits: positions beyond int32, the arithmetic of filters of 1B URLs (256 MiB of
  // address space; only the pages of the bits set are ever touched).
  const sizes: [Layout, number][] = [
    ['classic', 512 * 1000],
    ['blocked', 512 * 1000],
    ['classic', 2 ** 31 + 512],
    ['blocked', 2 ** 31 + 512],
  ];
  for (const scheme of HASH_SCHEMES) {
    for (const [layout, mBits] of sizes) {
      test(`${scheme}, ${layout}, ${mBits} bits`, () => {
        const next = xorshift32(mBits ^ 0x5eed);
        for (let trial = 0; trial < 50; trial++) {
          const filter = new BloomFilter({ layout, mBits, k: 7 }, { scheme, regionBytes: 65_472 });
          const hi = next() >>> 0;
          const lo = next() >>> 0;
          const expected = positions(filter, hi, lo);
          assert.ok(expected.every((p) => Number.isInteger(p) && p >= 0 && p < mBits));
          assert.equal(filter.has(hi, lo), false);
          filter.add(hi, lo);
          assert.deepEqual(
            setBits(filter, expected),
            [...new Set(expected)].sort((a, b) => a - b),
            'add() set these bits',
          );
          assert.equal(filter.onesBits, new Set(expected).size, 'and no other');
          assert.equal(filter.has(hi, lo), true);
          const touched = new Uint8Array(filter.regionCount);
          filter.markRegions(new Uint32Array([lo, hi]), 0, 2, 0, 1, touched);
          assert.deepEqual(
            [...touched.keys()].filter((r) => touched[r] === 1),
            [...new Set(expected.map((p) => Math.floor(p / 8 / 65_472)))].sort((a, b) => a - b),
          );
        }
      });
    }
  }
});
