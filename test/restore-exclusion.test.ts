/**
 * A restore must never replace data that a writer committed after the restore began, even when
 * the restore's `locks/exclusive` goes stale (its event loop blocked by a long copy, SIGSTOP, a
 * suspended VM) and lets a writer in. The fault hook blocks the restoring process at
 * `restore:before-swap` (after the pre-restore snapshot and the copy, before the rename), long
 * enough for its lock to go stale, and a writer gets in there.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SeenStore, SeenStoreError } from '../src/index.js';
import { setFaultHook } from '../src/store/faults.js';
import { tempDir } from './helpers/tmp.js';

const INDEX = new URL('../src/index.js', import.meta.url).href;
const LOCK_STALE_MS = 2_000;

/** Blocks this thread (and its event loop, so no lock is refreshed) for `ms`. */
function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A node script that opens the store at `dir` (taking a stale lock for free) and runs `body`. */
function writerScript(dir: string, body: string): string {
  return `
    import { SeenStore } from ${JSON.stringify(INDEX)};
    const store = await SeenStore.open(${JSON.stringify(dir)}, { lockStaleMs: ${LOCK_STALE_MS} });
    ${body}
  `;
}

async function storeWithSnapshot(): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  await store.scope().add(['https://example.org/before-snapshot']);
  await store.snapshot('base');
  await store.scope().add(['https://example.org/after-snapshot']);
  await store.close();
  return dir;
}

async function held(dir: string, urls: string[]): Promise<boolean[]> {
  const store = await SeenStore.open(dir);
  try {
    return await store.scope().has(urls);
  } finally {
    await store.close();
  }
}

describe('restore holds its exclusion whatever its event loop does', () => {
  after(() => setFaultHook(undefined));

  test('a writer that got in and finished while the restore was stalled makes it refuse; its URL stays', async () => {
    const dir = await storeWithSnapshot();
    let wrote = '';
    setFaultHook((point) => {
      if (point !== 'restore:before-swap') return;
      blockFor(LOCK_STALE_MS + 1_500);
      const writer = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          writerScript(
            dir,
            `
        const fresh = await store.scope().addIfAbsent(['https://example.org/slipped-in']);
        await store.close();
        process.stdout.write(String(fresh[0]));
      `,
          ),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(writer.status, 0, writer.stderr);
      wrote = writer.stdout;
    });
    await assert.rejects(
      SeenStore.restoreSnapshot(dir, 'base', { lockStaleMs: LOCK_STALE_MS }),
      (error: unknown) =>
        error instanceof SeenStoreError &&
        error.code === 'STORE_LOCKED' &&
        /written while the restore ran/.test(error.message),
    );
    setFaultHook(undefined);
    assert.equal(wrote, 'true', 'the writer got in and acknowledged its URL');
    assert.deepEqual(await held(dir, ['https://example.org/slipped-in', 'https://example.org/after-snapshot']), [
      true,
      true,
    ]);
    assert.deepEqual(
      readdirSync(dir).filter((name) => name.includes('restoring')),
      [],
      'no copy is left beside the data',
    );
  });

  test('a writer that got in and is still running makes it refuse', async () => {
    const dir = await storeWithSnapshot();
    const ready = join(tempDir(), 'ready');
    let writer: ReturnType<typeof spawn> | undefined;
    setFaultHook((point) => {
      if (point !== 'restore:before-swap') return;
      blockFor(LOCK_STALE_MS + 1_500);
      writer = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          writerScript(
            dir,
            `
        await store.scope().add(['https://example.org/still-running']);
        (await import('node:fs')).writeFileSync(${JSON.stringify(ready)}, '');
        setTimeout(() => store.close(), 60_000);
      `,
          ),
        ],
        { stdio: 'ignore' },
      );
      for (let waitedMs = 0; !existsSync(ready) && waitedMs < 20_000; waitedMs += 50) blockFor(50);
    });
    after(() => writer?.kill('SIGKILL'));
    await assert.rejects(
      SeenStore.restoreSnapshot(dir, 'base', { lockStaleMs: LOCK_STALE_MS }),
      (error: unknown) =>
        error instanceof SeenStoreError && error.code === 'STORE_LOCKED' && /is open in process/.test(error.message),
    );
    setFaultHook(undefined);
    writer!.kill('SIGKILL');
    assert.deepEqual(await held(dir, ['https://example.org/still-running']), [true]);
  });

  test('an undisturbed restore names the snapshot of the data it replaced', async () => {
    const dir = await storeWithSnapshot();
    const result = await SeenStore.restoreSnapshot(dir, 'base');
    assert.equal(result.name, 'base');
    assert.match(result.preRestore.name, /^pre-restore-\d{8}T\d{6}Z-\d{3}$/);
    assert.equal(result.preRestore.reason, 'pre-restore');
    assert.deepEqual(await held(dir, ['https://example.org/before-snapshot', 'https://example.org/after-snapshot']), [
      true,
      false,
    ]);
  });
});
