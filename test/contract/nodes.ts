import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore, type SeenStoreError } from '../../src/index.js';
import { openTimed, type ContractContext } from './context.js';

export function nodesContract(ctx: ContractContext): void {
  test('nodes: a heartbeat lists a node until its time to live ends or it leaves, for every handle of the store', async () => {
    const { store, time } = await openTimed(ctx.factory);
    const other = ctx.capabilities.sharedAcrossProcesses
      ? await SeenStore.open(store.dir, { ...ctx.factory.options, ...time.options })
      : store;
    try {
      const nodes = store.nodes();
      assert.deepEqual(await nodes.live(), []);
      await nodes.heartbeat('10.0.0.2:7071', 60_000);
      await other.nodes().heartbeat('10.0.0.1:7071', 60_000);
      await nodes.heartbeat('[::1]:7072', 300);
      assert.deepEqual(
        await nodes.live(),
        ['10.0.0.1:7071', '10.0.0.2:7071', '[::1]:7072'],
        "sorted, every handle's nodes",
      );
      assert.deepEqual(await other.nodes().live(), await nodes.live(), 'another handle sees the same nodes');
      // Not refreshed: gone by itself once its 300 ms are over (a node killed without leaving).
      time.advance(299);
      assert.deepEqual(
        await other.nodes().live(),
        ['10.0.0.1:7071', '10.0.0.2:7071', '[::1]:7072'],
        'a node was gone before its time to live ended',
      );
      time.advance(1);
      assert.deepEqual(
        await other.nodes().live(),
        ['10.0.0.1:7071', '10.0.0.2:7071'],
        'the unrefreshed node outlived its time to live',
      );
      await nodes.heartbeat('10.0.0.2:7071', 60_000);
      await other.nodes().leave('10.0.0.1:7071');
      await other.nodes().leave('10.0.0.9:7071');
      assert.deepEqual(
        await nodes.live(),
        ['10.0.0.2:7071'],
        'a node that left is gone at once; leaving twice does nothing',
      );
      for (const [address, ttlMs] of [
        ['', 1000],
        ['has space:1', 1000],
        ['x'.repeat(300), 1000],
        ['a:1', 0],
        ['a:1', 1.5],
      ] as const) {
        await assert.rejects(
          nodes.heartbeat(address, ttlMs),
          (error: SeenStoreError) => error.code === 'USAGE',
          `${address.slice(0, 20)} ${ttlMs}`,
        );
      }
    } finally {
      if (other !== store) await other.close();
      await store.close();
    }
  });
}
