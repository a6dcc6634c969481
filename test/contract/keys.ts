import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore } from '../../src/index.js';
import { expectCode } from '../helpers/errors.js';
import { EXACT, type ContractContext } from './context.js';

/** Keys: URLs by default (format 4), raw on request; the mode is the epoch's, kept by rotation and reopening. */
export function keysContract(ctx: ContractContext): void {
  test('keys: URLs by default (trimmed, others INVALID_URL), raw any string; recorded in the header, kept by rotation and reopening', async () => {
    const { store, location } = await ctx.open();
    const urls = ctx.urls;
    let again: SeenStore | undefined;
    try {
      const urlScope = store.scope('u', EXACT);
      await expectCode('INVALID_URL', () => urlScope.addIfAbsent([urls[0]!, 'not a url at all']));
      assert.deepEqual(await urlScope.addIfAbsent([urls[0]!, `  ${urls[0]!}\t`]), [true, false]);
      const raw = store.scope('r', { ...EXACT, keys: 'raw' });
      assert.deepEqual(await raw.addIfAbsent(['not a url at all', ' not a url at all']), [true, true]);
      await urlScope.rotate();
      await raw.rotate();
      // A second handle on the store: a reopening where the store outlives the process, else one
      // more handle on the same memory store.
      again = await SeenStore.open(location, ctx.factory.options ?? {});
      assert.deepEqual((await again.scope('u').stats()).epochs.map((e) => e.normalize), ['url', 'url']);
      assert.deepEqual((await again.scope('r').stats()).epochs.map((e) => e.normalize), ['none', 'none']);
      await expectCode('INVALID_URL', () => again!.scope('u').addIfAbsent(['/relative/path']));
      assert.deepEqual(await again.scope('r').addIfAbsent(['/relative/path']), [true]);
      assert.deepEqual(await again.scope('u').has([` ${urls[0]!}`], { epochs: 'all' }), [true]);
    } finally {
      await again?.close();
      await store.close();
    }
  });
}
