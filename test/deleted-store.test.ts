import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ERROR_CODES } from '../src/index.js';
import { collectCli, spawnCli } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

describe('a store deleted under a running writer', () => {
  test('filter-new notices at its next commit: NOT_FOUND, nothing printed after the deletion', async () => {
    const dir = tempDir();
    const child = spawnCli(['filter-new', '--store', dir, '--quiet', '--batch-delay-ms', '1']);
    const result = collectCli(child);
    const firstAnswer = new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    child.stdin!.write('https://before.example/1\n');
    await firstAnswer;
    rmSync(dir, { recursive: true, force: true });
    child.stdin!.write('https://after.example/1\nhttps://after.example/2\n');
    child.stdin!.end();
    const out = await result;
    assert.equal(out.stdout, 'https://before.example/1\n', 'nothing acknowledged after the store was deleted');
    assert.equal(out.code, ERROR_CODES.NOT_FOUND, out.stderr);
    assert.match(out.stderr, /error NOT_FOUND: the store at .* was deleted while this process had it open/);
    assert.equal(out.stderr.trim().split('\n').length, 1, out.stderr);
  });
});
