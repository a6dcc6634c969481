import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { collectCli, runCli, runCrashChild, spawnCli } from './helpers/cli.js';
import { sharedUrls } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

const SITELIST = sharedUrls('crawl-sitelist-15k.txt');

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  assert.equal(child.status, 0);
  return child.pid;
}

async function smallStore(): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  await store.scope().add(SITELIST.slice(0, 1000));
  await store.close();
  return dir;
}

describe('leftovers of killed processes', () => {
  test('temporary snapshot, restore and export files of dead processes are removed by the next command that meets them; a live one is kept', async () => {
    const dir = await smallStore();
    const dead = deadPid();
    const live = process.pid;
    const snapshots = join(dir, 'snapshots');
    for (const pid of [dead, live]) {
      mkdirSync(join(snapshots, `.tmp-nightly-${pid}`), { recursive: true });
      writeFileSync(join(snapshots, `.tmp-nightly-${pid}`, 'data.mdb'), 'partial');
      writeFileSync(join(dir, `data.mdb.restoring-${pid}`), 'partial');
    }
    const list = await runCli(['snapshot', 'list', '--store', dir]);
    assert.equal(list.code, 0, list.stderr);
    assert.ok(!existsSync(join(snapshots, `.tmp-nightly-${dead}`)), "a dead snapshot writer's directory is removed");
    assert.ok(!existsSync(join(dir, `data.mdb.restoring-${dead}`)), "a dead restore's copy is removed");
    assert.ok(existsSync(join(snapshots, `.tmp-nightly-${live}`)), "a live process's directory is kept");
    assert.ok(existsSync(join(dir, `data.mdb.restoring-${live}`)), "a live process's copy is kept");

    const outDir = tempDir();
    const out = join(outDir, 'e.ssx');
    for (const pid of [dead, live]) writeFileSync(`${out}.tmp-${pid}`, 'partial');
    writeFileSync(join(outDir, `other.ssx.tmp-${dead}`), 'not ours');
    const exported = await runCli(['export', '--out', out, '--store', dir]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.ok(!existsSync(`${out}.tmp-${dead}`), "a dead export writer's file is removed");
    assert.ok(existsSync(`${out}.tmp-${live}`), 'a live one is kept');
    assert.ok(existsSync(join(outDir, `other.ssx.tmp-${dead}`)), 'only the temporary files of the file being written');
  });
});

describe('a store created whole or not at all', () => {
  test('a creator killed before its store is in place leaves no half store: the next open creates it, and the staging directory of the dead creator goes', async () => {
    const parent = tempDir();
    const dir = join(parent, 'store');
    const urls = join(parent, 'urls.txt');
    writeFileSync(urls, 'https://a.example/1\nhttps://a.example/2\n');
    const killed = await runCrashChild([dir, 'live', urls, '1', 'create:before-link']);
    assert.equal(killed.signal, 'SIGKILL', 'the child reached the fault point');
    assert.equal(killed.acked, 0);
    const staged = readdirSync(dir);
    assert.equal(staged.length, 1, `the killed creator left only its staging directory: ${staged.join(', ')}`);
    assert.match(staged[0]!, /^\.seenstore-creating-\d+-\d+$/);

    const store = await SeenStore.open(dir);
    assert.deepEqual(await store.scope('live').addIfAbsent(['https://a.example/1']), [true]);
    await store.close();
    assert.deepEqual(
      readdirSync(dir).filter((name) => name.startsWith('.seenstore-creating-')),
      [],
      "the dead creator's staging directory was removed",
    );
  });

  test('--store naming a symbolic link to an empty directory creates the store in that directory', async () => {
    const parent = tempDir();
    mkdirSync(join(parent, 'real'));
    symlinkSync(join(parent, 'real'), join(parent, 'link'));
    const run = await runCli(['--store', join(parent, 'link'), 'add'], 'https://a.example/1\n');
    assert.equal(run.code, 0, run.stderr);
    assert.ok(readdirSync(join(parent, 'real')).includes('data.mdb'));
  });

  test('four processes creating one store at once all open the same store', async () => {
    const parent = tempDir();
    const dir = join(parent, 'store');
    const files = [0, 1, 2, 3].map((n) => {
      const file = join(parent, `urls-${n}.txt`);
      writeFileSync(file, SITELIST.slice(n * 100, n * 100 + 100).join('\n'));
      return file;
    });
    const runs = await Promise.all(files.map((file) => runCrashChild([dir, 'live', file, '50', 'none'])));
    assert.ok(
      runs.every((run) => run.done),
      'every creator finished',
    );
    const store = await SeenStore.open(dir, { readOnly: true });
    const seen = await store.scope('live').has(SITELIST.slice(0, 400));
    assert.ok(seen.every(Boolean), 'every URL any creator added is in the one store');
    await store.close();
    assert.deepEqual(
      [...readdirSync(parent), ...readdirSync(dir)].filter((name) => name.startsWith('.seenstore-creating-')),
      [],
    );
  });
});

describe('epoch rotate --if-epoch', () => {
  test('rotates only when N is the open epoch, else one line and exit 0', async () => {
    const dir = await smallStore();
    const stale = await runCli(['epoch', 'rotate', '--if-epoch', '2', '--store', dir]);
    assert.equal(stale.code, 0, stale.stderr);
    assert.equal(stale.stdout, 'epoch 2 is not the open epoch (1 is): nothing rotated\n');
    const rotated = await runCli(['epoch', 'rotate', '--if-epoch', '1', '--store', dir]);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^sealed epoch 1: /);
    const again = await runCli(['epoch', 'rotate', '--if-epoch', '1', '--json', '--store', dir]);
    assert.deepEqual(JSON.parse(again.stdout), { rotated: false, ifEpoch: 1, openEpoch: 2 });
  });

  test('two concurrent rotate --if-epoch N: exactly one rotates, every round', async () => {
    const dir = await smallStore();
    for (let round = 1; round <= 5; round++) {
      const children = [0, 1].map(() => spawnCli(['epoch', 'rotate', '--if-epoch', String(round), '--store', dir]));
      for (const child of children) child.stdin!.end();
      const outs = await Promise.all(children.map((child) => collectCli(child)));
      for (const out of outs) assert.equal(out.code, 0, out.stderr);
      const rotations = outs.filter((out) => out.stdout.startsWith(`sealed epoch ${round}:`));
      const noOps = outs.filter(
        (out) => out.stdout === `epoch ${round} is not the open epoch (${round + 1} is): nothing rotated\n`,
      );
      assert.equal(rotations.length, 1, `round ${round}: ${outs.map((o) => o.stdout.split('\n')[0]).join(' | ')}`);
      assert.equal(noOps.length, 1);
      const list = await runCli(['epoch', 'list', '--json', '--store', dir]);
      assert.deepEqual(
        JSON.parse(list.stdout).epochs.map((e: { epoch: number }) => e.epoch),
        Array.from({ length: round + 1 }, (_, i) => i + 1),
      );
    }
  });
});
