import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ERROR_CODES } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { sharedPath, sharedUrls } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

function lines(text: string): string[] {
  return text.split('\n').filter(Boolean);
}

/** Exactly one error line on stderr, of the documented form, and no stack trace. */
function assertOneErrorLine(stderr: string, code: string): void {
  const errorLines = lines(stderr);
  assert.equal(errorLines.length, 1, stderr);
  assert.match(errorLines[0]!, new RegExp(`^seenstore: error ${code}: `));
  assert.doesNotMatch(stderr, /\n\s+at /);
}

describe('CLI', () => {
  test('filter-new over real URLs prints them once, then nothing the second time', async () => {
    const dir = tempDir();
    const file = sharedPath('crawl-benign-35k.txt');
    const urls = sharedUrls('crawl-benign-35k.txt');
    const first = await runCli(['filter-new', '--store', dir, file]);
    assert.equal(first.code, 0, first.stderr);
    const printed = lines(first.stdout);
    // Incremental false positives at 1 % of a 1M-URL filter filled to 3.5 %: far below 0.1 %.
    assert.ok(printed.length >= urls.length * 0.999, `${printed.length} of ${urls.length}`);
    const printedSet = new Set(printed);
    assert.deepEqual(
      printed,
      urls.filter((url) => printedSet.has(url)),
      'output keeps input order',
    );
    const second = await runCli(['filter-new', '--store', dir, file]);
    assert.equal(second.code, 0);
    assert.equal(second.stdout, '');
    const stats = await runCli(['stats', '--store', dir, '--json']);
    const epoch = JSON.parse(stats.stdout).scopes[0].epochs[0];
    assert.equal(epoch.submitted, urls.length * 2);
    assert.equal(epoch.added, printed.length);
  });

  test('SEENSTORE_DIR selects the store; stdin is read when FILE is absent or -', async () => {
    const dir = tempDir();
    const out = await runCli(['filter-new', '-'], 'https://a.example/\nhttps://b.example/\nhttps://a.example/\n', {
      SEENSTORE_DIR: dir,
    });
    assert.equal(out.stdout, 'https://a.example/\nhttps://b.example/\n');
    const has = await runCli(['has', '--count'], 'https://a.example/\nhttps://c.example/\n', { SEENSTORE_DIR: dir });
    assert.equal(has.stdout, 'seen 1\nunseen 1\ninvalid 0\n');
  });

  test('has prints seen URLs, --invert the unseen ones', async () => {
    const dir = tempDir();
    await runCli(['add', '--store', dir], 'https://seen.example/1\nhttps://seen.example/2\n');
    const input = 'https://seen.example/1\nhttps://unseen.example/\nhttps://seen.example/2\n';
    assert.equal(
      (await runCli(['has', '--store', dir], input)).stdout,
      'https://seen.example/1\nhttps://seen.example/2\n',
    );
    assert.equal((await runCli(['has', '--store', dir, '--invert'], input)).stdout, 'https://unseen.example/\n');
  });

  test('add prints a summary; --json makes it machine-readable', async () => {
    const dir = tempDir();
    const text = await runCli(['add', '--store', dir], 'https://x.example/\nhttps://x.example/\n\n');
    assert.match(
      text.stderr,
      /^seenstore: created store at .*\nseenstore: created scope default in store .*\nseenstore: add: read 2, new 1, already seen 1, invalid 0 in \d+\.\d\d s\n$/,
    );
    const pushed = await runCli(['frontier', 'push', '--store', dir], 'https://x.example/\nhttps://z.example/\n');
    assert.match(
      pushed.stderr,
      /^seenstore: frontier push: read 2, queued 1, already seen 1, invalid 0 in \d+\.\d\d s\n$/,
    );
    const json = await runCli(['add', '--store', dir, '--json'], 'https://x.example/\nhttps://y.example/\n');
    assert.deepEqual(JSON.parse(json.stdout), { read: 2, new: 1, seen: 1, invalid: 0 });
  });

  test('input edge cases: CRLF, BOM, empty lines, invalid UTF-8, NUL, an over-long line, no final newline', async () => {
    const dir = tempDir();
    const input = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('https://crlf.example/\r\n\r\n\n'),
      Buffer.from([0x68, 0x74, 0xff, 0xfe, 0x0a]),
      Buffer.from('https://nul.example/\u0000x\n'),
      Buffer.from(`https://long.example/${'a'.repeat(70_000)}\n`),
      Buffer.from('https://ünïcode.example/ß\n'),
      Buffer.from('https://last.example/'),
    ]);
    const out = await runCli(['filter-new', '--store', dir, '--json'], input);
    assert.equal(out.code, 0, out.stderr);
    // A URL with a NUL is no URL (issue 45): skipped by number, as the other invalid lines.
    assert.deepEqual(lines(out.stdout), [
      'https://crlf.example/',
      'https://ünïcode.example/ß',
      'https://last.example/',
    ]);
    assert.match(out.stderr, /line 4: invalid UTF-8, skipped/);
    assert.match(out.stderr, /line 5: not a usable URL \(a control character in it\), skipped/);
    assert.match(out.stderr, /line 6: line too long, skipped/);
    assert.match(out.stderr, /"invalid":3/);
    const failing = await runCli(
      ['add', '--store', dir, '--on-invalid', 'fail'],
      Buffer.concat([Buffer.from('https://a.example/\n'), Buffer.from([0xc3, 0x28, 0x0a])]),
    );
    assert.equal(failing.code, ERROR_CODES.INVALID_URL);
    assertOneErrorLine(failing.stderr, 'INVALID_URL');
    assert.equal(
      (await runCli(['has', '--store', dir, '--count'], 'https://a.example/\n')).stdout,
      'seen 0\nunseen 1\ninvalid 0\n',
      'nothing of the failing batch was recorded',
    );
  });

  test('a 10 MB line is skipped without buffering it whole, and the lines after it still count', async () => {
    const dir = tempDir();
    const input = Buffer.concat([Buffer.alloc(10 * 2 ** 20, 0x61), Buffer.from('\nhttps://after.example/\n')]);
    const out = await runCli(['filter-new', '--store', dir], input);
    assert.equal(out.stdout, 'https://after.example/\n');
    assert.match(out.stderr, /line 1: line too long/);
  });

  test('--normalize whatwg records the URL-standard form and reports unparsable lines', async () => {
    const dir = tempDir();
    const out = await runCli(
      ['filter-new', '--store', dir, '--normalize', 'whatwg'],
      'HTTP://Example.COM:80/a/./b\nnot a url\nhttp://example.com/a/b\n',
    );
    assert.deepEqual(lines(out.stdout), ['HTTP://Example.COM:80/a/./b']);
    assert.match(out.stderr, /line 2: not a usable URL/);
    const mixed = await runCli(['add', '--store', dir, '--normalize', 'none'], 'x\n');
    assert.equal(mixed.code, ERROR_CODES.USAGE);
    assertOneErrorLine(mixed.stderr, 'USAGE');
  });

  test('bad arguments give one error line and the documented exit code', async () => {
    const dir = tempDir();
    const cases: [string[], string][] = [
      [['filter-new', '--store', dir, '--capacity', '0'], 'USAGE'],
      [['filter-new', '--store', dir, '--capacity', '-5'], 'USAGE'],
      [['filter-new', '--store', dir, '--capacity', 'many'], 'USAGE'],
      [['filter-new', '--store', dir, '--fpr', '1'], 'USAGE'],
      [['filter-new', '--store', dir, '--fpr', '0'], 'USAGE'],
      [['filter-new', '--store', dir, '--layout', 'round'], 'USAGE'],
      [['filter-new', '--store', dir, '--scope', '../x'], 'USAGE'],
      [['filter-new', '--store', dir, join(dir, 'no-such-file')], 'NOT_FOUND'],
      [['has', '--store', join(dir, 'no-store')], 'NOT_FOUND'],
      [['stats', '--store', dir, '--scope', 'nope'], 'NOT_FOUND'],
      [['filter-new', '--store', dir, '--scope', 'huge', '--capacity', '1e15', '--fpr', '1e-12'], 'CAPACITY_EXCEEDED'],
    ];
    await runCli(['add', '--store', dir], 'https://x.example/\n');
    for (const [args, code] of cases) {
      const out = await runCli(args, 'https://x.example/\n');
      assert.equal(out.code, ERROR_CODES[code as keyof typeof ERROR_CODES], `${args.join(' ')}: ${out.stderr}`);
      assertOneErrorLine(out.stderr, code);
    }
    const unknown = await runCli(['frobnicate']);
    assert.equal(unknown.code, ERROR_CODES.USAGE);
    const fileAsStore = join(dir, 'file');
    writeFileSync(fileAsStore, 'x');
    const notDir = await runCli(['add', '--store', fileAsStore], 'x\n');
    assert.equal(notDir.code, ERROR_CODES.IO_ERROR);
    assertOneErrorLine(notDir.stderr, 'IO_ERROR');
    const debug = await runCli(['has', '--store', join(dir, 'nowhere'), '--debug'], 'x\n');
    assert.match(debug.stderr, /\n\s+at /, '--debug shows the stack');
  });

  test('a store of a newer format gives FORMAT_UNSUPPORTED from the CLI', async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    await runCli(['add', '--store', dir], 'https://x.example/\n');
    const { open } = await import('lmdb');
    const { Packr } = await import('msgpackr');
    const packr = new Packr({ useRecords: false, mapsAsObjects: true });
    const root = open({ path: dir, maxDbs: 8 });
    const meta = root.openDB({ name: 'meta', encoding: 'binary' });
    const header = packr.unpack(meta.getBinary('store')!);
    await meta.put('store', packr.pack({ ...header, formatVersion: 9 }));
    await root.close();
    const out = await runCli(['has', '--store', dir], 'https://x.example/\n');
    assert.equal(out.code, ERROR_CODES.FORMAT_UNSUPPORTED);
    assertOneErrorLine(out.stderr, 'FORMAT_UNSUPPORTED');
  });

  test('demo runs two crawls through filter-new and reports', async () => {
    const dir = tempDir();
    const out = await runCli(['demo', '--store', dir]);
    assert.equal(out.code, 0, out.stderr);
    const crawl1 = /crawl 1: .* ([\d,]+) distinct pages; filter-new printed ([\d,]+)/.exec(out.stdout);
    assert.ok(crawl1, out.stdout);
    const distinct = Number(crawl1[1]!.replace(/,/g, ''));
    const printed = Number(crawl1[2]!.replace(/,/g, ''));
    assert.ok(printed <= distinct && printed >= distinct * 0.98, out.stdout);
  });
});
