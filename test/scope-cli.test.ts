import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

test('CLI: scope list names the scopes; scope delete is refused without --yes, removes one scope with --yes, NOT_FOUND after', async () => {
  const store = join(tempDir(), 'store');
  const cli = (args: readonly string[], input = '') => runCli(['--store', store, '--quiet', ...args], input);
  assert.equal((await cli(['--scope', 'example.org', 'add'], 'https://example.org/a\n')).code, 0);
  assert.equal(
    (await cli(['--scope', 'exmaple.org', 'frontier', 'push'], 'https://example.org/a\nhttps://example.org/b\n')).code,
    0,
  );
  assert.equal((await cli(['scope', 'list'])).stdout, 'example.org\nexmaple.org\n');
  assert.deepEqual(JSON.parse((await cli(['--json', 'scope', 'list'])).stdout), {
    scopes: ['example.org', 'exmaple.org'],
  });
  const refused = await cli(['scope', 'delete', 'exmaple.org']);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /cannot be undone: add --yes/);
  assert.equal(
    (await cli(['scope', 'list'])).stdout,
    'example.org\nexmaple.org\n',
    'refused, yet something was deleted',
  );
  const deleted = await cli(['scope', 'delete', 'exmaple.org', '--yes']);
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal(deleted.stdout, 'deleted scope exmaple.org: 1 epoch, 2 queued URLs\n');
  assert.equal((await cli(['scope', 'list'])).stdout, 'example.org\n');
  const again = await cli(['scope', 'delete', 'exmaple.org', '--yes']);
  assert.equal(again.code, 11, again.stderr);
  assert.match(again.stderr, /NOT_FOUND|does not exist/);
  assert.equal(
    (await cli(['--scope', 'example.org', 'has'], 'https://example.org/a\n')).stdout,
    'https://example.org/a\n',
    'the other scope lost its URL',
  );
});
