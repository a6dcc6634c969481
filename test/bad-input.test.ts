import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { Packr } from 'msgpackr';
import { ERROR_CODES, SeenStore } from '../src/index.js';
import { CORPUS, urlReadingCommands } from './helpers/bad-input-corpus.js';
import { runCli, type CliResult } from './helpers/cli.js';
import { gridPairRuns } from './helpers/scale.js';
import { tempDir } from './helpers/tmp.js';

const DOCUMENTED_EXITS = new Set<number>([0, ...Object.values(ERROR_CODES)]);

/** Bad input never crashes: a documented exit code, no uncaught error or stack trace, one error line when it fails. */
function assertHandled(out: CliResult, what: string): void {
  assert.equal(out.signal, null, `${what}: killed by ${out.signal}`);
  assert.ok(
    out.code !== null && DOCUMENTED_EXITS.has(out.code),
    `${what}: exit ${out.code} is not documented\n${out.stderr}`,
  );
  assert.doesNotMatch(out.stderr, /\n\s+at |Error: .*\n.*node:/, `${what}: stack trace without --debug\n${out.stderr}`);
  for (const line of out.stderr.split('\n').filter(Boolean)) {
    assert.doesNotMatch(
      line,
      /^(node:|\w*Error\b|file:\/\/)/,
      `${what}: an uncaught error ${JSON.stringify(line.slice(0, 200))}`,
    );
  }
  if (out.code !== 0)
    assert.equal(
      out.stderr.split('\n').filter((line) => /error/.test(line)).length,
      1,
      `${what}: one error line\n${out.stderr}`,
    );
}

async function storeWithEpoch(): Promise<{ dir: string; exportFile: string }> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  const scope = store.scope();
  await scope.add(['https://seed.example/1', 'https://seed.example/2']);
  await store.scope('counts', { strategy: 'counting', capacityUrls: 1000 }).add(['https://seed.example/1']);
  const exportFile = join(tempDir(), 'e.ssx');
  await scope.export(exportFile);
  await store.close();
  return { dir, exportFile };
}

