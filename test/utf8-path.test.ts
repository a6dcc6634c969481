import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { SeenStore, SeenStoreError, type Utf8Keys } from '../src/index.js';
import { forEachBatch, forEachUtf8Batch, type BatchOptions } from '../src/cli/input.js';
import { selectedUtf8Lines } from '../src/epochs/delivery.js';
import { firstInvalidUtf8Key, toKey } from '../src/url/normalize.js';
import { allSharedUrls } from './helpers/data.js';
import { CLI } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

/** Keys laid out as lines of one buffer, like an input block (separators kept). */
function asLines(urls: readonly string[], separator = '\n'): Utf8Keys {
  const parts: Buffer[] = [];
  const ranges = new Uint32Array(2 * urls.length);
  let at = 0;
  urls.forEach((url, i) => {
    const bytes = Buffer.from(url, 'utf8');
    ranges[2 * i] = at;
    ranges[2 * i + 1] = at + bytes.length;
    parts.push(bytes, Buffer.from(separator));
    at += bytes.length + separator.length;
  });
  return { bytes: Buffer.concat(parts), ranges, count: urls.length };
}

function options(overrides: Partial<BatchOptions> = {}): BatchOptions {
  return {
    batchSize: 1000,
    maxDelayMs: 1000,
    maxLineBytes: 65_536,
    onInvalid: 'skip',
    accept: (line) => toKey(line, 'none') !== undefined,
    warn: () => undefined,
    ...overrides,
  };
}

/** A readable that yields `data` in chunks cut at pseudo-random places (inside characters too). */
function chunked(data: Buffer, seed: number): Readable {
  const chunks: Buffer[] = [];
  let state = seed;
  for (let at = 0; at < data.length; ) {
    state = (state * 1_103_515_245 + 12_345) >>> 0;
    const size = 1 + (state % 97);
    chunks.push(data.subarray(at, at + size));
    at += size;
  }
  return Readable.from(chunks);
}

