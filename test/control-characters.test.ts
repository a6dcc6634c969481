import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ERROR_CODES, SeenStore } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

/**
 * Issue 45: a URL with a control character (U+0000-U+001F, U+007F) is not a usable URL. Every CLI
 * command that reads URLs skips such a line (named, with its number) under the default
 * `--on-invalid skip`, and stops before recording its batch with `--on-invalid fail`; whitespace
 * around a URL is trimmed as before, and `--keys raw` takes any line. The library, serve and
 * URLFrontier paths are tested beside their kind (contract/keys.ts, server.test.ts,
 * urlfrontier.test.ts).
 */
const GOOD = ['https://a.example/1', 'https://a.example/2', 'https://a.example/3'];
// NUL, a tab inside (a TSV line), an ANSI escape (one of the package data set), DEL, a lone CR inside.
const BAD = [
  'https://a.example/\u0000x',
  'https://a.example/x\ty',
  'https://hithub.com\u001b[D\u001b[D/x',
  'https://a.example/x\u007f',
  'https://a.example/x\ry',
];
// Lines 1, 3, 5 are good (the last with CRLF and a tab around it); 2, 4, 6, 7, 8 are not.
const INPUT = `${GOOD[0]}\n${BAD[0]}\n${GOOD[1]}\n${BAD[1]}\n\t${GOOD[2]}\t\r\n${BAD[2]}\n${BAD[3]}\n${BAD[4]}\n`;
const BAD_LINES = [2, 4, 6, 7, 8];

function assertSkipped(stderr: string, what: string): void {
  for (const n of BAD_LINES)
    assert.match(
      stderr,
      new RegExp(`line ${n}: not a usable URL \\(a control character in it\\), skipped`),
      `${what}: line ${n}\n${stderr}`,
    );
  assert.doesNotMatch(stderr, /line [135]:/, `${what}: a good line was refused\n${stderr}`);
}

async function recorded(store: string, scope = 'default'): Promise<boolean[]> {
  const opened = await SeenStore.open(store, { readOnly: true });
  try {
    return await opened.scope(scope).has(GOOD);
  } finally {
    await opened.close();
  }
}

describe('a URL with a control character is refused on every CLI path (issue 45)', () => {
  test('filter-new, on the byte path and the string path (whatwg): skipped by number, the others printed and recorded', async () => {
    const store = join(tempDir(), 'store');
    const bytes = await runCli(['--store', store, 'filter-new'], INPUT);
    assert.equal(bytes.code, 0, bytes.stderr);
    assert.equal(bytes.stdout, `${GOOD.join('\n')}\n`);
    assertSkipped(bytes.stderr, 'filter-new');
    assert.match(bytes.stderr, /filter-new: read 3, new 3, already seen 0, invalid 5 in /);
    assert.deepEqual(await recorded(store), [true, true, true]);
    const strings = await runCli(['--store', store, '--scope', 'w', 'filter-new', '--normalize', 'whatwg'], INPUT);
    assert.equal(strings.code, 0, strings.stderr);
    assert.equal(strings.stdout, `${GOOD[0]}\n${GOOD[1]}\n\t${GOOD[2]}\t\n`);
    assertSkipped(strings.stderr, 'filter-new --normalize whatwg');
  });

  test('--on-invalid fail: INVALID_URL at the first such line, its batch not recorded', async () => {
    const store = join(tempDir(), 'store');
    for (const command of [['filter-new'], ['add'], ['frontier', 'push']]) {
      const out = await runCli(
        ['--store', store, '--scope', command.join('-'), ...command, '--on-invalid', 'fail'],
        INPUT,
      );
      assert.equal(out.code, ERROR_CODES.INVALID_URL, `${command.join(' ')}: ${out.stderr}`);
      assert.match(
        out.stderr,
        /line 2: not a usable URL \(a control character in it\); stopped \(--on-invalid fail\), this batch was not recorded/,
      );
      assert.equal(out.stdout, '');
      assert.deepEqual(
        await recorded(store, command.join('-')),
        [false, false, false],
        `${command.join(' ')}: line 1 shared the refused batch`,
      );
    }
  });

  test('add, has, classify, frontier push and frontier schedule skip the lines; --keys raw takes them', async () => {
    const store = join(tempDir(), 'store');
    const add = await runCli(['--store', store, 'add'], INPUT);
    assert.equal(add.code, 0, add.stderr);
    assertSkipped(add.stderr, 'add');
    assert.deepEqual(await recorded(store), [true, true, true]);
    const has = await runCli(['--store', store, 'has'], INPUT);
    assert.equal(has.code, 0, has.stderr);
    assert.equal(has.stdout, `${GOOD[0]}\n${GOOD[1]}\n\t${GOOD[2]}\t\n`);
    assertSkipped(has.stderr, 'has');
    const classify = await runCli(['--store', store, 'classify'], INPUT);
    assert.equal(classify.code, 0, classify.stderr);
    assert.equal(classify.stdout.split('\n').filter(Boolean).length, 3, classify.stdout);
    assertSkipped(classify.stderr, 'classify');
    const push = await runCli(['--store', store, '--scope', 'f', 'frontier', 'push'], INPUT);
    assert.equal(push.code, 0, push.stderr);
    assert.equal(push.stdout, `${GOOD[0]}\n${GOOD[1]}\n\t${GOOD[2]}\t\n`, 'queued lines are printed as given');
    assertSkipped(push.stderr, 'frontier push');
    const schedule = await runCli(
      ['--store', store, '--scope', 'f', 'frontier', 'schedule', '--in', '1h'],
      `${GOOD[0]}\n${BAD[0]}\n`,
    );
    assert.equal(schedule.code, 0, schedule.stderr);
    assert.match(schedule.stderr, /line 2: not a usable URL \(a control character in it\), skipped/);
    assert.match(schedule.stderr, /read 1, 1 scheduled/);
    const take = await runCli(['--store', store, '--scope', 'f', 'frontier', 'take', '--count', '10'], '');
    assert.equal(
      take.stdout.split('\n').filter(Boolean).length,
      2,
      `the two URLs not scheduled are taken, nothing else\n${take.stdout}`,
    );
    const raw = await runCli(['--store', store, '--scope', 'raw', 'filter-new', '--keys', 'raw'], INPUT);
    assert.equal(raw.code, 0, raw.stderr);
    assert.equal(raw.stdout, INPUT.replace('\r\n', '\n'), 'raw keys: every line as it is');
  });
});
