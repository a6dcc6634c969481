import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXACT, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';

/** Counting epochs: count and delete. */
export function countingContract(ctx: ContractContext): void {
  test('counting epochs count and delete; other epochs refuse to', async () => {
    const { store } = await ctx.open();
    try {
      const scope = store.scope('counts', { strategy: 'counting', capacityUrls: 10_000 });
      const url = ctx.urls[0]!;
      await scope.add([url, url, url, ctx.urls[1]!]);
      assert.deepEqual(await scope.count([url, ctx.urls[1]!, ctx.urls[2]!]), [3, 1, 0]);
      assert.equal(await scope.delete([url, ctx.urls[2]!]), 1);
      assert.deepEqual(await scope.count([url]), [2]);
      const plain = store.scope('plain', EXACT);
      await plain.add([url]);
      await expectCode('USAGE', () => plain.count([url]));
      await expectCode('USAGE', () => plain.delete([url]));
    } finally {
      await store.close();
    }
  });
}
