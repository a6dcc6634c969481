import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore } from '../../src/index.js';
import { EXACT, type ContractContext } from './context.js';

export function scopesContract(ctx: ContractContext): void {
  test('deleteScope: epochs, frontier and settings gone for every handle; the name starts afresh; other scopes untouched', async () => {
    const { store } = await ctx.open();
    try {
      const urls = ctx.urls.slice(0, 200);
      const doomed = store.scope('doomed', { ...EXACT, capacityUrls: 300_000 });
      await doomed.frontier().configure({ delayMs: 0, maxInFlightPerQueue: 3 });
      await doomed.enqueue(urls.slice(0, 50));
      await doomed.frontier().take(5, { owner: 'w' });
      await doomed.rotate();
      await doomed.add(urls.slice(50, 100));
      const kept = store.scope('kept', EXACT);
      await kept.add(urls);
      await kept.enqueue(['https://kept.example/1']);
      assert.deepEqual(await store.deleteScope('doomed'), { epochs: 2, queuedUrls: 50 });
      assert.deepEqual(await store.scopeNames(), ['kept']);
      assert.equal(await store.deleteScope('doomed'), undefined, 'a second delete found something');
      assert.deepEqual(await kept.has(urls.slice(0, 3)), [true, true, true], 'another scope lost its URLs');
      assert.equal((await kept.frontier().stats()).pending, 1, "another scope's frontier changed");
      // Another handle, opened after the delete, finds nothing of it; the name is a new scope with its own options.
      if (ctx.capabilities.sharedAcrossProcesses) {
        const other = await SeenStore.open(store.dir, ctx.factory.options ?? {});
        try {
          assert.deepEqual(await other.scopeNames(), ['kept']);
        } finally {
          await other.close();
        }
      }
      const again = store.scope('doomed', EXACT);
      assert.deepEqual(
        await again.add(urls.slice(0, 100)),
        { submitted: 100, added: 100 },
        'a URL of the deleted scope was still seen',
      );
      assert.deepEqual(
        (await again.stats()).epochs.map((epoch) => epoch.epoch),
        [1],
      );
      assert.equal((await again.stats()).epochs[0]!.capacityUrls, EXACT.capacityUrls);
      assert.deepEqual(await again.frontier().stats(), { pending: 0, leased: 0, done: 0, failed: 0, queues: 0 });
      assert.deepEqual(
        await again.frontier().settings(),
        await store.scope('fresh').frontier().settings(),
        'frontier settings outlived the scope',
      );
    } finally {
      await store.close();
    }
  });
}
