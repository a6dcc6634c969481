import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BloomFilter } from '../src/filters/bloom.js';
import { regionReciprocal } from '../src/filters/regions.js';
import {
  HASH_SCHEMES,
  Modulus,
  blockedPositions,
  classicPositions,
  modFast,
  seedFromHex,
  MAX_FILTER_BITS,
  type HashSchemeId,
} from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';
import { sharedUrls, xorshift32 } from './helpers/data.js';

const MASK64 = (1n << 64n) - 1n;
const P1 = 0x9e3779b185ebca87n;
const P2 = 0xc2b2ae3d27d4eb4fn;
const P3 = 0x165667b19e3779f9n;
const P4 = 0x85ebca77c2b2ae63n;
const P5 = 0x27d4eb2f165667c5n;
const rotl = (x: bigint, r: bigint): bigint => ((x << r) | (x >> (64n - r))) & MASK64;
const round = (acc: bigint, input: bigint): bigint => (rotl((acc + input * P2) & MASK64, 31n) * P1) & MASK64;
const merge = (acc: bigint, value: bigint): bigint => ((acc ^ round(0n, value)) * P1 + P4) & MASK64;

/** XXH64 written from its specification with BigInt, independent of xxhash-wasm. */
function referenceXxh64(bytes: Uint8Array, seed: bigint): bigint {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = bytes.length;
  let at = 0;
  let h: bigint;
  if (len >= 32) {
    let v1 = (seed + P1 + P2) & MASK64;
    let v2 = (seed + P2) & MASK64;
    let v3 = seed;
    let v4 = (seed - P1) & MASK64;
    for (; at + 32 <= len; at += 32) {
      v1 = round(v1, view.getBigUint64(at, true));
      v2 = round(v2, view.getBigUint64(at + 8, true));
      v3 = round(v3, view.getBigUint64(at + 16, true));
      v4 = round(v4, view.getBigUint64(at + 24, true));
    }
    h = (rotl(v1, 1n) + rotl(v2, 7n) + rotl(v3, 12n) + rotl(v4, 18n)) & MASK64;
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = (seed + P5) & MASK64;
  }
  h = (h + BigInt(len)) & MASK64;
  for (; at + 8 <= len; at += 8) h = (rotl(h ^ round(0n, view.getBigUint64(at, true)), 27n) * P1 + P4) & MASK64;
  for (; at + 4 <= len; at += 4)
    h = (rotl(h ^ ((BigInt(view.getUint32(at, true)) * P1) & MASK64), 23n) * P2 + P3) & MASK64;
  for (; at < len; at++) h = (rotl(h ^ ((BigInt(bytes[at]!) * P5) & MASK64), 11n) * P1) & MASK64;
  h = ((h ^ (h >> 33n)) * P2) & MASK64;
  h = ((h ^ (h >> 29n)) * P3) & MASK64;
  return h ^ (h >> 32n);
}

/**
 * The schemes as docs/format.md states them, in BigInt: h1 = x mod m, h2 = 1 + (x >> 32) mod (m - 1),
 * position i = (h1 + i·h2) mod m under v1 and (h1 + i·h2 + (i³ − i)/6) mod m under v2.
 */
function referencePositions(x: bigint, m: number, k: number, scheme: HashSchemeId): number[] {
  const mm = BigInt(m);
  const h1 = x % mm;
  const h2 = 1n + ((x >> 32n) % (mm - 1n));
  const cubic = (i: bigint): bigint => (scheme === 'xxh64-km-v2' ? (i * i * i - i) / 6n : 0n);
  return Array.from({ length: k }, (_, i) => Number((h1 + BigInt(i) * h2 + cubic(BigInt(i))) % mm));
}

/**
 * The blocked layout as docs/format.md states it: block = lo mod (m / 512), c, d, e the 9-bit fields
 * of hi from bit 0, 9, 18; position i = (c + i·d + e·i(i − 1)/2 + (i³ − i)/6) mod 512 under v2,
 * (c + i·(d | 1)) mod 512 under v1.
 */
