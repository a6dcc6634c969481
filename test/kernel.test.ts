import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { mulberry32 } from '../src/cli/commands/demo.js';
import { BloomFilter, type Layout } from '../src/filters/bloom.js';
import { decideRange, type DecideTarget } from '../src/filters/decide.js';
import { KernelBits } from '../src/filters/kernel-bits.js';
import { Kernel } from '../src/hash/kernel.js';
import { HASH_SCHEMES, type HashSchemeId } from '../src/hash/scheme.js';
import { XxHash } from '../src/hash/xxhash.js';
import { SeenStore } from '../src/index.js';
import { ROOT, allSharedUrls, utf8Lines } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

/** Slices of filters: [filters per slice] with a geometry each; the last slice is the newest. */
interface Shape {
  readonly name: string;
  readonly layout: Layout;
  readonly mBits: number;
  readonly k: number;
  readonly filtersPerSlice: readonly number[];
}

const SHAPES: readonly Shape[] = [
  { name: 'one classic filter', layout: 'classic', mBits: 512 * 1500, k: 7, filtersPerSlice: [1] },
  { name: 'one blocked filter', layout: 'blocked', mBits: 512 * 1500, k: 8, filtersPerSlice: [1] },
  {
    name: 'small classic filters, two slices of two (fills up: false positives)',
    layout: 'classic',
    mBits: 512 * 37,
    k: 3,
    filtersPerSlice: [2, 2],
  },
  { name: 'blocked, three slices', layout: 'blocked', mBits: 512 * 301, k: 5, filtersPerSlice: [1, 2, 1] },
];

/** The filters of a shape, in JavaScript memory or placed in `kernel`. */
function build(shape: Shape, scheme: HashSchemeId, kernel?: KernelBits): BloomFilter[][] {
  const regionBytes = 512;
  return shape.filtersPerSlice.map((n) =>
    Array.from({ length: n }, () => {
      const geometry = { layout: shape.layout, mBits: shape.mBits, k: shape.k };
      return new BloomFilter(geometry, { regionBytes, scheme, memory: kernel?.place(geometry, regionBytes) ?? false });
    }),
  );
}

function target(slices: BloomFilter[][]): DecideTarget {
  let at = 0;
  const ats = slices.map((filters) => {
    const sliceAt = at;
    at += 2 * filters.length;
    return sliceAt;
  });
  return {
    older: slices.slice(0, -1).map((filters, j) => ({ filters, at: ats[j]! })),
    newest: slices.at(-1)!,
    newestAt: ats.at(-1)!,
    stride: at,
  };
}

