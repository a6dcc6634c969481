import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore, SeenStoreError } from '../../src/index.js';
import { EXACT, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';

/** Calls of every group of operations, on a store's scope `s` and its frontier, each a fresh promise. */
function everyOperation(store: SeenStore, url: string): [string, () => unknown][] {
  const scope = store.scope('s', EXACT);
  const frontier = scope.frontier();
  return [
    ['scope', () => store.scope('t')],
    ['scopeNames', () => store.scopeNames()],
    ['stats', () => store.stats()],
    ['import', () => store.import('x.ssx')],
    ['deleteScope', () => store.deleteScope('t')],
    ['checkpoint', () => store.checkpoint()],
    ['addIfAbsent', () => scope.addIfAbsent([url])],
    ['add', () => scope.add([url])],
    ['has', () => scope.has([url])],
    ['count', () => scope.count([url])],
    ['delete', () => scope.delete([url])],
    ['classify', () => scope.classify([url])],
    ['diff', () => scope.diff([url], 1, 1)],
    ['rotate', () => scope.rotate()],
    ['prune', () => scope.prune({ keepLast: 1 })],
    ['export', () => scope.export('x.ssx')],
    ['merge', () => scope.merge(['x.ssx'])],
    ['scope stats', () => scope.stats()],
    ['epoch', () => scope.epoch(1)],
    ['openEpoch', () => scope.openEpoch()],
    ['scope checkpoint', () => scope.checkpoint()],
    ['enqueue', () => scope.enqueue([url])],
    ['frontier', () => scope.frontier()],
    ['take', () => frontier.take(1)],
    ['done', () => frontier.done(['1'])],
    ['release', () => frontier.release(['1'])],
    ['schedule', () => frontier.schedule([url], 0)],
    ['urlStatus', () => frontier.urlStatus(url)],
    ['frontier stats', () => frontier.stats()],
    ['listQueues', () => frontier.listQueues()],
    ['entries', () => frontier.entries()],
    ['clear', () => frontier.clear()],
  ];
}

/**
 * A closing store (abstract-level's "every operation on a closed database"): calls made after
 * close() began answer STORE_CLOSED, whether close has finished or not; calls in flight when it
 * began finish or answer STORE_CLOSED, never another error, a crash or a hang; what was
 * acknowledged is kept.
 */
export function closingContract(ctx: ContractContext): void {
  test('every operation on a closed store fails with STORE_CLOSED', async () => {
    const { store } = await ctx.open();
    await store.scope('s', EXACT).add(ctx.urls.slice(0, 10));
    const operations = everyOperation(store, ctx.urls[0]!);
    await store.close();
    await store.close();
    for (const [name, call] of operations) {
      const error = await expectCode('STORE_CLOSED', call);
      assert.ok(error.message.length > 0, name);
    }
  });

  test('operations issued while the store closes answer STORE_CLOSED; those in flight finish or answer it', async () => {
    const { store, location } = await ctx.open();
    const scope = store.scope('s', EXACT);
    await scope.add(ctx.urls.slice(0, 10));
    await scope.frontier().configure({ delayMs: 0 });
    const operations = everyOperation(store, ctx.urls[10]!);
    // In flight: adds, enqueues, takes and reads started before close, not yet answered.
    const batches = [ctx.urls.slice(100, 1_100), ctx.urls.slice(1_100, 2_100)];
    const inFlight = Promise.allSettled([
      ...batches.map((batch) => scope.addIfAbsent(batch)),
      scope.enqueue(ctx.urls.slice(2_100, 2_600)),
      scope.frontier().take(10),
      scope.has(ctx.urls.slice(0, 500)),
      scope.stats(),
    ]);
    const closing = store.close();
    const during = operations.map(([name, call]) =>
      expectCode('STORE_CLOSED', call).then((error) => assert.ok(error.message.length > 0, name)),
    );
    await closing;
    await Promise.all(during);
    const settled = await inFlight;
    for (const outcome of settled) {
      if (outcome.status === 'fulfilled') continue;
      const error = outcome.reason as unknown;
      assert.ok(
        error instanceof SeenStoreError && error.code === 'STORE_CLOSED',
        `an operation in flight at close failed otherwise: ${String(error)}`,
      );
    }
    if (!ctx.capabilities.persistent) return;
    // Every batch acknowledged before close is kept.
    const again = await SeenStore.open(location, ctx.factory.options);
    try {
      const reopened = again.scope('s');
      for (const [i, outcome] of settled.slice(0, batches.length).entries()) {
        if (outcome.status !== 'fulfilled') continue;
        assert.ok(
          (await reopened.has(batches[i]!)).every(Boolean),
          `batch ${i} was acknowledged at close and is not kept`,
        );
      }
    } finally {
      await again.close();
    }
  });
}
