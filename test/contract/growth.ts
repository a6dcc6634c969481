import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ContractContext } from './context.js';
import { binomialUpper } from '../helpers/data.js';

/** Growth: an epoch past its capacity keeps its false-positive promise. */
export function growthContract(ctx: ContractContext): void {
  test('growth past capacity keeps the false-positive promise', async () => {
    const { store } = await ctx.open();
    try {
      const fprTarget = 0.01;
      const scope = store.scope('s', { capacityUrls: 1_000, fprTarget });
      await scope.add(ctx.urls.slice(0, 12_000));
      const stats = (await scope.stats()).epochs[0]!;
      assert.ok(stats.slices >= 3, `only ${stats.slices} slices for 12x the capacity`);
      const probes = ctx.others.slice(0, 20_000);
      const positives = (await scope.has(probes)).filter(Boolean).length;
      assert.ok(
        positives <= binomialUpper(probes.length, fprTarget),
        `${positives} false positives among ${probes.length} (target ${fprTarget})`,
      );
      assert.ok((await scope.has(ctx.urls.slice(0, 12_000))).every(Boolean), 'a false negative after growth');
    } finally {
      await store.close();
    }
  });
}