function referenceBlocked(x: bigint, m: number, k: number, scheme: HashSchemeId): number[] {
  const lo = x & 0xffffffffn;
  const hi = x >> 32n;
  const base = (lo % BigInt(m / 512)) * 512n;
  const [c, d, e] = [hi & 511n, (hi >> 9n) & 511n, (hi >> 18n) & 511n];
  return Array.from({ length: k }, (_, n) => {
    const i = BigInt(n);
    const inBlock =
      scheme === 'xxh64-km-v2' ? c + i * d + (e * i * (i - 1n)) / 2n + (i * i * i - i) / 6n : c + i * (d | 1n);
    return Number(base + (inBlock % 512n));
  });
}

/**
 * Pinned vectors (also in docs/format.md). A change here is a new hash scheme id, never an edit.
 * `classic` and `blocked` are v2's positions, `classicV1` and `blockedV1` v1's.
 */
const VECTORS: readonly {
  url: string;
  seed: string;
  m: number;
  k: number;
  hash: string;
  classic: readonly number[];
  classicV1: readonly number[];
  blocked: readonly number[];
  blockedV1: readonly number[];
}[] = [
  {
    url: 'https://example.com/',
    seed: '0000000000000000',
    m: 1024,
    k: 7,
    hash: 'a40dbfe31cfba1cf',
    classic: [463, 870, 254, 664, 53, 470, 892],
    classicV1: [463, 870, 253, 660, 43, 450, 857],
    blocked: [995, 706, 677, 909, 891, 624, 621],
    blockedV1: [995, 706, 929, 640, 863, 574, 797],
  },
  {
    url: 'https://example.com/',
    seed: '9e3779b97f4a7c15',
    m: 9_585_152,
    k: 7,
    hash: '9ce4a6f2566ed97f',
    classic: [8399743, 4713860, 1027978, 6927250, 3241373, 9140652, 5454784],
    classicV1: [8399743, 4713860, 1027977, 6927246, 3241363, 9140632, 5454749],
    blocked: [7166706, 7166789, 7166674, 7166874, 7166878, 7166687, 7166814],
    blockedV1: [7166706, 7166789, 7166872, 7166955, 7166526, 7166609, 7166692],
  },
  {
    url: 'http://www.goal.com/en-ca/',
    seed: '0123456789abcdef',
    m: 958_976,
    k: 7,
    hash: '59648727dc7525f7',
    classic: [343031, 266554, 190078, 113604, 37133, 919642, 843180],
    classicV1: [343031, 266554, 190077, 113600, 37123, 919622, 843145],
    blocked: [655655, 655722, 655367, 655615, 655443, 655364, 655379],
    blockedV1: [655655, 655722, 655789, 655856, 655411, 655478, 655545],
  },
  {
    url: 'https://bücher.example/straße?q=ü',
    seed: 'fedcba9876543210',
    m: 2 ** 33 + 512,
    k: 10,
    hash: '12da1abc55353ad0',
    classic: [
      6360306384, 6676589965, 6992873547, 7309157131, 7625440718, 7941724309, 8258007905, 8574291507, 300640012,
      616923629,
    ],
    classicV1: [
      6360306384, 6676589965, 6992873546, 7309157127, 7625440708, 7941724289, 8258007870, 8574291451, 300639928,
      616923509,
    ],
    blocked: [
      1786050236, 1786050505, 1786050445, 1786050057, 1786050366, 1786050349, 1786050519, 1786050365, 1786050400,
      1786050113,
    ],
    blockedV1: [
      1786050236, 1786050505, 1786050262, 1786050531, 1786050288, 1786050557, 1786050314, 1786050071, 1786050340,
      1786050097,
    ],
  },
  {
    url: 'https://example.com/y',
    seed: '0000000000000003',
    m: 1024,
    k: 7,
    hash: 'f4283b62e1931f9d',
    classic: [925, 85, 270, 457, 647, 841, 16],
    classicV1: [925, 85, 269, 453, 637, 821, 1005],
    blocked: [866, 895, 679, 731, 540, 619, 969],
    blockedV1: [866, 895, 924, 953, 982, 1011, 528],
  },
];

const hash = await XxHash.load();
const words = new Uint32Array(2);

function hashOf(url: string, seed: bigint): { hi: number; lo: number; x: bigint } {
  hash.hashInto(url, seed, words, 0);
  return { hi: words[1]!, lo: words[0]!, x: (BigInt(words[1]!) << 32n) | BigInt(words[0]!) };
}

