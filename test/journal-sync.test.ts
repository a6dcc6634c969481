// Where the journal's fdatasync runs (src/store/lmdb/journal-sync.ts): on the calling thread while
// the journal is quiet, in libuv's pool under load; batches ready together share a sync.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { setFaultHook } from '../src/store/faults.js';
import { INLINE_SYNC_MS_MAX, SyncPacing } from '../src/store/lmdb/journal-sync.js';
import { tempDir } from './helpers/tmp.js';

/** A sync of `covered` batches that took `ms`, with a caller waiting for the next one or not. */
function synced(pacing: SyncPacing, covered: number, ms: number, waited = false): boolean {
  for (let i = 0; i < covered; i++) pacing.wrote();
  const counted = pacing.begin();
  assert.equal(counted, covered);
  if (waited) pacing.waited();
  pacing.end(counted, ms);
  return pacing.inline;
}

describe('the journal sync: calling thread or pool', () => {
  test('quiet (one batch, nobody waiting, fast) runs the next sync inline; anything else goes back to the pool', () => {
    const pacing = new SyncPacing();
    assert.equal(pacing.inline, false, 'the first sync runs in the pool');
    assert.equal(synced(pacing, 1, 0.1), true);
    assert.equal(synced(pacing, 1, 0.1), true);
    assert.equal(synced(pacing, 2, 0.1), false, 'two batches shared the sync: others are about');
    assert.equal(synced(pacing, 1, 0.1), true);
    assert.equal(synced(pacing, 1, 0.1, true), false, 'a batch waited for the next sync while this one ran');
    assert.equal(synced(pacing, 1, 0.1), true);
    assert.equal(synced(pacing, 1, INLINE_SYNC_MS_MAX), false, 'a slow disk: the event loop is not held for it');
    assert.equal(synced(pacing, 0, 0.1), true, "a sync of another process's frames only");
  });

  test('after quiet adds, 16 scopes adding at once share syncs instead of one each; every answer is durable', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scopes = Array.from({ length: 16 }, (_, i) => store.scope(`s${i}`));
    const urls = (s: number, round: number): string[] =>
      Array.from({ length: 20 }, (_, i) => `https://s${s}.example/${round}/${i}`);
    let syncs = 0;
    setFaultHook((point) => {
      if (point === 'journal:after-sync') syncs++;
    });
    try {
      // One scope alone: each batch its own sync, and the journal turns quiet (inline).
      for (let round = 0; round < 4; round++) await scopes[0]!.addIfAbsent(urls(0, round));
      assert.equal(syncs, 4);
      for (const scope of scopes) await scope.addIfAbsent(['https://warm.example/']);
      syncs = 0;
      const answers = await Promise.all(scopes.map((scope, s) => scope.addIfAbsent(urls(s, 10))));
      assert.ok(answers.every((batch) => batch.every(Boolean)));
      // The first may sync alone, on this thread; the 15 written meanwhile share the next.
      assert.ok(syncs <= 2, `${syncs} syncs for 16 batches ready at once`);
      // Batches that arrive one event each, as serve's store thread gets them: the yield before an
      // inline sync lets those already queued write first. Without it, each syncs alone.
      for (const scope of scopes.slice(0, 3)) await scope.addIfAbsent(['https://quiet.example/']);
      syncs = 0;
      const arriving = await Promise.all(
        scopes.map(
          (scope, s) =>
            new Promise<boolean[]>((resolve, reject) =>
              setImmediate(() => scope.addIfAbsent(urls(s, 11)).then(resolve, reject)),
            ),
        ),
      );
      assert.ok(arriving.every((batch) => batch.every(Boolean)));
      assert.ok(syncs <= 3, `${syncs} syncs for 16 batches arriving one event each`);
    } finally {
      setFaultHook(undefined);
    }
    await store.close();
    const reopened = await SeenStore.open(dir, { readOnly: true });
    for (let s = 0; s < 16; s++)
      assert.ok(
        (await reopened.scope(`s${s}`).has([...urls(s, 10), ...urls(s, 11)])).every(Boolean),
        `scope s${s} lost a batch`,
      );
    await reopened.close();
  });
});