function digest(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

describe('bad input (issue 7 corpus)', () => {
  test('every URL-reading command, every corpus input: handled, skipping and with --on-invalid fail', async () => {
    const { dir, exportFile } = await storeWithEpoch();
    // Skipping and failing in turn, so that inputs and commands meet both modes. `npm test` runs a
    // third of the pairs (every input through 3 or 4 commands, every command on 3 inputs, over
    // the diagonals i + j = 0 mod 3); `npm run test:full` every input through every command once;
    // `npm run soak` every input, command and mode (soak/corpus.ts).
    const summaryFile = join(tempDir(), 'b.sum');
    assert.equal((await runCli(['setdiff', 'summarize', '--out', summaryFile], 'https://seed.example/1\n')).code, 0);
    const commands = urlReadingCommands(exportFile, summaryFile, join(tempDir(), 'a.sum'));
    for (const [i, [name, input]] of Object.entries(CORPUS).entries()) {
      for (const [j, command] of commands.entries()) {
        if (!gridPairRuns(i, j, 3)) continue;
        const extra = (i + j) % 2 === 0 ? [] : ['--on-invalid', 'fail'];
        const args = [...command, '--store', dir, ...extra];
        const out = await runCli(args, input);
        assertHandled(out, `${args.join(' ')} < ${name}`);
        assert.ok(
          out.code === 0 || out.code === ERROR_CODES.INVALID_URL,
          `${args.join(' ')} < ${name}: exit ${out.code}\n${out.stderr}`,
        );
      }
    }
    const store = await SeenStore.open(dir);
    assert.ok((await store.verify()).ok, 'the store is sound after the whole corpus');
    await store.close();
  });

  test('every command on a store of a newer format, a store path that is a file, and a missing store: handled, nothing written', async () => {
    const { dir, exportFile } = await storeWithEpoch();
    const root = open({ path: dir, maxDbs: 8 });
    const meta = root.openDB({ name: 'meta', encoding: 'binary' });
    const packr = new Packr({ useRecords: false, mapsAsObjects: true });
    await meta.put('store', packr.pack({ ...(packr.unpack(meta.getBinary('store')!) as object), formatVersion: 99 }));
    await root.close();
    const before = digest(join(dir, 'data.mdb'));
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a store');
    const commands: string[][] = [
      ['filter-new'],
      ['add'],
      ['has'],
      ['classify'],
      ['diff', '--from', '1', '--to', '1'],
      ['epoch', 'list'],
      ['epoch', 'show', '1'],
      ['epoch', 'rotate'],
      ['epoch', 'prune', '--keep-last', '1'],
      ['stats'],
      ['export', '--out', join(tempDir(), 'x.ssx')],
      ['import', exportFile, '--scope', 'new'],
      ['merge', exportFile, '--into-epoch', '1'],
      ['verify'],
      ['snapshot', 'create'],
      ['snapshot', 'list'],
      ['snapshot', 'restore', 'none'],
      ['snapshot', 'delete', 'none'],
      ['migrate'],
      ['count', '--scope', 'counts'],
      ['delete', '--scope', 'counts'],
    ];
    // Every command on the newer store; `npm test` runs each on a file or on a missing store in
    // turn, `npm run test:full` on both.
    for (const [i, command] of commands.entries()) {
      const newer = await runCli([...command, '--store', dir], 'https://x.example/\n');
      assertHandled(newer, `${command.join(' ')} on a newer store`);
      assert.notEqual(newer.code, 0, `${command.join(' ')} must refuse a newer store`);
      if (gridPairRuns(i, 0, 2)) {
        const asFile = await runCli([...command, '--store', file], 'https://x.example/\n');
        assertHandled(asFile, `${command.join(' ')} on a file`);
        assert.notEqual(asFile.code, 0);
      }
      if (gridPairRuns(i, 1, 2)) {
        const missing = await runCli(
          [...command, '--store', join(tempDir(), 'nothing', 'here')],
          'https://x.example/\n',
        );
        assertHandled(missing, `${command.join(' ')} on a missing store`);
      }
    }
    assert.equal(digest(join(dir, 'data.mdb')), before, 'nothing was written to the newer store');
    assert.equal(readFileSync(file, 'utf8'), 'not a store');
  });

  test('invalid option values on every command that takes them: USAGE, one line', async () => {
    const { dir, exportFile } = await storeWithEpoch();
    const cases: string[][] = [
      ['add', '--capacity', '0'],
      ['add', '--capacity', '-1'],
      ['add', '--capacity', '2.5'],
      ['add', '--fpr', '0'],
      ['add', '--fpr', '1'],
      ['add', '--fpr', 'NaN'],
      ['add', '--layout', 'x'],
      ['add', '--normalize', 'x'],
      ['add', '--seeds', 'zz'],
      ['add', '--batch-size', '0'],
      ['add', '--on-invalid', 'maybe'],
      ['has', '--epochs', 'yesterday'],
      ['has', '--mode', 'some'],
      ['diff', '--against', exportFile, '--on-invalid', 'maybe'],
      ['diff', '--from', '1'],
      ['diff', '--print', 'x', '--from', '1', '--to', '1'],
      ['epoch', 'show', 'x'],
      ['epoch', 'rotate', '--capacity', '0'],
      ['epoch', 'rotate', '--fpr', '2'],
      ['epoch', 'prune'],
      ['epoch', 'prune', '--sealed-within', 'soon'],
      ['export'],
      ['merge', 'x.ssx'],
      ['merge', 'x.ssx', '--into-epoch', '1', '--out', 'y.ssx'],
      ['snapshot', 'create', '.hidden'],
      ['--scope', '', 'add'],
      ['add', '--scope', 'fresh', '--strategy', 'x'],
      ['add', '--scope', 'fresh', '--strategy', 'spatial:0'],
      ['filter-new', '--scope', 'fresh', '--strategy', 'counting:3'],
      ['epoch', 'rotate', '--strategy', 'spatial:99'],
      ['add', '--scope', 'fresh', '--strategy', 'spatial:2', '--seeds', '0123456789abcdef'],
      ['simulate', '--urls', exportFile, '--mode', 'x'],
      ['simulate', '--urls', exportFile, '--runs', '-1'],
      ['has', '--epochs', '1..99999999999999'],
      ['has', '--epochs', '4294967296'],
      ['has', '--epochs', 'last:99999999999999'],
      ['count', '--scope', 'counts', '--epochs', '1..4294967296'],
    ];
    for (const args of cases) {
      const out = await runCli([...args, '--store', dir], 'https://x.example/\n');
      assertHandled(out, args.join(' '));
      assert.equal(out.code, ERROR_CODES.USAGE, `${args.join(' ')}: ${out.stderr}`);
    }
    const wide = await runCli(['has', '--store', dir, '--epochs', '1..4294967295'], 'https://x.example/\n');
    assertHandled(wide, 'a range within the bound, past the epochs that exist');
    assert.equal(wide.code, ERROR_CODES.NOT_FOUND, wide.stderr);
    assert.match(wide.stderr, /has no epoch 2 /);
    const unknown = await runCli(['has', '--store', dir, '--scope', 'nope', '--epochs', '7'], 'https://x.example/\n');
    assertHandled(unknown, 'unknown scope');
    const epoch = await runCli(['epoch', 'show', '9', '--store', dir]);
    assertHandled(epoch, 'unknown epoch');
    assert.equal(epoch.code, ERROR_CODES.NOT_FOUND);
  });

  test('store paths: an empty --store is USAGE, a directory where LMDB cannot create files a typed error', async () => {
    const cwd = tempDir();
    for (const command of [['stats'], ['add'], ['has']]) {
      const empty = await runCli([...command, '--store', ''], 'https://x.example/\n', {}, cwd);
      assertHandled(empty, `${command.join(' ')} --store ""`);
      assert.equal(empty.code, ERROR_CODES.USAGE, empty.stderr);
    }
    assert.deepEqual(readdirSync(cwd), [], 'nothing was created in the current directory');
    for (const command of [['stats'], ['add'], ['filter-new'], ['snapshot', 'create']]) {
      // /proc is not empty: --allow-nonempty-dir lets the open reach LMDB, which cannot create its files there.
      const proc = await runCli([...command, '--store', '/proc', '--allow-nonempty-dir'], 'https://x.example/\n');
      assertHandled(proc, `${command.join(' ')} --store /proc`);
      assert.ok(
        proc.code === ERROR_CODES.IO_ERROR || proc.code === ERROR_CODES.NOT_FOUND,
        `${command.join(' ')} --store /proc: ${proc.code} ${proc.stderr}`,
      );
    }
  });

  test('a UTF-16 input (LE or BE, with its byte-order mark) is refused at line 1, nothing of it recorded; a UTF-8 one has its mark removed', async () => {
    const dir = tempDir();
    const text = 'https://utf16.example/a\nhttps://utf16.example/b\n';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le).swap16();
    const bom = await runCli(
      ['add', '--store', dir],
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]),
    );
    assert.equal(bom.code, 0, bom.stderr);
    for (const [name, input] of [
      ['LE', le],
      ['BE', be],
    ] as const) {
      for (const command of [['add'], ['filter-new'], ['has']]) {
        const out = await runCli([...command, '--store', dir], input);
        assertHandled(out, `${command.join(' ')} < UTF-16${name}`);
        assert.equal(out.code, ERROR_CODES.INVALID_URL, out.stderr);
        assert.match(out.stderr, new RegExp(`line 1: the input is UTF-16${name}`));
        assert.equal(out.stdout, '');
      }
    }
    const out = await runCli(['add', '--store', dir, '--scope', 'u16'], le);
    assert.equal(out.code, ERROR_CODES.INVALID_URL, out.stderr);
    const store = await SeenStore.open(dir);
    const { epochs } = await store.scope().stats();
    assert.equal(epochs[0]!.submitted, 2, 'only the two lines of the UTF-8 file were ever added');
    assert.ok(!(await store.scopeNames()).includes('u16'), 'a refused UTF-16 input creates nothing');
    assert.deepEqual(
      await store.scope().has(['https://utf16.example/a', 'https://utf16.example/b']),
      [true, true],
      'the UTF-8 mark is not part of line 1',
    );
    await store.close();
  });
});
