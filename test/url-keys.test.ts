import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { toKey } from '../src/url/normalize.js';
import { holdsControlBytes, urlKeyRange } from '../src/url/url-shape.js';
import { runCli } from './helpers/cli.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

/**
 * The format vectors of normalisation `url` (docs/format.md "URL keys"): a line, and its key or
 * null when the line is invalid. Frozen: a change of an accepted line's key is a new mode, never an
 * edit. Accepting a line that was refused changes no accepted line's key or bits, so it is an
 * edit: `https://@host` (an empty userinfo, valid by the WHATWG URL standard) was refused until
 * issue 45 and is now accepted, keyed as written. Refusing a line changes no accepted line's key
 * or bits either: a URL with a control character (U+0000-U+001F, U+007F) inside it, accepted until
 * issue 45, is now refused (one added before stays in the bits, and can no longer be asked about).
 */
export const URL_KEY_VECTORS: readonly (readonly [string, string | null])[] = [
  ['https://example.org/a?b=1#c', 'https://example.org/a?b=1#c'],
  ['  https://example.org/a \t', 'https://example.org/a'],
  ['HTTP://Example.ORG/', 'HTTP://Example.ORG/'],
  ['ftp://files.example.org/x y', 'ftp://files.example.org/x y'],
  ['git+ssh://user@host/repo', 'git+ssh://user@host/repo'],
  ['http://[::1]:8080/', 'http://[::1]:8080/'],
  ['https://例え.jp/パス', 'https://例え.jp/パス'],
  ['x://h', 'x://h'],
  ['not a url at all', null],
  ['   ', null],
  ['<a href="https://example.org/">', null],
  ['/relative/path', null],
  ['//example.org/protocol-relative', null],
  ['mailto:someone@example.org', null],
  ['https:/example.org/one-slash', null],
  ['https:///no-host', null],
  ['https://', null],
  ['https://?q', null],
  ['https://#f', null],
  ['https://@host', 'https://@host'],
  ['http://@xkcd.com/c257.html', 'http://@xkcd.com/c257.html'],
  ['https://@', null],
  ['https://@/path', null],
  ['https://@@host', null],
  ['https://:80/', null],
  ['1http://example.org/', null],
  ['ht tp://example.org/', null],
  ['https:// example.org/', null],
  ['https://example.org/\u0000x', null],
  ['https://example.org/x\ty', null],
  ['https://example.org/x\ry', null],
  ['https://example.org/x\ny', null],
  ['https://hithub.com\u001b[D\u001b[D/wshager/xvarray', null],
  ['https://example.org/x\u007f', null],
  ['https://example.org/x\u001f', null],
  ['\u0000https://example.org/', null],
  ['\thttps://example.org/x\t\r', 'https://example.org/x'],
  ['https://example.org/x\u000b\u000c', 'https://example.org/x'],
  ['https://example.org/x\u0080\u009f', 'https://example.org/x\u0080\u009f'],
];