describe('hash schemes xxh64-km-v1 and v2', () => {
  test('batch hashing (joined UTF-8 rounds) equals hashing key by key: ASCII, non-ASCII, astral, many rounds', async () => {
    const hash = await XxHash.load();
    const real = sharedUrls('crawl-sitelist-15k.txt');
    const odd = [
      'https://bücher.example/straße',
      'https://例え.jp/パス?q=値',
      'https://x.example/😀/🚀?e=🎉',
      'é',
      'a',
      `https://long.example/${'ü'.repeat(5000)}`,
    ];
    const keys: string[] = [];
    for (let i = 0; i < 60_000; i++)
      keys.push(i % 97 === 0 ? odd[i % odd.length]! : `${real[i % real.length]!}${'/seg'.repeat(i % 40)}`);
    const seeds = [0n, 0x9e3779b97f4a7c15n, 0xfedcba9876543210n];
    const stride = 2 * seeds.length + 2;
    const out = new Uint32Array(stride * keys.length);
    hash.hashKeys(keys, seeds, out, stride, 2);
    const one = new Uint32Array(2);
    for (let i = 0; i < keys.length; i++) {
      for (let s = 0; s < seeds.length; s++) {
        hash.hashInto(keys[i]!, seeds[s]!, one, 0);
        const at = i * stride + 2 + 2 * s;
        if (out[at] !== one[0] || out[at + 1] !== one[1])
          assert.fail(`key ${i} (${JSON.stringify(keys[i]!.slice(0, 40))}) seed ${s} differs`);
      }
    }
  });

  test('pinned test vectors: hash, classic and blocked positions', () => {
    for (const v of VECTORS) {
      const { hi, lo, x } = hashOf(v.url, seedFromHex(v.seed));
      assert.equal(x.toString(16).padStart(16, '0'), v.hash, v.url);
      const classic = new Float64Array(v.k);
      classicPositions(new Modulus(v.m), v.k, hi, lo, classic, 'xxh64-km-v2');
      assert.deepEqual(Array.from(classic), v.classic);
      classicPositions(new Modulus(v.m), v.k, hi, lo, classic, 'xxh64-km-v1');
      assert.deepEqual(Array.from(classic), v.classicV1);
      const blocked = new Float64Array(v.k);
      blockedPositions(v.m / 512, v.k, hi, lo, blocked, 'xxh64-km-v2');
      assert.deepEqual(Array.from(blocked), v.blocked);
      assert.deepEqual(Array.from(blocked), referenceBlocked(x, v.m, v.k, 'xxh64-km-v2'));
      blockedPositions(v.m / 512, v.k, hi, lo, blocked, 'xxh64-km-v1');
      assert.deepEqual(Array.from(blocked), v.blockedV1);
      assert.deepEqual(Array.from(blocked), referenceBlocked(x, v.m, v.k, 'xxh64-km-v1'));
    }
  });

  test('xxhash-wasm agrees with an independent XXH64 implementation on real URLs and odd lengths', () => {
    const encoder = new TextEncoder();
    const keys = [
      '',
      'a',
      'abc',
      'https://example.com/',
      'x'.repeat(31),
      'y'.repeat(32),
      'z'.repeat(33),
      'https://ü.example/€/😀'.repeat(5),
    ];
    for (let i = 0; i < 200; i++) keys.push(`https://host${i}.example/path/${'seg/'.repeat(i % 17)}?q=${i}`);
    for (const seedHex of ['0000000000000000', 'ffffffffffffffff', '0123456789abcdef']) {
      const seed = seedFromHex(seedHex);
      for (const key of keys) {
        if (key === '') continue;
        assert.equal(hashOf(key, seed).x, referenceXxh64(encoder.encode(key), seed), `${key} / ${seedHex}`);
      }
    }
  });

  test('double-precision positions equal the BigInt statement of the scheme, for m up to 2^40', () => {
    const rand32 = xorshift32(0x12345678);
    // 2^26 is the largest modulus of the one-multiplication path (scheme.ts Modulus); both sides of it.
    const sizes = [
      512,
      1024,
      958_976,
      2 ** 26 - 512,
      2 ** 26,
      2 ** 26 + 512,
      2 ** 31 + 512,
      2 ** 32,
      2 ** 32 + 512,
      2 ** 37 + 1536,
      MAX_FILTER_BITS,
    ];
    const out = new Float64Array(16);
    for (const scheme of HASH_SCHEMES) {
      for (const m of sizes) {
        const modulus = new Modulus(m);
        for (let i = 0; i < 2000; i++) {
          const hi = rand32();
          const lo = rand32();
          classicPositions(modulus, 16, hi, lo, out, scheme);
          const x = (BigInt(hi) << 32n) | BigInt(lo);
          assert.deepEqual(Array.from(out), referencePositions(x, m, 16, scheme), `${scheme} m=${m} hi=${hi} lo=${lo}`);
        }
        // Extremes, and the hi whose step is m/2 when m - 1 is below 2^32.
        for (const [hi, lo] of [
          [0xffffffff, 0xffffffff],
          [0xffffffff, 0],
          [0, 0xffffffff],
          [m % 2 ** 32, 0],
          [(m / 2 - 1) % 2 ** 32, 7],
          [1, 3],
        ] as const) {
          classicPositions(modulus, 16, hi, lo, out, scheme);
          assert.deepEqual(
            Array.from(out),
            referencePositions((BigInt(hi) << 32n) | BigInt(lo), m, 16, scheme),
            `${scheme} m=${m} hi=${hi} lo=${lo}`,
          );
        }
      }
    }
  });

  test('modFast equals the exact remainder across its domain, near multiples of m and at the top', () => {
    for (const m of [
      3,
      511,
      512,
      958_975,
      2 ** 26 - 1,
      2 ** 26,
      2 ** 31 + 511,
      2 ** 32 - 1,
      2 ** 37 + 1535,
      MAX_FILTER_BITS,
    ]) {
      // The whole stated domain, x + m <= 2^53.
      const top = Math.floor((2 ** 53 - m) / m);
      for (const q of [0, 1, 2, 12345, top - 1, top, Math.floor(top / 3), Math.floor(top / 7)]) {
        for (const delta of [-2, -1, 0, 1, 2, m - 1]) {
          const x = q * m + delta;
          if (x < 0 || x + m > 2 ** 53) continue;
          assert.equal(modFast(x, m), Number(BigInt(x) % BigInt(m)), `x=${x} m=${m}`);
        }
      }
    }
  });

  test('every part of a filter larger than 2^32 bits is reachable', () => {
    const m = 2 ** 33 + 512 * 3;
    const modulus = new Modulus(m);
    const buckets = new Uint32Array(64);
    const out = new Float64Array(8);
    const seed = seedFromHex('00000000deadbeef');
    let above32 = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const { hi, lo } = hashOf(`https://reach.example/${i}`, seed);
      classicPositions(modulus, 8, hi, lo, out);
      for (const p of out) {
        assert.ok(p >= 0 && p < m && Number.isInteger(p));
        if (p >= 2 ** 32) above32++;
        buckets[Math.floor((p / m) * 64)]!++;
      }
    }
    const expected = (n * 8) / 64;
    for (const count of buckets)
      assert.ok(Math.abs(count - expected) < 6 * Math.sqrt(expected), `bucket ${count} vs ${expected}`);
    assert.ok(above32 > n * 8 * 0.45, `${above32} positions above 2^32`);
  });

  test("filters on either side of 2^31 bits (int32 and double arithmetic) set exactly the scheme's positions and dirty regions", () => {
    const seed = seedFromHex('5eed5eed5eed5eed');
    const regionBytes = 65_472;
    const cases = [
      ['classic', 'xxh64-km-v1'],
      ['classic', 'xxh64-km-v2'],
      ['blocked', 'xxh64-km-v1'],
      ['blocked', 'xxh64-km-v2'],
    ] as const;
    for (const mBits of [2 ** 31 - 512, 2 ** 31, 512 * 1021]) {
      for (const [layout, scheme] of cases) {
        const filter = new BloomFilter({ layout, mBits, k: 8 }, { regionBytes, scheme });
        const positions = new Float64Array(8);
        const expectedBits = new Set<number>();
        const expectedRegions = new Set<number>();
        for (let i = 0; i < 3000; i++) {
          const { hi, lo } = hashOf(`https://edge.example/${mBits}/${layout}/${i}`, seed);
          if (layout === 'classic') classicPositions(new Modulus(mBits), 8, hi, lo, positions, scheme);
          else blockedPositions(mBits / 512, 8, hi, lo, positions, scheme);
          const fresh = [...positions].some((p) => !expectedBits.has(p));
          assert.equal(filter.has(hi, lo), !fresh);
          assert.equal(filter.add(hi, lo), fresh, `add of URL ${i} in a ${mBits}-bit ${layout} ${scheme} filter`);
          assert.equal(filter.add(hi, lo), false);
          assert.equal(filter.has(hi, lo), true);
          for (const p of positions) {
            if (fresh) expectedRegions.add(Math.floor(Math.floor(p / 8) / regionBytes));
            expectedBits.add(p);
          }
        }
        assert.equal(filter.onesBits, expectedBits.size);
        for (const p of expectedBits)
          assert.ok((filter.bytes[Math.floor(p / 8)]! & (1 << (p % 8))) !== 0, `bit ${p} clear`);
        if (layout === 'classic')
          assert.deepEqual(
            filter.dirtyRegions(),
            [...expectedRegions].sort((a, b) => a - b),
          );
      }
    }
  });

  test('v1 steps sharing factors with m repeat positions (m/2 gives two); v2 positions stay spread', () => {
    const m = 1024;
    const modulus = new Modulus(m);
    const out = new Float64Array(32);
    const fewest = { 'xxh64-km-v1': 32, 'xxh64-km-v2': 32 };
    // hi over every residue mod m - 1: every step the scheme can take.
    for (let hi = 0; hi < m - 1; hi++) {
      for (const scheme of HASH_SCHEMES) {
        classicPositions(modulus, 32, hi, 12345, out, scheme);
        fewest[scheme] = Math.min(fewest[scheme], new Set(out).size);
      }
    }
    assert.equal(fewest['xxh64-km-v1'], 2);
    assert.ok(fewest['xxh64-km-v2'] >= 24, `v2: as few as ${fewest['xxh64-km-v2']} distinct positions of 32`);
  });

  test('v2 removes the false-positive floor that v1 steps sharing factors with m put under small filters', () => {
    // 16,384 bits, k = 32, filled to half: a query's FPR is 0.5^32 when its positions are distinct
    // and unrelated to any stored URL's. v1: 15 steps of 16,383 have a period below 32 (m/2 gives
    // two positions: FPR 0.25), and a query with a stored URL's step and a start j steps off shares
    // 32 - |j| positions: a floor near 3e-5. v2 leaves only the chance that a query's (h1, h2) pair
    // equals a stored URL's, n / m^2 ~ 1.3e-6. 1,000,000 queries expect ~28 false positives under
    // v1 and ~1.3 under v2.
    let rand32 = xorshift32(0x9e3779b9);
    const falsePositives = (scheme: HashSchemeId): number => {
      rand32 = xorshift32(0x9e3779b9);
      const filter = new BloomFilter({ layout: 'classic', mBits: 16_384, k: 32 }, { scheme });
      while (filter.fillRatio < 0.5) filter.add(rand32(), rand32());
      let hits = 0;
      for (let i = 0; i < 1_000_000; i++) if (filter.has(rand32(), rand32())) hits++;
      return hits;
    };
    const v1 = falsePositives('xxh64-km-v1');
    const v2 = falsePositives('xxh64-km-v2');
    assert.ok(v1 >= 12, `v1: ${v1} false positives (the floor this test must see)`);
    assert.ok(v2 <= 6, `v2: ${v2} false positives`);
  });

  test('addAll (journal replay) and prepare + addPrepared (durable adds) act exactly as add, hash by hash', () => {
    const rand32 = xorshift32(0xa5a5a5a5);
    const count = 70_000; // more than one run of addAll's position buffer at k = 7
    const words = new Uint32Array(3 * count); // stride 3: hashes at 0 and 1 of each entry
    for (let i = 0; i < words.length; i++) words[i] = rand32();
    const cases = [
      ['classic', 'xxh64-km-v1'],
      ['classic', 'xxh64-km-v2'],
      ['blocked', 'xxh64-km-v2'],
    ] as const;
    for (const [layout, scheme] of cases) {
      const one = new BloomFilter({ layout, mBits: 512 * 4099, k: 7 }, { regionBytes: 4096, scheme });
      const all = new BloomFilter({ layout, mBits: 512 * 4099, k: 7 }, { regionBytes: 4096, scheme });
      for (let i = 0; i < count; i++) one.add(words[3 * i + 1]!, words[3 * i]!);
      all.addAll(words, 0, 3, count);
      assert.deepEqual(all.bytes, one.bytes, `${layout} ${scheme}`);
      assert.equal(all.onesBits, one.onesBits);
      assert.deepEqual(all.dirtyRegions(), one.dirtyRegions());
      // prepare + addPrepared (the durable add's path): the same answers as add, run by run; each
      // entry repeated so that half the answers are "seen".
      const viaAdd = new BloomFilter({ layout, mBits: 512 * 4099, k: 7 }, { regionBytes: 4096, scheme });
      const viaPrepared = new BloomFilter({ layout, mBits: 512 * 4099, k: 7 }, { regionBytes: 4096, scheme });
      const twice = new Uint32Array(4 * count);
      for (let i = 0; i < count; i++) {
        twice.set(words.subarray(3 * i, 3 * i + 2), 4 * i);
        twice.set(words.subarray(3 * i, 3 * i + 2), 4 * i + 2);
      }
      const run = viaPrepared.preparedRun;
      let seen = 0;
      for (let first = 0; first < 2 * count; first += run) {
        const last = Math.min(2 * count, first + run);
        const prepared = viaPrepared.prepare(twice, 0, 2, first, last);
        assert.equal(prepared, layout === 'classic');
        for (let i = first; i < last; i++) {
          const expected = viaAdd.add(twice[2 * i + 1]!, twice[2 * i]!);
          if (!expected) seen++;
          const got = prepared ? viaPrepared.addPrepared(i - first) : viaPrepared.add(twice[2 * i + 1]!, twice[2 * i]!);
          assert.equal(got, expected, `${layout} ${scheme} entry ${i}`);
        }
      }
      assert.ok(seen >= count, `${seen} repeats answered seen`);
      assert.deepEqual(viaPrepared.bytes, viaAdd.bytes);
      assert.deepEqual(viaPrepared.dirtyRegions(), viaAdd.dirtyRegions());
    }
  });

  test('the region of a byte by multiplication equals the division, at every region boundary', () => {
    for (const regionBytes of [64, 4096, 65_472, 65_536, 64_000_000]) {
      const perByte = regionReciprocal(regionBytes);
      for (let q = 0; q * regionBytes < 2 ** 31; q += regionBytes < 65_472 ? 997 : 1) {
        for (const at of [
          q * regionBytes - 1,
          q * regionBytes,
          q * regionBytes + 1,
          q * regionBytes + regionBytes - 1,
        ]) {
          if (at < 0 || at >= 2 ** 31) continue;
          assert.equal((at * perByte) | 0, Math.floor(at / regionBytes), `byte ${at}, regions of ${regionBytes}`);
        }
      }
    }
  });

  test('a real filter of more than 2^32 bits sets and finds bits beyond bit 2^32', () => {
    const mBits = 2 ** 32 + 2 ** 31;
    for (const layout of ['classic', 'blocked'] as const) {
      const filter = new BloomFilter({ layout, mBits, k: 7 });
      const seed = seedFromHex('0badc0de0badc0de');
      const urls = Array.from({ length: 5000 }, (_, i) => `https://big.example/${layout}/${i}`);
      for (const url of urls) {
        const { hi, lo } = hashOf(url, seed);
        assert.equal(filter.add(hi, lo), true);
      }
      const positions = new Float64Array(7);
      // Bits the filter holds set beyond 2^32 (read at the scheme's positions: a scan of the 256 MB
      // above 2^32 costs seconds where a first read of a page allocates it).
      let setBeyond = 0;
      for (const url of urls) {
        const { hi, lo } = hashOf(url, seed);
        assert.equal(filter.has(hi, lo), true);
        // The filter's inlined arithmetic sets exactly the scheme's positions.
        if (layout === 'classic') classicPositions(new Modulus(mBits), 7, hi, lo, positions);
        else blockedPositions(mBits / 512, 7, hi, lo, positions);
        for (const p of positions) {
          assert.ok((filter.bytes[Math.floor(p / 8)]! & (1 << (p % 8))) !== 0, `${url}: bit ${p} clear`);
          if (p >= 2 ** 32) setBeyond++;
        }
      }
      assert.ok(setBeyond > 0, `${layout}: no bit set beyond 2^32`);
    }
  });
});
