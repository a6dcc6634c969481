import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore } from '../../src/index.js';
import { EXACT, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';
import { binomialLower, binomialUpper } from '../helpers/data.js';

/** Rotation: sealing, fresh seeds, queries over epochs, and pruning. */
export function rotationContract(ctx: ContractContext): void {
  test('rotation: fresh seeds, capacity sized from the previous epoch, membership over epochs with any and all', async () => {
    const { store } = await ctx.open();
    try {
      const scope = store.scope('s', EXACT);
      await scope.add(ctx.urls.slice(0, 4_000));
      const rotated = await scope.rotate();
      assert.equal(rotated.sealed.epoch, 1);
      assert.equal(rotated.sealed.state, 'sealed');
      assert.equal(rotated.sealed.added, 4_000);
      assert.equal(rotated.opened.epoch, 2);
      assert.equal(rotated.opened.sizing.policy, 'history-v1');
      assert.ok(
        rotated.opened.capacityUrls >= 4_000,
        `capacity ${rotated.opened.capacityUrls} is below what epoch 1 held`,
      );
      const one = await scope.epoch(1);
      assert.notDeepEqual(
        rotated.opened.sliceDetails[0]!.seeds,
        one.sliceDetails[0]!.seeds,
        'the new epoch hashes with the old seeds',
      );
      await scope.add(ctx.urls.slice(2_000, 6_000));
      const probe = ctx.urls.slice(0, 8_000);
      const any = await scope.has(probe, { epochs: 'all', mode: 'any' });
      const both = await scope.has(probe, { epochs: 'all', mode: 'all' });
      const current = await scope.has(probe);
      probe.forEach((_, i) => {
        assert.equal(any[i], i < 6_000, `any, URL ${i}`);
        assert.equal(both[i], i >= 2_000 && i < 4_000, `all, URL ${i}`);
        assert.equal(current[i], i >= 2_000 && i < 6_000, `current, URL ${i}`);
      });
      const classes = await scope.classify(probe.slice(3_000, 5_000));
      assert.deepEqual(
        classes,
        probe.slice(3_000, 5_000).map((_, i) => (3_000 + i < 4_000 ? 'revisit' : 'new')),
      );
      const diff = await scope.diff(probe, 1, 2);
      assert.deepEqual(diff.counts, { both: 2_000, 'only-from': 2_000, 'only-to': 2_000, neither: 2_000 });
    } finally {
      await store.close();
    }
  });

  test('rotation gives fresh seeds and independent false positives; `all` over two epochs measures about p^2', async () => {
    const benign = new Set(ctx.others);
    const probes = ctx.urls.filter((url) => !benign.has(url));
    const positives = (answers: readonly boolean[]): Set<number> =>
      new Set(answers.flatMap((seen, i) => (seen ? [i] : [])));
    const { store } = await ctx.open();
    try {
      // A deliberately small filter: 10,000 URLs at a 10 % target, so the first slice runs at ~5 %.
      const scope = store.scope('temporal', { capacityUrls: 10_000, fprTarget: 0.1 });
      const inserted = ctx.others.slice(0, 10_000);
      await scope.add(inserted);
      const first = positives(await scope.has(probes));
      const rotation = await scope.rotate({ capacityUrls: 10_000 });
      await scope.add(inserted);
      const second = positives(await scope.has(probes));
      const one = await scope.epoch(1);
      assert.notDeepEqual(one.sliceDetails[0]!.seeds, (await scope.epoch(2)).sliceDetails[0]!.seeds);
      assert.equal(rotation.opened.sliceDetails[0]!.mBits, one.sliceDetails[0]!.mBits, 'same geometry, new seeds');
      const n = probes.length;
      const [p1, p2] = [first.size / n, second.size / n];
      for (const p of [p1, p2]) assert.ok(p > 0.03 && p < 0.075, `per-epoch FPR ${p}`);
      const overlap = [...first].filter((i) => second.has(i)).length;
      // Independent seeds: the overlap is binomial(n, p1 * p2); with equal seeds it would be all of it.
      assert.ok(overlap <= binomialUpper(n, p1 * p2), `overlap ${overlap}, expected ~${(n * p1 * p2).toFixed(1)}`);
      assert.ok(overlap >= binomialLower(n, p1 * p2), `overlap ${overlap}, expected ~${(n * p1 * p2).toFixed(1)}`);
      const both = (await scope.has(probes, { epochs: { last: 2 }, mode: 'all' })).filter(Boolean).length;
      assert.equal(both, overlap);
      assert.ok(both / n < p1 / 4, `'all' over two epochs: ${both / n} vs one epoch ${p1}`);
      assert.ok(
        (await scope.has(inserted, { epochs: 'all', mode: 'all' })).every(Boolean),
        'no false negatives in either epoch',
      );
      // `any` over both epochs is the union of each epoch's positives.
      const either = positives(await scope.has(probes, { epochs: 'all', mode: 'any' }));
      assert.deepEqual(
        [...either].sort((a, b) => a - b),
        [...new Set([...first, ...second])].sort((a, b) => a - b),
      );
    } finally {
      await store.close();
    }
  });

  test("a rotation by another handle: this handle's next adds go to the new epoch", async () => {
    const { store, location } = await ctx.open();
    let other: SeenStore | undefined;
    try {
      const scope = store.scope('s', EXACT);
      const [first, second] = [ctx.urls.slice(0, 200), ctx.urls.slice(200, 400)];
      assert.ok((await scope.addIfAbsent(first)).every(Boolean));
      other = await SeenStore.open(location, ctx.factory.options ?? {});
      assert.equal((await other.scope('s').rotate()).opened.epoch, 2);
      // Epoch 2 has fresh bits: the URLs of epoch 1 are new in it, not answered from the sealed epoch.
      assert.ok((await scope.addIfAbsent(first)).every(Boolean), 'an add went to the sealed epoch');
      assert.equal((await scope.add(second, { epoch: 2 })).added, 200);
      assert.equal(
        await other
          .scope('s')
          .rotate()
          .then((r) => r.opened.epoch),
        3,
      );
      await expectCode('EPOCH_SEALED', () => scope.add(ctx.urls.slice(400, 410), { epoch: 2 }));
      assert.equal((await scope.add(ctx.urls.slice(400, 410), { epoch: 3 })).added, 10);
      const counts = (await other.scope('s').stats()).epochs.map((e) => [e.epoch, e.added]);
      assert.deepEqual(counts, [
        [1, 200],
        [2, 400],
        [3, 10],
      ]);
    } finally {
      await other?.close();
      await store.close();
    }
  });

  test('prune keeps what it is told to, and the dropped epochs are gone', async () => {
    const { store } = await ctx.open();
    try {
      const scope = store.scope('s', EXACT);
      for (let n = 0; n < 3; n++) {
        await scope.add(ctx.urls.slice(n * 1_000, (n + 1) * 1_000));
        await scope.rotate();
      }
      const dropped = await scope.prune({ keepLast: 2 });
      assert.deepEqual(
        dropped.map((d) => d.epoch),
        [1, 2],
      );
      assert.deepEqual(
        (await scope.stats()).epochs.map((e) => e.epoch),
        [3, 4],
      );
      await expectCode('NOT_FOUND', () => scope.epoch(1));
      const inThree = await scope.has(ctx.urls.slice(2_000, 3_000), { epochs: 3 });
      assert.ok(inThree.every(Boolean));
    } finally {
      await store.close();
    }
  });
}
