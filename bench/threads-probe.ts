/**
 * Why SeenStoreOptions.threads uses one bit thread, not two threads sharing the bits:
 *   node dist/bench/threads-probe.js [DATASET_FILE]
 * On one thread, over the same hashes of the data set's insert share, times three ways to test
 * and set a classic filter's bits (xxh64-km-v2 positions, as BloomFilter.add computes them):
 *   all        every position of every URL (what one bit thread does)
 *   half       every URL's positions computed, only those in the first half of the array set
 *              (what each of two threads would do if the bits were split between them)
 *   atomic     every position set with Atomics.or (what each of two threads would do if the URLs
 *              were split between them and the array were shared)
 * For two threads sharing the bits to pay, `half` or `atomic` must cost well under `all`.
 * Filters sized for the data set (cache-resident) and for 100M URLs (memory-bound). Medians of 5.
 */
import { planSlice, DEFAULT_GROWTH } from '../src/filters/scalable.js';
import { Modulus, kmStep } from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';
import { readUrls, splitUrls } from './data.js';

function next(p: number, step: number, m: number): number {
  const q = (p + step - m) | 0;
  return q + ((q >> 31) & m);
}

/** Sets the positions of every hash that fall in bytes [lo, hi); returns the bits newly set. */
function setRange(
  bytes: Uint8Array,
  m: number,
  k: number,
  words: Uint32Array,
  count: number,
  lo: number,
  hi: number,
): number {
  const modulus = new Modulus(m);
  const span = hi - lo;
  let set = 0;
  for (let i = 0; i < count; i++) {
    const h = words[2 * i + 1]!;
    let step = kmStep(m, h) | 0;
    let p = modulus.reduce(h, words[2 * i]!) | 0;
    let grow = 0;
    for (let j = 0; j < k; j++) {
      const at = p >>> 3;
      if ((at - lo) >>> 0 < span) {
        const old = bytes[at]!;
        const clear = (~old >>> (p & 7)) & 1;
        bytes[at] = old | (1 << (p & 7));
        set += clear;
      }
      p = next(p, step, m);
      grow += 1;
      step = next(step, grow, m);
    }
  }
  return set;
}

/** Sets every position of every hash with Atomics.or on 32-bit cells; returns the bits newly set. */
function setAtomic(cells: Int32Array, m: number, k: number, words: Uint32Array, count: number): number {
  const modulus = new Modulus(m);
  let set = 0;
  for (let i = 0; i < count; i++) {
    const h = words[2 * i + 1]!;
    let step = kmStep(m, h) | 0;
    let p = modulus.reduce(h, words[2 * i]!) | 0;
    let grow = 0;
    for (let j = 0; j < k; j++) {
      const bit = 1 << (p & 31);
      if ((Atomics.or(cells, p >>> 5, bit) & bit) === 0) set++;
      p = next(p, step, m);
      grow += 1;
      step = next(step, grow, m);
    }
  }
  return set;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const file =
    process.argv[2] ?? new URL('../../bench/.data/package-repos-2.0.3148.usable2.txt', import.meta.url).pathname;
  const { insert } = splitUrls(readUrls(file));
  const hash = await XxHash.load();
  const words = new Uint32Array(2 * insert.length);
  hash.hashKeys(insert, [0x5eed5eedn], words, 2, 0);
  console.log(`${insert.length.toLocaleString('en-US')} URLs of ${file}; ns per URL, one thread, median of 5`);
  for (const capacity of [insert.length, 100_000_000]) {
    const { mBits: m, k } = planSlice(0, capacity, 0.01, DEFAULT_GROWTH);
    const times: Record<string, number[]> = { all: [], half: [], atomic: [] };
    for (let round = 0; round < 5; round++) {
      for (const way of Object.keys(times)) {
        const shared = new SharedArrayBuffer(m / 8);
        const start = process.hrtime.bigint();
        if (way === 'atomic') setAtomic(new Int32Array(shared), m, k, words, insert.length);
        else setRange(new Uint8Array(shared), m, k, words, insert.length, 0, way === 'all' ? m / 8 : m / 16);
        times[way]!.push(Number(process.hrtime.bigint() - start) / insert.length);
      }
    }
    const all = median(times.all!);
    const cells = Object.entries(times).map(
      ([way, ns]) => `${way} ${median(ns).toFixed(0)} ns (${(median(ns) / all).toFixed(2)}x all)`,
    );
    console.log(`filter of ${(m / 8 / 2 ** 20).toFixed(1)} MB, k ${k}: ${cells.join(', ')}`);
  }
}

await main();
