import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ERROR_CODES, SeenStore } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const URLS = 'https://shop.example/a\nhttps://shop.example/b\n';

/** Issue 30: an operator's typo (of a scope, of a store address) never re-crawls everything in silence. */
describe('safe defaults: nothing created by surprise', () => {
  test('--no-create refuses a scope that does not exist (NOT_FOUND, exit 11), naming the scopes there', async () => {
    const store = join(tempDir(), 'store');
    assert.equal((await runCli(['--store', store, '--scope', 'shop', 'filter-new'], URLS)).code, 0);
    for (const command of [['filter-new'], ['add'], ['frontier', 'push']]) {
      const typo = await runCli(['--store', store, '--scope', 'shpo2', '--no-create', ...command], URLS);
      assert.equal(typo.code, ERROR_CODES.NOT_FOUND, `${command.join(' ')}: ${typo.stderr}`);
      assert.equal(typo.stdout, '', `${command.join(' ')}: nothing printed as new`);
      assert.match(typo.stderr, /^seenstore: error NOT_FOUND: scope shpo2 does not exist .*its scopes: shop/);
    }
    const s = await SeenStore.open(store, { create: false, readOnly: true });
    try {
      assert.deepEqual(await s.scopeNames(), ['shop']);
    } finally {
      await s.close();
    }
    const existing = await runCli(
      ['--store', store, '--scope', 'shop', '--no-create', 'filter-new'],
      `${URLS}https://shop.example/c\n`,
    );
    assert.equal(existing.code, 0, existing.stderr);
    assert.equal(existing.stdout, 'https://shop.example/c\n');
  });

  test('the library: a scope opened with create: false is NOT_FOUND on add, enqueue and rotate', async () => {
    const s = await SeenStore.open(join(tempDir(), 'store'));
    try {
      const scope = s.scope('shpo2', { create: false });
      await expectCode('NOT_FOUND', () => scope.addIfAbsent(['https://shop.example/a']));
      await expectCode('NOT_FOUND', () => scope.enqueue(['https://shop.example/a']));
      await expectCode('NOT_FOUND', () => scope.rotate());
      assert.deepEqual(await s.scopeNames(), []);
      assert.deepEqual(await s.scope('shop').addIfAbsent(['https://shop.example/a']), [true]);
    } finally {
      await s.close();
    }
  });

  test('creating a store or a scope says so on stderr, not on a terminal too; --quiet silences it', async () => {
    const store = join(tempDir(), 'store');
    const first = await runCli(['--store', store, '--scope', 'shop', 'filter-new'], URLS);
    assert.match(
      first.stderr,
      new RegExp(`^seenstore: created store at ${store}\nseenstore: created scope shop in store ${store}\n`),
    );
    const second = await runCli(['--store', store, '--scope', 'blog', 'add'], URLS);
    assert.match(second.stderr, new RegExp(`^seenstore: created scope blog in store ${store}\n`));
    assert.doesNotMatch(second.stderr, /created store/);
    const quiet = await runCli(['--store', store, '--scope', 'news', '--quiet', 'filter-new'], URLS);
    assert.equal(quiet.stderr, '');
    assert.equal(quiet.stdout, URLS);
    const again = await runCli(['--store', store, '--scope', 'news', 'filter-new'], URLS);
    assert.doesNotMatch(again.stderr, /created/);
  });

  test('a --store that looks like a URL of no supported scheme is USAGE, naming the schemes; ./NAME is a directory', async () => {
    const cwd = tempDir();
    for (const location of [
      'redis:/127.0.0.1:7001',
      'redis//127.0.0.1:7001',
      'http://127.0.0.1:7001',
      '//127.0.0.1/store',
      'reds://127.0.0.1:7001',
    ]) {
      const out = await runCli(['--store', location, 'filter-new'], URLS, {}, cwd);
      assert.equal(out.code, ERROR_CODES.USAGE, `${location}: ${out.stderr}`);
      assert.equal(out.stdout, '', location);
      assert.match(
        out.stderr,
        /^seenstore: error USAGE: (store location .* looks like a URL but names no supported scheme|unknown store scheme \S+ in .*) \(supported: redis:\/\/, rediss:\/\/, memory:\/\/, or a directory\); for a directory of that name write \.\//,
      );
    }
    const fromEnv = await runCli(['filter-new'], URLS, { SEENSTORE_DIR: 'redis:/127.0.0.1:7001' }, cwd);
    assert.equal(fromEnv.code, ERROR_CODES.USAGE, fromEnv.stderr);
    assert.deepEqual(readdirSync(cwd), [], 'nothing was created');
    await expectCode('USAGE', () => SeenStore.open('redis:/127.0.0.1:7001'));
    const dotted = await runCli(['--store', './redis:/127.0.0.1:7001', '--quiet', 'filter-new'], URLS, {}, cwd);
    assert.equal(dotted.code, 0, dotted.stderr);
    assert.equal(existsSync(join(cwd, 'redis:', '127.0.0.1:7001', 'data.mdb')), true);
  });

  test('filter-new ends with its text summary on stderr: read, new, seen, invalid, time', async () => {
    const store = join(tempDir(), 'store');
    await runCli(['--store', store, '--quiet', 'add'], 'https://shop.example/a\n');
    const out = await runCli(['--store', store, 'filter-new'], URLS);
    assert.equal(out.stdout, 'https://shop.example/b\n');
    assert.match(out.stderr, /^seenstore: filter-new: read 2, new 1, already seen 1, invalid 0 in \d+\.\d\d s\n$/);
    const json = await runCli(['--store', store, '--json', 'filter-new'], URLS);
    assert.deepEqual(JSON.parse(json.stderr), { read: 2, new: 0, seen: 2, invalid: 0, redelivered: 0 });
    const quiet = await runCli(['--store', store, '--quiet', 'filter-new'], URLS);
    assert.equal(quiet.stderr, '');
  });

  test('a directory as input is one USAGE line naming it; a scope name that can never exist is USAGE, not NOT_FOUND', async () => {
    const dir = tempDir();
    const store = join(dir, 'store');
    await runCli(['--store', store, '--quiet', 'add'], URLS);
    for (const command of [['filter-new'], ['add'], ['has']]) {
      const out = await runCli(['--store', store, ...command, dir]);
      assert.equal(out.code, ERROR_CODES.USAGE, `${command.join(' ')}: ${out.stderr}`);
      assert.equal(
        out.stderr.split('\n').filter(Boolean).at(-1),
        `seenstore: error USAGE: ${dir} is a directory; give a file of URLs, one per line (or - for stdin)`,
      );
    }
    const bad = await runCli(['--store', store, '--scope', 'bad/scope', 'has'], URLS);
    assert.equal(bad.code, ERROR_CODES.USAGE, bad.stderr);
    assert.match(bad.stderr, /^seenstore: error USAGE: invalid scope name "bad\/scope"/);
  });
});

