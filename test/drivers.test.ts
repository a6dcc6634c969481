import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { driverFor, supportedSchemes } from '../src/store/open.js';
import { runCli } from './helpers/cli.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

describe('drivers: the registry of backends', () => {
  test('a location with a scheme no driver serves is refused (USAGE), never taken for a directory', async () => {
    const cwd = tempDir('seenstore-drivers-');
    const error = await expectCode('USAGE', () => SeenStore.open('postgres://db.example/crawl'));
    assert.match(error.message, /postgres:\/\//);
    for (const scheme of supportedSchemes()) assert.ok(error.message.includes(`${scheme}://`), `the refusal lists ${scheme}://`);
    const cli = await runCli(['add', '--store', 'postgres://db.example/crawl'], 'https://a.example/\n', {}, cwd);
    assert.equal(cli.code, 2, cli.stderr);
    assert.match(cli.stderr, /unknown store scheme postgres:\/\//);
    assert.equal(existsSync(join(cwd, 'postgres:')), false, 'a directory was created for the URL');
  });

  test('the registry lists each scheme once, and a path (also a relative one with a colon) is a directory', () => {
    const schemes = supportedSchemes();
    assert.deepEqual([...new Set(schemes)], schemes);
    assert.ok(schemes.includes('redis') && schemes.includes('rediss'));
    for (const scheme of schemes) assert.deepEqual(driverFor(`${scheme.toUpperCase()}://x`).schemes.includes(scheme), true);
    for (const path of ['/tmp/crawl', 'crawl.v2', 'a:b', 'C:\\crawl']) assert.deepEqual(driverFor(path).schemes, [], path);
  });
});