describe('the hot-path kernel (kernel.wat)', () => {
  test('the committed wasm is what src/hash/kernel.wat compiles to', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-kernel.mjs'), '--check'], {
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
  });

  test('UTF-8 keys hashed in one pass under several seeds equal xxhash-wasm key by key: every length to 300, real URLs', async () => {
    const hash = await XxHash.load();
    const urls = allSharedUrls().slice(0, 20_000);
    for (let n = 0; n <= 300; n++) urls.push('é'.repeat(n % 7) + 'x'.repeat(n));
    const keys = utf8Lines(urls);
    const seeds = [0n, 0xffffffffffffffffn, 0x0123456789abcdefn];
    const stride = 2 * seeds.length + 4;
    const out = new Uint32Array(stride * urls.length);
    hash.hashKeys(keys, seeds, out, stride, 4);
    const one = new Uint32Array(2);
    urls.forEach((url, i) => {
      seeds.forEach((seed, s) => {
        hash.hashInto(url, seed, one, 0);
        const at = i * stride + 4 + 2 * s;
        if (out[at] !== one[0] || out[at + 1] !== one[1])
          assert.fail(`key ${i} (${JSON.stringify(url.slice(0, 40))}) seed ${s} differs`);
      });
    });
  });

  test('controlAt finds what a byte-by-byte reading finds: the first control byte, line ends (LF, a CR before an LF) left aside', () => {
    const kernel = new Kernel(false);
    const next = mulberry32(11);
    // Mostly URL bytes, with every kind of byte the scan tells apart: controls, LF, CR, DEL, space, 0x80 and up.
    const special = [0x00, 0x01, 0x09, 0x0a, 0x0a, 0x0d, 0x0d, 0x1b, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xc3, 0xff];
    for (let round = 0; round < 4_000; round++) {
      const length = Math.floor(next() * 300);
      const at = kernel.scratch(length + 64) + Math.floor(next() * 32);
      const bytes = kernel.bytes;
      // Rare odd bytes, so that a control byte often sits far in, past several 64-byte chunks.
      const rate = [0.001, 0.02, 0.2][round % 3]!;
      for (let i = 0; i < length; i++)
        bytes[at + i] =
          next() < rate ? special[Math.floor(next() * special.length)]! : 0x21 + Math.floor(next() * 0x5d);
      // CRLFs at the edges of the chunks, and at the range's end (its LF past `to` does not count).
      if (length > 70 && round % 5 === 0) bytes.set([0x0d, 0x0a], at + 63);
      if (length > 70 && round % 7 === 0) bytes.set([0x0d, 0x0a], at + 64);
      if (length > 2 && round % 11 === 0) bytes.set([0x0d, 0x0a], at + length - 1);
      const from = at + Math.floor(next() * Math.min(length + 1, 70));
      const to = at + length;
      assert.equal(
        kernel.controlAt(from, to),
        referenceControlAt(bytes, from, to),
        `round ${round}: from ${from - at}, to ${length}`,
      );
    }
  });

  test('hashRanges with controls stops at the first key holding a control byte, at every length and place; without, hashes every key', () => {
    const kernel = new Kernel(false);
    const controls = [0x00, 0x09, 0x0a, 0x0d, 0x1f, 0x7f];
    const clean = [0x20, 0x61, 0x7e, 0x80, 0xc3, 0xff];
    const keyCount = 3;
    for (let length = 0; length <= 80; length++) {
      for (let place = -1; place < length; place++) {
        // Three keys; the middle one holds a control byte at `place` (none when -1), the others none.
        const rangesAt = kernel.scratch(8 * keyCount + 8 + 8 * keyCount + 3 * (length + 16));
        const seedsAt = rangesAt + 8 * keyCount;
        const outAt = seedsAt + 8;
        const keysAt = outAt + 8 * keyCount;
        const bytes = kernel.bytes;
        const ranges = new Uint32Array(kernel.buffer, rangesAt, 2 * keyCount);
        for (let k = 0; k < keyCount; k++) {
          const start = keysAt + k * (length + 16) + (k % 2);
          for (let i = 0; i < length; i++) bytes[start + i] = clean[(i + k + length) % clean.length]!;
          if (k === 1 && place >= 0) bytes[start + place] = controls[(place + length) % controls.length]!;
          // Control bytes just outside the key are not its own.
          bytes[start - 1] = 0x00;
          bytes[start + length] = 0x0a;
          ranges[2 * k] = start;
          ranges[2 * k + 1] = start + length;
        }
        assert.equal(
          kernel.hashRanges(rangesAt, keyCount, seedsAt, 1, outAt, 8, true),
          place >= 0 ? 1 : -1,
          `length ${length}, control at ${place}`,
        );
        assert.equal(kernel.hashRanges(rangesAt, keyCount, seedsAt, 1, outAt, 8, false), -1);
      }
    }
  });

  for (const scheme of HASH_SCHEMES) {
    for (const shape of SHAPES) {
      test(`${scheme}, ${shape.name}: the kernel's decision equals decideRange: answers, bits, dirty regions, counts`, async () => {
        const hash = await XxHash.load();
        const urls = allSharedUrls().slice(0, 12_000);
        // Every URL twice, and a run given again later: new once, then seen.
        const batch = [...urls, ...urls.slice(0, 3_000)];
        const js = build(shape, scheme);
        const kernel = new KernelBits();
        const placed = build(shape, scheme, kernel);
        const jsTarget = target(js);
        const kernelTarget = target(placed);
        const words = new Uint32Array(batch.length * jsTarget.stride);
        const seeds = Array.from(
          { length: jsTarget.stride / 2 },
          (_, f) => (BigInt(f + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn,
        );
        hash.hashKeys(utf8Lines(batch), seeds, words, jsTarget.stride, 0);
        // Older slices hold the first 2,000 URLs already (their bits set in both copies alike).
        for (const slices of [js, placed])
          for (const filters of slices.slice(0, -1))
            filters.forEach((filter, f) => filter.addAll(words, 2 * f, jsTarget.stride, 2_000));
        const jsFlags = new Uint8Array(batch.length);
        const kernelFlags = new Uint8Array(batch.length);
        // In steps with a room limit, as a slice filling up decides them.
        for (let from = 0; from < batch.length; ) {
          const room = 1 + (from % 4_000);
          const expected = decideRange(jsTarget, words, from, batch.length, room, jsFlags);
          const got = kernel.decide(kernelTarget, words, from, batch.length, room, kernelFlags);
          assert.deepEqual(got, expected, `step from ${from}`);
          from += expected.consumed;
        }
        assert.deepEqual(kernelFlags, jsFlags);
        js.flat().forEach((filter, f) => {
          const other = placed.flat()[f]!;
          assert.ok(Buffer.from(other.bytes).equals(Buffer.from(filter.bytes)), `filter ${f}: the same bits`);
          assert.deepEqual(other.dirtyRegions(), filter.dirtyRegions(), `filter ${f}: the same dirty regions`);
          assert.equal(other.onesBits, filter.onesBits, `filter ${f}: the same count of set bits`);
        });
        assert.ok(jsFlags.includes(1) && jsFlags.includes(0), 'the batch holds new and seen URLs');
      });
    }
  }

  test('a filter placed after a batch was decided starts with no bit set (the scratch held the batch there)', () => {
    const kernel = new KernelBits();
    const geometry = { layout: 'classic' as const, mBits: 512 * 64, k: 4 };
    const first = new BloomFilter(geometry, { regionBytes: 512, memory: kernel.place(geometry, 512) ?? false });
    const words = new Uint32Array(2 * 50_000).map((_, i) => Math.imul(i + 1, 0x9e3779b1) >>> 0);
    kernel.decide(
      { older: [], newest: [first], newestAt: 0, stride: 2 },
      words,
      0,
      50_000,
      Infinity,
      new Uint8Array(50_000),
    );
    const second = new BloomFilter(geometry, { regionBytes: 512, memory: kernel.place(geometry, 512) ?? false });
    assert.equal(
      second.bytes.every((byte) => byte === 0),
      true,
    );
    assert.deepEqual(second.dirtyRegions(), []);
  });

  test('placing a filter does not make its pages resident: a 512 MB filter adds a few MB of RSS until its bits are touched', () => {
    // In a fresh process, so that the figure is this filter's alone. Zero-filling the placed bytes
    // made an epoch opened for one query resident whole (131 MB for a 100M-capacity store).
    const script = `
      const { KernelBits } = await import(${JSON.stringify(join(ROOT, 'dist', 'src', 'filters', 'kernel-bits.js'))});
      const kernel = new KernelBits();
      const before = process.memoryUsage.rss();
      const memory = kernel.place({ layout: 'classic', mBits: 8 * 512 * 2 ** 20, k: 7 }, 65536);
      const view = new Uint8Array(memory.bytes, memory.bytesAt, 512 * 2 ** 20);
      const placed = process.memoryUsage.rss();
      view[view.length - 1] = 1;
      process.stdout.write(JSON.stringify({ grewMB: (placed - before) / 2 ** 20, zero: view[0] === 0 && view[view.length >> 1] === 0 }));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    const { grewMB, zero } = JSON.parse(child.stdout) as { grewMB: number; zero: boolean };
    assert.ok(zero);
    assert.ok(grewMB < 64, `placing a 512 MB filter grew RSS by ${grewMB.toFixed(0)} MB`);
  });

  test('an LMDB store decides its batches in the kernel with one thread, and not with a bit thread (threads.test.ts compares the two)', async () => {
    const decide = KernelBits.prototype.decide;
    let inKernel = 0;
    KernelBits.prototype.decide = function (this: KernelBits, ...args: Parameters<KernelBits['decide']>) {
      const decided = decide.apply(this, args);
      if (decided !== undefined) inKernel++;
      return decided;
    };
    try {
      const urls = allSharedUrls().slice(0, 5_000);
      for (const strategy of ['classic', 'blocked', 'spatial:2', 'eigen:3']) {
        for (const threads of [1, 2]) {
          inKernel = 0;
          const store = await SeenStore.open(tempDir(), { threads });
          const answers = await store
            .scope('t', { capacityUrls: 10_000, strategy })
            .addIfAbsent([...urls, ...urls.slice(0, 100)]);
          await store.close();
          assert.equal(answers.slice(-100).some(Boolean), false, `${strategy}, threads ${threads}: repeats are seen`);
          if (threads === 1) assert.ok(inKernel > 0, `${strategy}: decided in the kernel`);
          else assert.equal(inKernel, 0, `${strategy}: the bit thread decides`);
        }
      }
    } finally {
      KernelBits.prototype.decide = decide;
    }
  });

  test('a filter the kernel does not hold keeps decideRange: decide answers undefined', () => {
    const kernel = new KernelBits();
    const placed = new BloomFilter(
      { layout: 'classic', mBits: 512 * 8, k: 3 },
      { memory: kernel.place({ layout: 'classic', mBits: 512 * 8, k: 3 }, 512) ?? false },
    );
    const elsewhere = new BloomFilter({ layout: 'classic', mBits: 512 * 8, k: 3 });
    const words = new Uint32Array(4);
    assert.equal(
      kernel.decide(
        { older: [{ filters: [elsewhere], at: 0 }], newest: [placed], newestAt: 2, stride: 4 },
        words,
        0,
        1,
        1,
        new Uint8Array(1),
      ),
      undefined,
    );
  });
});

/** kernel.wat controlAt, byte by byte. */
function referenceControlAt(bytes: Uint8Array, from: number, to: number): number {
  for (let p = from; p < to; p++) {
    const b = bytes[p]!;
    if (b >= 0x20 && b !== 0x7f) continue;
    if (b === 0x0a || (b === 0x0d && p + 1 < to && bytes[p + 1] === 0x0a)) continue;
    return p;
  }
  return to;
}
