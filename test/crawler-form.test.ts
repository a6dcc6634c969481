import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { Packr } from 'msgpackr';
import { SeenStore } from '../src/index.js';
import { toKey } from '../src/url/normalize.js';
import { runCli } from './helpers/cli.js';
import { ROOT, sharedUrls, xorshift32 } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

interface Vector {
  readonly input: string;
  /** undefined: the input is invalid in mode `crawler`. */
  readonly key: string | undefined;
}

/**
 * The rows of the table under "### Test vectors of `crawler`" in docs/format.md: the doc is the
 * source of the vectors, so the doc and the code cannot drift apart.
 */
function docVectors(): Vector[] {
  const doc = readFileSync(join(ROOT, 'docs', 'format.md'), 'utf8');
  const start = doc.indexOf('### Test vectors of `crawler`');
  assert.ok(start >= 0, 'docs/format.md has the crawler vectors section');
  const vectors: Vector[] = [];
  for (const line of doc.slice(start).split('\n').slice(1)) {
    if (line.startsWith('#')) break;
    const row = /^\| `([^`]+)` \| (?:`([^`]+)`|\*invalid\*) \|/.exec(line);
    if (row === null) continue;
    vectors.push({ input: row[1]!, key: row[2] });
  }
  return vectors;
}

describe('crawler URL form', () => {
  const vectors = docVectors();

  test('every vector of the docs/format.md table gives its key', () => {
    // A parser that found no rows would pass vacuously: the table has 42 rows.
    assert.ok(vectors.length >= 42, `only ${vectors.length} vectors parsed`);
    for (const { input, key } of vectors) assert.equal(toKey(input, 'crawler'), key, input);
    const issuePair = ['https://example.com/b?y=2&x=1#top', 'https://example.com/b?x=1&y=2'];
    assert.equal(toKey(issuePair[0]!, 'crawler'), toKey(issuePair[1]!, 'crawler'));
  });

  test('the key of a key is the key itself (vectors and a crawl list)', () => {
    const urls = [...vectors.map(({ input }) => input), ...sharedUrls('crawl-sitelist-15k.txt')];
    let keyed = 0;
    for (const url of urls) {
      const key = toKey(url, 'crawler');
      if (key === undefined) continue;
      keyed++;
      assert.equal(toKey(key, 'crawler'), key, url);
      assert.equal(toKey(key, 'whatwg'), key, `${url}: a key is a WHATWG serialisation`);
    }
    assert.ok(keyed > urls.length / 2, `only ${keyed} of ${urls.length} URLs keyed`);
  });

  test('the key of a key is the key itself for generated URLs: escapes, stray %, queries, fragments, opaque paths', () => {
    const bases = [
      'http://a.example/',
      'https://a.example:443/x',
      'foo://h/',
      'mailto:',
      'http://a.example/p?',
      'http://u:p%41ss@h/',
      'file:///',
      'data:',
      'foo:/',
      'HTTP://xn--bcher-kva.EXAMPLE',
      'http://[::1]',
    ];
    const pieces = [
      '%',
      '2',
      'e',
      'E',
      'f',
      '4',
      '1',
      '7',
      '?',
      '&',
      '=',
      '#',
      '/',
      '.',
      '..',
      'a',
      'A',
      '~',
      '+',
      ' ',
      'é',
      ';',
      '_',
      '%2e',
      '%2E',
      '%25',
      '%7e',
      ':',
      '@',
    ];
    const next = xorshift32(21);
    let keyed = 0;
    for (let i = 0; i < 50_000; i++) {
      let url = bases[i % bases.length]!;
      for (let n = next() % 16; n > 0; n--) url += pieces[next() % pieces.length];
      const key = toKey(url, 'crawler');
      if (key === undefined) continue;
      keyed++;
      assert.equal(toKey(key, 'crawler'), key, url);
      assert.equal(toKey(key, 'whatwg'), key, url);
    }
    assert.ok(keyed > 40_000, `only ${keyed} generated URLs keyed`);
  });

  test('mode none and mode whatwg are unchanged by the crawler mode', () => {
    const url = 'https://Example.com/b?y=2&x=1#top';
    assert.equal(toKey(url, 'none'), url);
    assert.equal(toKey(url, 'whatwg'), 'https://example.com/b?y=2&x=1#top');
  });

  test('a crawler scope records its mode and treats reordered, fragment-carrying links as one URL', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('crawl', { normalize: 'crawler' });
    assert.deepEqual(await scope.addIfAbsent(['https://example.com/b?y=2&x=1#top', 'https://example.com/b?x=1&y=2']), [
      true,
      false,
    ]);
    assert.deepEqual(await scope.has(['https://EXAMPLE.com:443/b?x=1&y=2#other', 'https://example.com/b?x=2&y=1']), [
      true,
      false,
    ]);
    await expectCode('INVALID_URL', () => scope.add(['/relative']));
    const bytes = Buffer.from('https://example.com/c?b=1&a=2#x\n');
    const ranges = Uint32Array.of(0, bytes.length - 1);
    assert.deepEqual(await scope.addIfAbsentUtf8({ bytes, ranges, count: 1 }), [true]);
    assert.deepEqual(await scope.has(['https://example.com/c?a=2&b=1']), [true]);
    await scope.rotate();
    assert.equal(await scope.normalizeMode(), 'crawler', 'rotation inherits the mode');
    await store.close();
    const reopened = await SeenStore.open(dir);
    assert.equal(await reopened.scope('crawl').normalizeMode(), 'crawler');
    assert.deepEqual(await reopened.scope('crawl').has(['https://example.com/b?x=1&y=2'], { epochs: 'all' }), [true]);
    await reopened.close();
  });

  test('an epoch whose header names an unknown mode is refused, not keyed as another mode', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    await store.scope('crawl', { normalize: 'crawler' }).add(['https://example.com/a']);
    await store.close();
    const packr = new Packr({ useRecords: false, mapsAsObjects: true });
    const root = open({ path: dir, maxDbs: 8 });
    const meta = root.openDB({ name: 'meta', encoding: 'binary' });
    root.transactionSync(() => {
      const header = packr.unpack(meta.getBinary(['epoch', 'crawl', 1])!);
      meta.putSync(['epoch', 'crawl', 1], packr.pack({ ...header, normalize: 'crawler-v9' }));
    });
    await root.close();
    const reopened = await SeenStore.open(dir);
    await expectCode('FORMAT_UNSUPPORTED', () => reopened.scope('crawl').has(['https://example.com/a']));
    await reopened.close();
  });

  test('the CLI takes --normalize crawler and prints each crawler URL once', async () => {
    const dir = tempDir();
    const input =
      'https://example.com/b?y=2&x=1#top\nhttps://example.com/b?x=1&y=2\nnot a url\nhttps://example.com/b?x=1&y=2&\n';
    const out = await runCli(['filter-new', '--store', dir, '--normalize', 'crawler'], input);
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(out.stdout.split('\n').filter(Boolean), ['https://example.com/b?y=2&x=1#top']);
    assert.match(out.stderr, /line 3: not a usable URL/);
    const shown = await runCli(['epoch', 'show', '1', '--store', dir]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /normalisation crawler/);
  });
});
