import assert from 'node:assert/strict';
import { cpSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { ROOT, sharedUrls } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

async function storeWithData(): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  const scope = store.scope('v', { capacityUrls: 50_000 });
  await scope.add(sharedUrls('crawl-sitelist-15k.txt'));
  await scope.rotate();
  await scope.add(sharedUrls('crawl-benign-35k.txt').slice(0, 5000));
  await store.close();
  return dir;
}

async function flip(
  dir: string,
  db: 'chunks' | 'journal',
  pick: (keys: unknown[]) => unknown,
  at: (length: number) => number,
): Promise<unknown> {
  const root = open({ path: dir, maxDbs: 8 });
  const target = root.openDB({ name: db, encoding: 'binary' });
  const key = pick([...target.getKeys({})]);
  const value = Buffer.from(target.getBinary(key as never)!);
  const i = at(value.length);
  value[i] = value[i]! ^ 0x04;
  await target.put(key as never, value);
  await root.close();
  return key;
}

describe('verify', () => {
  test('a sound store verifies clean (CLI exit 0), the frozen fixture too', async () => {
    const dir = await storeWithData();
    const out = await runCli(['verify', '--store', dir, '--json']);
    assert.equal(out.code, 0, out.stderr);
    const report = JSON.parse(out.stdout);
    assert.equal(report.ok, true);
    assert.equal(report.epochs, 2);
    assert.ok(report.chunks > 0);
    const fixture = tempDir();
    cpSync(join(ROOT, 'test', 'fixtures', 'format-3', 'store'), fixture, { recursive: true });
    assert.equal((await runCli(['migrate', '--store', fixture])).code, 0, 'format 3 -> 4');
    const fixtureReport = JSON.parse((await runCli(['verify', '--store', fixture, '--json'])).stdout);
    assert.equal(fixtureReport.ok, true);
    assert.equal(fixtureReport.journalRecords, 2, 'one tail record in the fixture scope, one in the counting scope');
  });

  test('finds a flipped byte in a chunk, names the chunk, exits 6; the store refuses to answer from it', async () => {
    const dir = await storeWithData();
    const key = (await flip(
      dir,
      'chunks',
      (keys) => keys[1],
      (n) => n - 100,
    )) as [string, number, number, number];
    const out = await runCli(['verify', '--store', dir]);
    assert.equal(out.code, 6);
    assert.match(
      out.stdout,
      new RegExp(`DAMAGE chunk ${key[0]}/${key[1]}/filter ${key[2]}/#${key[3]}: .*checksum mismatch`),
    );
    assert.match(out.stdout, /DAMAGED: .* 1 damaged/);
    // A chunk is checked when a query first touches it: these URLs touch every chunk of the epoch.
    const has = await runCli(
      ['has', '--store', dir, '--scope', 'v', '--epochs', String(key[1])],
      `${sharedUrls('crawl-sitelist-15k.txt').join('\n')}\n`,
    );
    assert.equal(has.code, 6);
  });

  test('finds a damaged journal record', async () => {
    const dir = tempDir();
    const script = `
      import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
      const store = await SeenStore.open(process.argv[1]);
      await store.scope().add(['https://j.example/1', 'https://j.example/2']);
      await store.scope().add(['https://j.example/3']);
      process.kill(process.pid, 'SIGKILL');`;
    const { spawnSync } = await import('node:child_process');
    spawnSync(process.execPath, ['--input-type=module', '-e', script, dir]);
    // A byte of the first frame's record: the second frame was written after it had been synced.
    const journal = readFileSync(join(dir, 'journal.log'));
    const firstEnd = 16 + journal.readUInt32LE(16);
    journal[firstEnd - 1] = journal[firstEnd - 1]! ^ 0x01;
    writeFileSync(join(dir, 'journal.log'), journal);
    const report = JSON.parse((await runCli(['verify', '--store', dir, '--json'])).stdout);
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.damage.map((d: { where: string }) => d.where),
      [`journal file ${join(dir, 'journal.log')}`],
    );
  });

  test('a truncated or overwritten data file is reported, not answered from', async () => {
    const dir = tempDir();
    const big = await SeenStore.open(dir);
    await big.scope('v', { capacityUrls: 500_000 }).add(sharedUrls('crawl-sitelist-15k.txt'));
    await big.close();
    const data = join(dir, 'data.mdb');
    // Beyond the slack LMDB may leave unwritten at the end (64 pages): a real cut.
    assert.ok(statSync(data).size > 8192 + 64 * 4096 + 4096, 'the store must be larger than the slack');
    truncateSync(data, 8192);
    const truncated = await runCli(['verify', '--store', dir]);
    assert.equal(truncated.code, 6, truncated.stdout + truncated.stderr);
    assert.match(truncated.stdout, /DAMAGE /);
    const garbage = await storeWithData();
    writeFileSync(join(garbage, 'data.mdb'), Buffer.alloc(readFileSync(join(garbage, 'data.mdb')).length, 0x5a));
    const out = await runCli(['has', '--store', garbage, '--scope', 'v'], 'https://x.example/\n');
    assert.equal(out.code, 6, out.stderr);
    assert.match(out.stderr, /^seenstore: error STORE_CORRUPT: /);
  });
});