describe('UTF-8 byte path (lines hashed as bytes, no string per line)', () => {
  test('the byte batcher yields the same lines as the string splitter, however the input is chunked', async () => {
    const input = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('https://a.example/1\r\n\n\nhttps://b.example/é\nhttps://c.example/😀?q=ü\r\n'),
      Buffer.from([0x68, 0xff, 0xfe, 0x0a]), // invalid UTF-8
      Buffer.from(`https://long.example/${'x'.repeat(70_000)}\n`),
      Buffer.from('https://d.example/after-long\nno-final-newline'),
    ]);
    for (const seed of [1, 2, 3, 4, 5]) {
      const viaStrings: string[] = [];
      const warned: string[] = [];
      const stringCounts = await forEachBatch(
        chunked(input, seed),
        options({ warn: (m) => warned.push(m) }),
        async (lines) => {
          viaStrings.push(...lines);
        },
      );
      const viaBytes: string[] = [];
      const byteWarned: string[] = [];
      const byteCounts = await forEachUtf8Batch(
        chunked(input, seed),
        options({ warn: (m) => byteWarned.push(m) }),
        async (batch) => {
          for (let i = 0; i < batch.count; i++)
            viaBytes.push(Buffer.from(batch.bytes).toString('utf8', batch.ranges[2 * i], batch.ranges[2 * i + 1]));
        },
      );
      assert.deepEqual(viaBytes, viaStrings, `seed ${seed}`);
      assert.deepEqual(byteCounts, stringCounts);
      assert.deepEqual(byteWarned, warned, 'the same lines are reported, with the same line numbers');
      assert.deepEqual(viaBytes, [
        'https://a.example/1',
        'https://b.example/é',
        'https://c.example/😀?q=ü',
        'https://d.example/after-long',
        'no-final-newline',
      ]);
      assert.equal(warned.length, 2);
    }
  });

  test('URL keys: the byte path takes and refuses the same lines as the string path, control characters anywhere, however the input is chunked', async () => {
    let state = 7;
    const next = (): number => {
      state = (state * 1_103_515_245 + 12_345) >>> 0;
      return state / 2 ** 32;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const controls = [0x00, 0x01, 0x08, 0x09, 0x0b, 0x0c, 0x0d, 0x1b, 0x1f, 0x7f].map((code) =>
      String.fromCharCode(code),
    );
    const lines: string[] = [];
    for (let i = 0; i < 6_000; i++) {
      // Lengths that put the control character in every place of the scan's 64-byte chunks.
      let line = `https://site${i % 13}.example/${'p'.repeat(Math.floor(next() * 150))}/${i}${next() < 0.1 ? 'é' : ''}`;
      const kind = next();
      if (kind < 0.15) {
        const at = Math.floor(next() * (line.length + 1));
        line = `${line.slice(0, at)}${pick(controls)}${line.slice(at)}`;
      } else if (kind < 0.2) {
        line = `${pick([' ', '\t', '\u000b', '\u000c'])}${line}${pick([' ', '\t', '\r', '\u000c'])}`;
      } else if (kind < 0.23) {
        line = pick(['not a url', '', '\u0000', '/relative', `mailto:${i}@a.example`]);
      }
      lines.push(line);
    }
    const input = Buffer.from(lines.map((line, i) => `${line}${i % 3 === 0 ? '\r\n' : '\n'}`).join(''));
    let viaBytesOnce: string[] = [];
    const urlOptions = (warn: (message: string) => void): BatchOptions =>
      options({ accept: (line) => toKey(line, 'url') !== undefined, urlKeys: true, warn, batchSize: 700 });
    for (const seed of [1, 2, 3]) {
      const viaStrings: string[] = [];
      const warned: string[] = [];
      await forEachBatch(
        chunked(input, seed),
        urlOptions((m) => warned.push(m)),
        async (batch) => {
          viaStrings.push(...batch.map((line) => toKey(line, 'url')!));
        },
      );
      const viaBytes: string[] = [];
      const byteWarned: string[] = [];
      await forEachUtf8Batch(
        chunked(input, seed),
        { ...urlOptions((m) => byteWarned.push(m)), inFlight: 2 },
        async (batch) => {
          for (let i = 0; i < batch.count; i++)
            viaBytes.push(Buffer.from(batch.bytes).toString('utf8', batch.ranges[2 * i], batch.ranges[2 * i + 1]));
        },
      );
      assert.deepEqual(viaBytes, viaStrings, `seed ${seed}`);
      viaBytesOnce = viaBytes;
      // The first ten invalid lines are named, with the same numbers (the reasons for a line that
      // does not start like a URL are worded apart); then both count them all.
      const numbers = (messages: string[]): string[] => messages.map((m) => /^line \d+|^\d+ invalid/.exec(m)![0]);
      assert.deepEqual(numbers(byteWarned), numbers(warned));
      assert.ok(
        warned.some((m) => m.includes('a control character')),
        'a control character was named',
      );
    }
    const expected = lines.map((line) => toKey(line, 'url')).filter((key) => key !== undefined);
    assert.deepEqual(viaBytesOnce, expected);
    assert.ok(
      expected.length > 4_000 && expected.length < 5_500,
      `${expected.length} of ${lines.length} lines are URL keys`,
    );
  });

  test('batches close at the batch size, and each stays intact until its handler is done, with two in flight', async () => {
    const urls = allSharedUrls().slice(0, 5000);
    const back: string[] = [];
    let batches = 0;
    const linesOf = (b: Utf8Keys): string[] =>
      Array.from({ length: b.count }, (_, i) =>
        Buffer.from(b.bytes).toString('utf8', b.ranges[2 * i], b.ranges[2 * i + 1]),
      );
    await forEachUtf8Batch(
      chunked(Buffer.from(`${urls.join('\n')}\n`), 9),
      options({ batchSize: 700, inFlight: 2 }),
      async (batch, previous) => {
        batches++;
        const lines = linesOf(batch);
        // The next batch is collected meanwhile (buffers are reused: lines.ts), never into this one's.
        await new Promise((resolve) => setImmediate(resolve));
        await previous;
        assert.deepEqual(linesOf(batch), lines, 'a batch is intact until its handler is done');
        back.push(...lines);
      },
    );
    assert.ok(batches >= 5000 / (700 + 100), `${batches} batches`);
    assert.deepEqual(back, urls);
  });

  test('string batches: a chunk that overfills a batch leaves its rest to the next one, not a short batch of its own', async () => {
    const urls = allSharedUrls().slice(0, 5000);
    const input = Buffer.from(`${urls.join('\n')}\n`);
    // Chunks of ~64 KiB hold over 1,000 lines: each overfills a batch of 700.
    const chunks = Readable.from(
      Array.from({ length: Math.ceil(input.length / 65_536) }, (_, i) => input.subarray(i * 65_536, (i + 1) * 65_536)),
    );
    const sizes: number[] = [];
    const back: string[] = [];
    const counts = await forEachBatch(chunks, options({ batchSize: 700 }), async (lines) => {
      sizes.push(lines.length);
      back.push(...lines);
    });
    assert.deepEqual(back, urls);
    assert.equal(counts.read, urls.length);
    assert.deepEqual(sizes.slice(0, -1), Array<number>(sizes.length - 1).fill(700), `batch sizes ${sizes.join(' ')}`);
    assert.equal(sizes.length, Math.ceil(urls.length / 700));
  });
  test('firstInvalidUtf8Key finds empty, cut, invalid, over-long and out-of-order keys', () => {
    const good = asLines(['https://a.example/é', 'https://b.example/😀']);
    assert.equal(firstInvalidUtf8Key(good), -1);
    const cut = {
      ...good,
      ranges: Uint32Array.from([good.ranges[0]!, good.ranges[1]! - 1, good.ranges[2]!, good.ranges[3]!]),
    };
    assert.equal(firstInvalidUtf8Key(cut), 0, 'a key that ends inside a character');
    const startsInside = {
      ...good,
      ranges: Uint32Array.from([good.ranges[0]!, good.ranges[1]!, good.ranges[3]! - 2, good.ranges[3]!]),
    };
    assert.equal(firstInvalidUtf8Key(startsInside), 1, 'a key that starts inside a character');
    const empty = { ...good, ranges: Uint32Array.from([0, 5, 7, 7]) };
    assert.equal(firstInvalidUtf8Key(empty), 1);
    const backwards = {
      ...good,
      ranges: Uint32Array.from([good.ranges[2]!, good.ranges[3]!, good.ranges[0]!, good.ranges[1]!]),
    };
    assert.equal(firstInvalidUtf8Key(backwards), 1);
    const outside = { ...good, ranges: Uint32Array.from([0, 5, 6, good.bytes.length + 1]) };
    assert.equal(firstInvalidUtf8Key(outside), 1);
    const invalid = {
      bytes: Buffer.from([0x61, 0x0a, 0x62, 0xc3, 0x28, 0x0a]),
      ranges: Uint32Array.from([0, 1, 2, 5]),
      count: 2,
    };
    assert.equal(firstInvalidUtf8Key(invalid), 1);
    const long = asLines(['a', 'x'.repeat(65_537)]);
    assert.equal(firstInvalidUtf8Key(long), 1);
    // Invalid bytes between keys do not matter.
    const between = { bytes: Buffer.from([0x61, 0xff, 0x62]), ranges: Uint32Array.from([0, 1, 2, 3]), count: 2 };
    assert.equal(firstInvalidUtf8Key(between), -1);
  });

  test('addIfAbsentUtf8 answers exactly as addIfAbsent, on one thread and on two', async () => {
    const urls = [...allSharedUrls().slice(0, 30_000), 'https://ü.example/päth', 'https://x.example/😀'];
    const seeds = ['0123456789abcdef'];
    for (const threads of [1, 2]) {
      const dir = tempDir();
      const store = await SeenStore.open(join(dir, 'a'), { threads });
      const other = await SeenStore.open(join(dir, 'b'), { threads });
      try {
        const plan = { capacityUrls: 20_000, fprTarget: 0.01, seeds };
        const viaStrings = store.scope('s', plan);
        const viaBytes = other.scope('s', plan);
        // Twice over the same URLs: the second round is all seen; 30,000 URLs overflow the first slice.
        for (let round = 0; round < 2; round++) {
          for (let start = 0; start < urls.length; start += 9000) {
            const part = urls.slice(start, start + 9000);
            assert.deepEqual(
              await viaBytes.addIfAbsentUtf8(asLines(part, '\r\n')),
              await viaStrings.addIfAbsent(part),
              `round ${round} at ${start}, ${threads} thread(s)`,
            );
          }
        }
        assert.deepEqual((await viaBytes.stats()).epochs[0]!.added, (await viaStrings.stats()).epochs[0]!.added);
        assert.ok((await viaBytes.epoch(1)).sliceDetails.length > 1, 'the epoch grew a slice during the byte adds');
      } finally {
        await store.close();
        await other.close();
      }
    }
  });

  test('addIfAbsentUtf8 in a whatwg epoch normalises, and a bad batch writes nothing', async () => {
    const store = await SeenStore.open(tempDir());
    try {
      const scope = store.scope('w', { normalize: 'whatwg' });
      assert.deepEqual(await scope.addIfAbsentUtf8(asLines(['HTTPS://Example.COM:443/a/../b'])), [true]);
      assert.deepEqual(await scope.has(['https://example.com/b']), [true]);
      const plain = store.scope('p', { keys: 'raw' });
      for (const bad of [
        null,
        42,
        {},
        { bytes: Buffer.from('a'), ranges: [0, 1], count: 1 },
        { bytes: Buffer.from('a'), ranges: Uint32Array.from([0, 1]), count: 2 },
      ]) {
        await assert.rejects(plain.addIfAbsentUtf8(bad as unknown as Utf8Keys), TypeError);
      }
      await assert.rejects(plain.addIfAbsent(42 as unknown as string[]), TypeError);
      await assert.rejects(plain.add({ count: 1 } as unknown as string[]), TypeError);
      await assert.rejects(
        plain.addIfAbsentUtf8({ bytes: Buffer.from('good\n\xff'), ranges: Uint32Array.from([0, 4, 5, 6]), count: 2 }),
        (error: unknown) => error instanceof SeenStoreError && error.code === 'INVALID_URL',
      );
      assert.deepEqual(await plain.has(['good']), [false], 'the valid URL of the refused batch was not recorded');
    } finally {
      await store.close();
    }
  });

  test('selectedUtf8Lines copies the chosen lines in order, without CRs, in runs or one by one', () => {
    const long = `https://long.example/${'y'.repeat(200)}`;
    const lines = ['a', 'bb', long, 'ccc', 'dddd', 'e'];
    const text = (out: Uint8Array): string => Buffer.from(out).toString();
    assert.equal(
      text(selectedUtf8Lines(asLines(lines, '\r\n'), [true, false, true, true, false, true])),
      `a\n${long}\nccc\ne\n`,
    );
    assert.equal(
      text(selectedUtf8Lines(asLines(lines), [true, true, true, false, true, true])),
      `a\nbb\n${long}\ndddd\ne\n`,
    );
    assert.equal(
      text(
        selectedUtf8Lines(
          asLines(lines, '\r\n'),
          lines.map(() => true),
        ),
      ),
      `${lines.join('\n')}\n`,
    );
    assert.equal(
      selectedUtf8Lines(
        asLines(lines),
        lines.map(() => false),
      ).length,
      0,
    );
    // Every selection of six lines, against the plain answer.
    for (let mask = 0; mask < 64; mask++) {
      const selected = lines.map((_, i) => (mask & (1 << i)) !== 0);
      const expected = lines
        .filter((_, i) => selected[i])
        .map((line) => `${line}\n`)
        .join('');
      for (const separator of ['\n', '\r\n'])
        assert.equal(text(selectedUtf8Lines(asLines(lines, separator), selected)), expected, `mask ${mask}`);
    }
  });

  test('filter-new prints what the library decides for the same seeds, byte for byte', async () => {
    const urls = allSharedUrls();
    const dir = tempDir();
    const file = join(dir, 'urls.txt');
    writeFileSync(file, `${urls.join('\n')}\n${urls.slice(0, 1000).join('\r\n')}\n`);
    const seeds = 'fedcba9876543210';
    const run = spawnSync(
      process.execPath,
      [CLI, '--store', join(dir, 'cli'), 'filter-new', '--capacity', '100000', '--seeds', seeds, file],
      { encoding: 'utf8', maxBuffer: 1 << 26 },
    );
    assert.equal(run.status, 0, run.stderr);
    const store = await SeenStore.open(join(dir, 'lib'));
    try {
      const scope = store.scope('default', { capacityUrls: 100_000, seeds: [seeds] });
      const all = [...urls, ...urls.slice(0, 1000)];
      const expected: string[] = [];
      for (let start = 0; start < all.length; start += 10_000) {
        const part = all.slice(start, start + 10_000);
        const answers = await scope.addIfAbsent(part);
        part.forEach((url, i) => answers[i] && expected.push(url));
      }
      assert.equal(run.stdout, `${expected.join('\n')}\n`);
    } finally {
      await store.close();
    }
  });
});