describe('keys are URLs by default (normalisation url)', () => {
  test('the format vectors: the string and the byte check agree with them', () => {
    const range = new Uint32Array(2);
    for (const [line, key] of URL_KEY_VECTORS) {
      assert.equal(toKey(line, 'url') ?? null, key, JSON.stringify(line));
      const bytes = Buffer.from(`#${line}#`);
      // The byte form's shape check leaves control characters to its caller (the line reader's scan).
      const ok = urlKeyRange(bytes, 1, bytes.length - 1, range) && !holdsControlBytes(bytes, range[0]!, range[1]!);
      assert.equal(
        ok ? bytes.subarray(range[0], range[1]).toString('utf8') : null,
        key,
        `bytes of ${JSON.stringify(line)}`,
      );
    }
  });

  test('a control character: no URL mode takes it (whatwg and crawler refuse it before parsing), raw keys do; byHashing leaves it to the hashing in mode url', () => {
    for (const line of [
      'https://example.org/\u0000',
      'https://example.org/a\tb',
      '\u001bhttps://example.org/',
      'https://example.org/\u007f',
    ]) {
      // The WHATWG parser would drop the tab and percent-encode the rest: two spellings, one URL.
      for (const mode of ['url', 'whatwg', 'crawler'] as const)
        assert.equal(toKey(line, mode), undefined, `${mode}: ${JSON.stringify(line)}`);
      assert.equal(toKey(line, 'none'), line);
      assert.equal(
        toKey(line, 'url', true) === undefined,
        line.startsWith('\u001b'),
        `url, byHashing: ${JSON.stringify(line)}`,
      );
      assert.equal(toKey(line, 'whatwg', true), undefined);
    }
    assert.equal(
      toKey(' https://example.org/a\t', 'whatwg'),
      'https://example.org/a',
      'whitespace around a URL is trimmed, not refused',
    );
  });

  test('filter-new: stray lines are counted invalid, the first shown; surrounding whitespace is trimmed; --keys raw keeps any line', async () => {
    const store = join(tempDir(), 'store');
    const input = [
      'https://a.example/1',
      '  https://a.example/1  ',
      'not a url at all',
      '   ',
      '<a href="https://a.example/">',
      '/relative/path',
      'mailto:x@a.example',
      'https://a.example/2\t',
    ].join('\n');
    const out = await runCli(['--store', store, 'filter-new'], `${input}\n`);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, 'https://a.example/1\nhttps://a.example/2\n');
    assert.match(out.stderr, /line 3: not an absolute URL \(scheme:\/\/host\), skipped/);
    assert.match(out.stderr, /filter-new: read 3, new 2, already seen 1, invalid 5 in /);
    const strings = await runCli(
      ['--store', store, '--scope', 'whatwg', 'filter-new', '--normalize', 'whatwg'],
      'https://a.example/1\n/relative\n',
    );
    assert.equal(strings.stdout, 'https://a.example/1\n');
    const raw = await runCli(['--store', store, '--scope', 'raw', 'filter-new', '--keys', 'raw'], `${input}\n`);
    assert.equal(raw.stdout, `${input}\n`, 'raw: every line as it is, as before');
    const rawAgain = await runCli(['--store', store, '--scope', 'raw', 'filter-new'], 'not a url at all\n');
    assert.equal(rawAgain.stdout, '', 'the scope keeps its mode when --keys is not given');
    const both = await runCli(
      ['--store', store, '--scope', 'x', 'filter-new', '--keys', 'raw', '--normalize', 'crawler'],
      'https://a.example/\n',
    );
    assert.equal(both.code, 2, both.stderr);
  });

  test('the library: new scopes take URL keys (trimmed, else INVALID_URL), keys: raw any string; rotations keep the mode', async () => {
    const store = await SeenStore.open(join(tempDir(), 'store'));
    try {
      const urls = store.scope('urls');
      await expectCode('INVALID_URL', () => urls.addIfAbsent(['https://a.example/', 'not a url']));
      assert.deepEqual(await urls.addIfAbsent(['https://a.example/', ' https://a.example/\n']), [true, false]);
      const bytes = Buffer.from(' https://b.example/ \nhttps://b.example/');
      assert.deepEqual(
        await urls.addIfAbsentUtf8({ bytes, ranges: Uint32Array.of(0, 20, 21, bytes.length), count: 2 }),
        [true, false],
      );
      assert.deepEqual(await urls.has(['https://b.example/', '  https://b.example/']), [true, true]);
      await expectCode('INVALID_URL', () => urls.addIfAbsentUtf8({ bytes, ranges: Uint32Array.of(0, 5), count: 1 }));
      const raw = store.scope('raw', { keys: 'raw' });
      assert.deepEqual(await raw.addIfAbsent(['not a url', ' not a url']), [true, true]);
      for (const scope of [urls, raw]) await scope.rotate();
      assert.equal((await urls.stats()).epochs[1]!.normalize, 'url');
      assert.equal((await raw.stats()).epochs[1]!.normalize, 'none');
      await expectCode('INVALID_URL', () => urls.addIfAbsent(['not a url']));
      assert.deepEqual(await raw.addIfAbsent(['still any line']), [true]);
    } finally {
      await store.close();
    }
  });
});
