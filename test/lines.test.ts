import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FileChunks } from '../src/cli/file-chunks.js';
import { LineSplitter, Utf8LineBatcher } from '../src/cli/lines.js';
import { formatCount } from '../src/cli/output.js';
import { tempDir } from './helpers/tmp.js';

/** A deterministic generator (xorshift32), so a failure reproduces. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Lines of every kind the splitters treat apart: URLs, CRLF, empty, invalid UTF-8, too long, non-ASCII. */
function input(next: () => number, lines: number): Buffer {
  const parts: Buffer[] = [Buffer.from([0xef, 0xbb, 0xbf])];
  for (let i = 0; i < lines; i++) {
    const kind = Math.floor(next() * 10);
    if (kind === 0) parts.push(Buffer.from('\n'));
    else if (kind === 1) parts.push(Buffer.from(`https://crlf.example/${i}\r\n`));
    else if (kind === 2)
      parts.push(Buffer.concat([Buffer.from('https://bad.example/'), Buffer.from([0xc3, 0x28]), Buffer.from('\n')]));
    else if (kind === 3) parts.push(Buffer.from(`https://long.example/${'x'.repeat(300)}\n`));
    else if (kind === 4) parts.push(Buffer.from(`https://ünïcode.example/${i}\n`));
    else parts.push(Buffer.from(`https://site${i % 97}.example/page/${i}\n`));
  }
  return Buffer.concat(parts);
}

function chunked(data: Buffer, next: () => number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; ) {
    const size = 1 + Math.floor(next() * 700);
    chunks.push(data.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

function linesOf(batch: { bytes: Buffer; ranges: Uint32Array; count: number }): string[] {
  return Array.from({ length: batch.count }, (_, i) =>
    batch.bytes.toString('utf8', batch.ranges[2 * i], batch.ranges[2 * i + 1]),
  );
}

describe('Utf8LineBatcher', () => {
  test('with reused buffers, the same lines as LineSplitter, and no batch overwritten while the caller may hold it', () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const data = input(next, 3000);
      const expected: string[] = [];
      const expectedInvalid: string[] = [];
      const splitter = new LineSplitter(
        {
          line: (text) => expected.push(text),
          invalid: (lineNo, reason) => expectedInvalid.push(`${lineNo} ${reason}`),
        },
        200,
      );
      for (const chunk of chunked(data, random(seed + 10))) splitter.push(chunk);
      splitter.end();

      const reuse = 2;
      const invalid: string[] = [];
      const batcher = new Utf8LineBatcher(200, (lineNo, reason) => invalid.push(`${lineNo} ${reason}`), false, reuse);
      const got: string[] = [];
      const held: { batch: ReturnType<Utf8LineBatcher['take']>; lines: string[] }[] = [];
      const take = (): void => {
        const batch = batcher.take();
        // The caller may still hold the last `reuse` batches taken before this one: they must be intact.
        for (const old of held.slice(-reuse))
          assert.deepEqual(linesOf(old.batch), old.lines, `seed ${seed}: a held batch was overwritten`);
        const lines = linesOf(batch);
        held.push({ batch, lines });
        got.push(...lines);
      };
      for (const chunk of chunked(data, random(seed + 10))) {
        // Copy: the batcher must not keep a chunk it was handed (FileChunks reuses its buffers).
        const scratch = Buffer.from(chunk);
        batcher.push(scratch);
        scratch.fill(0x21);
        if (batcher.count > 0 && next() < 0.2) take();
      }
      batcher.end();
      take();
      assert.deepEqual(got, expected, `seed ${seed}: lines`);
      assert.deepEqual(invalid, expectedInvalid, `seed ${seed}: invalid lines`);
    }
  });
});

describe('FileChunks', () => {
  test('reads a file whole, in order, across many chunks, and ends on destroy', async () => {
    const dir = tempDir();
    const path = join(dir, 'input.txt');
    const data = input(random(7), 40_000);
    writeFileSync(path, data);
    const parts: Buffer[] = [];
    for await (const chunk of new FileChunks(path, 4096)) parts.push(Buffer.from(chunk));
    assert.ok(parts.length > 100);
    assert.ok(Buffer.concat(parts).equals(data));

    const stopped = new FileChunks(path, 4096);
    let chunks = 0;
    for await (const chunk of stopped) {
      assert.ok(chunk.length > 0);
      if (++chunks === 3) stopped.destroy();
    }
    assert.equal(chunks, 3);
  });
});

describe('formatCount', () => {
  test("writes integers as toLocaleString('en-US') does, without loading ICU", () => {
    const values = [
      0,
      7,
      -7,
      999,
      1_000,
      -1_000,
      12_345,
      999_999,
      1_000_000,
      1_234_567_890,
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      2 ** 40,
      1.5,
      1234.5678,
      2 ** 60,
    ];
    for (let n = 1; n < 1e15; n = n * 7 + 3) values.push(n, -n);
    for (const n of values) assert.equal(formatCount(n), n.toLocaleString('en-US'), String(n));
  });
});
