import { join } from 'node:path';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXACT, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';
import { tempDir } from '../helpers/tmp.js';

/** Transfer: export, import and merge between stores. */
export function transferContract(ctx: ContractContext): void {
  test('export and import: the imported epoch answers exactly as the exported one, into another store', async () => {
    const { store } = await ctx.open();
    const target = await ctx.open();
    const file = join(tempDir('seenstore-contract-'), 'epoch.ssx');
    try {
      const scope = store.scope('s', { capacityUrls: 5_000, fprTarget: 0.01 });
      await scope.add(ctx.urls.slice(0, 8_000));
      await scope.export(file);
      const imported = await target.store.import(file, { scope: 'copy' });
      assert.equal(imported.imported, 1);
      assert.equal(imported.openEpoch, 2);
      const probes = [...ctx.urls.slice(0, 8_000), ...ctx.others.slice(0, 8_000)];
      assert.deepEqual(await target.store.scope('copy').has(probes, { epochs: 1 }), await scope.has(probes));
      await expectCode('USAGE', () => target.store.import(file, { scope: 'copy' }));
    } finally {
      await store.close();
      await target.store.close();
    }
  });

  test('merge: exports of a crawler sharing the seeds are ORed into the open epoch; other seeds are refused', async () => {
    const { store } = await ctx.open();
    const dir = tempDir('seenstore-contract-');
    try {
      const a = store.scope('a', EXACT);
      await a.add(ctx.urls.slice(0, 3_000));
      const seeds = (await a.epoch(1)).sliceDetails[0]!.seeds;
      const b = store.scope('b', { ...EXACT, seeds });
      await b.add(ctx.urls.slice(3_000, 6_000));
      await b.export(join(dir, 'b.ssx'));
      const merged = await a.merge([join(dir, 'b.ssx')], 1);
      assert.ok(
        merged.estimatedNewUrls > 2_500 && merged.estimatedNewUrls < 3_500,
        `estimated ${merged.estimatedNewUrls} new`,
      );
      assert.ok((await a.has(ctx.urls.slice(0, 6_000))).every(Boolean));
      const c = store.scope('c', EXACT);
      await c.add(ctx.urls.slice(6_000, 7_000));
      await c.export(join(dir, 'c.ssx'));
      await expectCode('INCOMPATIBLE', () => a.merge([join(dir, 'c.ssx')]));
    } finally {
      await store.close();
    }
  });
}
