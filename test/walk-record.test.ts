import assert from 'node:assert/strict';
import { cpSync, existsSync, openSync, closeSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { walkPages } from '../src/store/lmdb/page-walk.js';
import { recordSoundWalk, walkRecordDir, walkedSound } from '../src/store/lmdb/walk-record.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

async function storeWith(urls: readonly string[]): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  await store.scope().add(urls);
  await store.close();
  return dir;
}

/** Records a sound walk of the store's data file as an open two seconds from now would (the file has settled by then). */
function recordLater(dir: string): void {
  const path = join(dir, 'data.mdb');
  const stats = statSync(path, { bigint: true });
  recordSoundWalk(stats, stats, walkPages(path), Date.now() + 2000);
}

const sound = (dir: string): boolean =>
  walkedSound(join(dir, 'data.mdb'), statSync(join(dir, 'data.mdb'), { bigint: true }));

describe('the record of a sound page walk', () => {
  // This process and the stores' children keep their records in a temporary cache directory.
  process.env.XDG_CACHE_HOME = tempDir();

  test('is not written for a data file that changed within the last second', async () => {
    const dir = await storeWith(['https://a.example/']);
    const reopened = await SeenStore.open(dir);
    await reopened.close();
    const { dev, ino } = statSync(join(dir, 'data.mdb'), { bigint: true });
    assert.equal(existsSync(join(walkRecordDir(), `${dev}-${ino}.json`)), false);
  });

  test('lets an open skip the walk of the same, unchanged file only', async () => {
    const dir = await storeWith(['https://a.example/']);
    recordLater(dir);
    assert.equal(sound(dir), true);
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });
    assert.equal(sound(copy), false, 'a copy is another file (inode)');
    const store = await SeenStore.open(dir);
    await store.scope().add(['https://b.example/']);
    await store.close();
    assert.equal(sound(dir), false, 'a commit changed the file');
  });

  test('a data file written or cut after the record is walked again, and refused when damaged', async () => {
    const dir = await storeWith(['https://a.example/']);
    const path = join(dir, 'data.mdb');
    recordLater(dir);
    const fd = openSync(path, 'r+');
    // The main database's root page number on both meta pages: the walk's "points outside" damage.
    for (const page of [0, 1]) writeSync(fd, Buffer.from([0xff, 0xff, 0xff, 0x7f]), 0, 4, page * 4096 + 24 + 72 + 40);
    closeSync(fd);
    assert.equal(sound(dir), false, 'written in place: the ctime moved');
    await expectCode('STORE_CORRUPT', () => SeenStore.open(dir, { create: false }));
    const cut = await storeWith(['https://a.example/']);
    recordLater(cut);
    truncateSync(join(cut, 'data.mdb'), 3 * 4096);
    assert.equal(sound(cut), false);
    await expectCode('STORE_CORRUPT', () => SeenStore.open(cut, { create: false }));
  });
});
