import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXACT, openTimed, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';

/** Every URL of a take from one queue. */
const ALL = 65_536;

/** The frontier: discovery exactly once, leases, payloads, owners. */
export function frontierContract(ctx: ContractContext): void {
  test('frontier: discovery exactly once, leases that run out, done and release, queued URLs kept across rotation', async () => {
    const { store, time } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('f', EXACT);
      // One queue without delay: the frontier as a plain durable queue, oldest first.
      await scope.frontier().configure({ queueKey: 'none', delayMs: 0 });
      const input = [...ctx.urls.slice(0, 1_000), ...ctx.urls.slice(0, 200)];
      assert.equal((await scope.enqueue(input)).filter(Boolean).length, 1_000);
      assert.equal((await scope.enqueue(ctx.urls.slice(0, 1_000))).filter(Boolean).length, 0, 'a URL was queued twice');
      const frontier = scope.frontier();
      // Leases that run out only when the test moves its clock past them (below).
      const short = await frontier.take(300, { perQueue: ALL, leaseMs: 60_000 });
      assert.equal(short.length, 300);
      ctx.takenFirst(
        short.map((entry) => entry.url),
        ctx.urls.slice(0, 1_000),
        'not taken oldest first',
      );
      assert.ok(short.every((entry) => entry.attempts === 1 && entry.epoch === 1));
      const [rest, none] = await Promise.all([
        frontier.take(1_000, { perQueue: ALL, leaseMs: 60_000 }),
        frontier.take(1_000, { perQueue: ALL, leaseMs: 60_000 }),
      ]);
      assert.equal(rest.length + none.length, 700, 'two takes handed out one URL twice, or lost one');
      assert.equal(new Set([...short, ...rest, ...none].map((entry) => entry.id)).size, 1_000);
      assert.deepEqual(
        await frontier.take(10, { perQueue: ALL }),
        [],
        'a leased URL was taken again before its lease ran out',
      );
      assert.equal(await frontier.release(short.map((entry) => entry.id)), 300);
      // A lease of 1 ms on the test's clock, which stands still: a take answered after its lease
      // ended hands out nothing, and a server that times leases checks that on the store's clock.
      const expiring = await frontier.take(1_000, { perQueue: ALL, leaseMs: 1 });
      ctx.sameTaken(
        expiring.map((entry) => entry.url),
        short.map((entry) => entry.url),
        'released URLs did not wait again',
      );
      assert.deepEqual(
        await frontier.take(10, { perQueue: ALL }),
        [],
        'a URL was taken again before its lease ran out',
      );
      time.advance(Math.max(...expiring.map((entry) => entry.leaseUntilMs)) + 1 - time.now());
      const retried = await frontier.take(1_000, { perQueue: ALL, leaseMs: 60_000 });
      ctx.sameTaken(
        retried.map((entry) => entry.url),
        short.map((entry) => entry.url),
        'URLs whose lease ran out did not come back',
      );
      assert.ok(retried.every((entry) => entry.attempts === 3));
      const finished = [...rest, ...none].map((entry) => entry.id);
      // A crawler's failed requests (issue 45): finished all the same, counted apart from done.
      assert.equal(await frontier.done(finished.slice(0, 50), { failed: true }), 50);
      assert.equal(await frontier.done(finished), 650);
      assert.equal(await frontier.done(finished), 0, 'a URL was finished twice');
      assert.equal(await frontier.done(finished, { failed: true }), 0, 'a finished URL was counted failed');
      assert.equal(await frontier.release(retried.map((entry) => entry.id)), 300);
      assert.deepEqual(await frontier.stats(), { pending: 300, leased: 0, done: 650, failed: 50, queues: 1 });
      await scope.rotate();
      assert.deepEqual(
        await frontier.stats(),
        { pending: 300, leased: 0, done: 650, failed: 50, queues: 1 },
        'rotation changed the frontier',
      );
      await assert.rejects(async () => frontier.done([], { failed: 'yes' as unknown as boolean }), TypeError);
      await expectCode('USAGE', () => frontier.take(0));
      await expectCode('USAGE', () => frontier.done(['not-an-id']));
      await frontier.clear({ completed: true });
      assert.deepEqual(
        await frontier.stats(),
        { pending: 0, leased: 0, done: 0, failed: 0, queues: 0 },
        'clear({ completed }) keeps a count of finished URLs',
      );
    } finally {
      await store.close();
    }
  });

  test('frontier: payloads kept with queued URLs and replaced by release; an owner takes back its own leases at once', async () => {
    const { store } = await ctx.open();
    try {
      const scope = store.scope('p', EXACT);
      await scope.frontier().configure({ queueKey: 'none', delayMs: 0 });
      const queued = ctx.urls.slice(0, 4);
      const data = queued.map((url, i) => ({ label: i % 2 === 0 ? 'list' : 'detail', depth: i, from: url }));
      assert.deepEqual(await scope.enqueue(queued, { data }), [true, true, true, true]);
      const frontier = scope.frontier();
      const first = await frontier.take(4, { perQueue: ALL, leaseMs: 60_000, owner: 'crawler-1' });
      assert.deepEqual(
        first
          .map((entry) => entry.data)
          .sort((x, y) => (x as { depth: number }).depth - (y as { depth: number }).depth),
        data,
      );
      const firstData = first[0]!.data as (typeof data)[number];
      assert.equal(await frontier.release([first[0]!.id], [{ ...firstData, retries: 1 }]), 1);
      const retried = await frontier.take(4, { perQueue: ALL, leaseMs: 60_000 });
      assert.deepEqual(
        retried.map((entry) => entry.data),
        [{ ...firstData, retries: 1 }],
      );
      // crawler-1 "died" holding three leases: its successor takes them back without waiting.
      assert.equal(await frontier.reclaim('crawler-1'), 3);
      assert.equal(await frontier.reclaim('crawler-1'), 0);
      const back = await frontier.take(10, { perQueue: ALL, leaseMs: 60_000, owner: 'crawler-2' });
      ctx.sameTaken(
        back.map((entry) => entry.url),
        first.slice(1).map((entry) => entry.url),
        'the reclaimed leases did not come back',
      );
      await expectCode('USAGE', () => scope.enqueue(['https://a.example/'], { data: [] }));
      await expectCode('USAGE', () => scope.enqueue(['https://a.example/'], { data: ['x'.repeat(70_000)] }));
      await expectCode('USAGE', () => frontier.take(1, { perQueue: ALL, owner: 'bad owner' }));
      assert.deepEqual(await scope.has(['https://a.example/']), [false], 'a refused enqueue recorded its URL');
    } finally {
      await store.close();
    }
  });
}
