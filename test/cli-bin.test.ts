// The `seenstore` command (src/cli/bin.cts): the CLI's bundle run through V8's code cache. The
// cache may be missing, damaged, of another bundle or unwritable: the command answers the same
// each time, and a cache it cannot trust is never given to V8.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runCli, type CliResult } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

const MAGIC = 'SSCODE\x00\x01';
const HEADER_BYTES = 8 + 32;

function filterNew(store: string, cache: string): Promise<CliResult> {
  return runCli(
    ['--store', store, '--quiet', 'filter-new'],
    'https://a.example/\nhttps://a.example/\nhttps://b.example/\n',
    { SEENSTORE_CODE_CACHE: cache },
  );
}

/** Each run on a fresh store prints both URLs once, and nothing on stderr. */
async function answersRight(dir: string, cache: string, run: number): Promise<void> {
  const result = await filterNew(join(dir, `store-${run}`), cache);
  assert.equal(result.stderr, '');
  assert.equal(result.code, 0);
  assert.equal(result.stdout, 'https://a.example/\nhttps://b.example/\n');
}

describe('the seenstore command and its code cache', () => {
  test('a missing cache is written at exit, then taken as it is', async () => {
    const dir = tempDir();
    const cache = join(dir, 'code-cache');
    await answersRight(dir, cache, 1);
    assert.equal(readFileSync(cache).subarray(0, 8).toString('latin1'), MAGIC);
    const written = statSync(cache).ino;
    await answersRight(dir, cache, 2);
    assert.equal(statSync(cache).ino, written, 'an accepted cache is not written again');
  });

  for (const [name, damage] of [
    // A byte of V8's data, far from V8's own header: V8 checks no checksum in a release build, so
    // only the digest keeps these bytes from being run.
    [
      'a damaged byte of V8 data',
      (file: Buffer) => {
        file[HEADER_BYTES + Math.floor((file.length - HEADER_BYTES) / 2)]! ^= 0x20;
      },
    ],
    [
      'a digest of another bundle',
      (file: Buffer) => {
        file[8]! ^= 0x01;
      },
    ],
    ['a file cut short', (file: Buffer) => file.subarray(0, HEADER_BYTES + 100)],
    ['no magic', (file: Buffer) => Buffer.from(`not a cache ${file.length}`)],
  ] as const) {
    test(`${name}: the command answers the same and the cache is written anew`, async () => {
      const dir = tempDir();
      const cache = join(dir, 'code-cache');
      await answersRight(dir, cache, 1);
      const file = readFileSync(cache);
      writeFileSync(cache, damage(file) ?? file);
      const damaged = statSync(cache).ino;
      await answersRight(dir, cache, 2);
      const rewritten = statSync(cache).ino;
      assert.notEqual(rewritten, damaged, 'the cache was refused and written again');
      await answersRight(dir, cache, 3);
      assert.equal(statSync(cache).ino, rewritten, 'the new cache is taken');
    });
  }

  test('off, or a place that cannot be written: no cache, the same answers', async () => {
    const dir = tempDir();
    await answersRight(dir, 'off', 1);
    const nowhere = join(dir, 'no-such-dir', 'code-cache');
    await answersRight(dir, nowhere, 2);
    assert.equal(existsSync(join(dir, 'no-such-dir')), false);
  });

  test('a failing command keeps its error and exit code while the cache is written', async () => {
    const dir = tempDir();
    const cache = join(dir, 'code-cache');
    const result = await runCli(['--store', join(dir, 'missing'), 'has'], 'https://a.example/\n', {
      SEENSTORE_CODE_CACHE: cache,
    });
    assert.equal(result.code, 11);
    assert.match(result.stderr, /^seenstore: error NOT_FOUND: /);
    assert.ok(existsSync(cache));
  });
});