describe('safe defaults: inputs checked before anything is created', () => {
  test('an empty input creates the scope with the plan given (--capacity is not lost)', async () => {
    const store = join(tempDir(), 'store');
    for (const [scope, command] of [
      ['a', ['add']],
      ['p', ['frontier', 'push']],
      ['f', ['filter-new']],
    ] as const) {
      const run = await runCli(['--store', store, '--scope', scope, ...command, '--capacity', '5000000'], '');
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, new RegExp(`created scope ${scope} in store`));
    }
    const s = await SeenStore.open(store, { create: false, readOnly: true });
    try {
      assert.deepEqual(await s.scopeNames(), ['a', 'f', 'p']);
      for (const name of ['a', 'f', 'p'])
        assert.equal((await s.scope(name).stats()).epochs[0]!.capacityUrls, 5_000_000, name);
    } finally {
      await s.close();
    }
  });

  test('a missing input file is NOT_FOUND before a store is created', async () => {
    const parent = tempDir();
    for (const command of [['filter-new'], ['add'], ['frontier', 'push'], ['frontier', 'schedule', '--in', '1h']]) {
      const store = join(parent, command.join('-'));
      const run = await runCli(['--store', store, ...command, join(parent, 'nope.txt')], '');
      assert.equal(run.code, ERROR_CODES.NOT_FOUND, `${command.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /^seenstore: error NOT_FOUND: no such file: .*nope\.txt\n$/);
      assert.equal(existsSync(store), false, `${command.join(' ')} created a store for a missing input`);
    }
  });

  test('--store on a directory of unrelated files is refused unless --allow-nonempty-dir', async () => {
    const pages = tempDir();
    for (let i = 0; i < 5; i++) writeFileSync(join(pages, `page-${i}.html`), '<html></html>');
    const refused = await runCli(['--store', pages, 'filter-new'], URLS);
    assert.equal(refused.code, ERROR_CODES.USAGE, refused.stderr);
    assert.match(
      refused.stderr,
      /holds 5 entries \(page-0\.html, page-1\.html, page-2\.html, \.\.\.\) and no store: .*--allow-nonempty-dir/,
    );
    assert.equal(refused.stdout, '');
    assert.equal(readdirSync(pages).length, 5, 'a refused run left files behind');
    const told = await runCli(['--store', pages, '--allow-nonempty-dir', 'filter-new'], URLS);
    assert.equal(told.code, 0, told.stderr);
    assert.equal(told.stdout, URLS);
    // Once the store is there, the option is needed no more; an empty directory never needed it.
    assert.equal((await runCli(['--store', pages, 'filter-new'], URLS)).code, 0);
    assert.equal((await runCli(['--store', tempDir(), 'filter-new'], URLS)).code, 0);
  });
});
