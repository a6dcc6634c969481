import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore, type LeasedUrl } from '../../src/index.js';
import { EXACT, openTimed, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';

const host = (name: string) => (path: string) => `https://${name}/${path}`;
const [a, b, c] = [host('a.example'), host('b.example'), host('c.example:8080')];
const HOUR_MS = 3600_000;

function queuesOf(taken: readonly LeasedUrl[]): string[] {
  return taken.map((entry) => entry.queue);
}

function countBy(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

/** Take's gate: which ready queue goes first, delays, blocks, in-flight and crawl limits, atomic under concurrent takers, host affinity. */
export function politenessContract(ctx: ContractContext): void {
  test('take order: ready first; of queues ready at once, the one taken longest ago, so none starves', async () => {
    const { store, time } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('o', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      // Queued c, then b, then a: ready in that order, the reverse of key order.
      for (const host of [c, b, a]) {
        await scope.enqueue([host('1'), host('2'), host('3')]);
        time.advance(5);
      }
      const takeOne = async (): Promise<string> => {
        const taken = await frontier.take(1, { perQueue: 1, leaseMs: HOUR_MS });
        assert.equal(taken.length, 1, 'a take found no ready queue');
        return taken[0]!.queue;
      };
      const first: string[] = [];
      for (let i = 0; i < 3; i++) {
        first.push(await takeOne());
        time.advance(5);
      }
      assert.deepEqual(
        first,
        ['c.example:8080', 'b.example', 'a.example'],
        'the queue ready first was not taken first',
      );
      // With a delay of 0 a queue is ready again at once: a block makes all three ready at the same
      // time, and then the one taken longest ago goes first, not key order, so none is passed over.
      const blockedUntilMs = time.now() + time.unit;
      for (const key of first) await frontier.blockUntil(key, blockedUntilMs);
      time.advance(time.unit);
      const second: string[] = [];
      for (let i = 0; i < 3; i++) second.push(await takeOne());
      assert.deepEqual(second, first, 'of queues ready at once, the one taken longest ago did not come first');
    } finally {
      await store.close();
    }
  });

  test('take order of many queues ready at once: taken longest ago first, however the driver splits its queues', async () => {
    const { store, time } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('m', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      // More queues than Redis has queue partitions (32), so some share one; due in reverse key
      // order, so that the order taken is never key order.
      const hosts = Array.from({ length: 33 }, (_, i) => host(`q${String(i).padStart(2, '0')}.example`)).reverse();
      const queue = (url: string): string => new URL(url).host;
      await frontier.schedule(
        hosts.map((h) => h('1')),
        hosts.map((_, i) => time.now() + 1 + i),
      );
      time.advance(hosts.length + 1);
      const takeEach = async (): Promise<string[]> => {
        const order: string[] = [];
        for (const _ of hosts) {
          const taken = await frontier.take(1, { perQueue: 1, leaseMs: HOUR_MS });
          assert.equal(taken.length, 1, 'a take found no ready queue');
          order.push(taken[0]!.queue);
          time.advance(1);
        }
        return order;
      };
      const first = await takeEach();
      assert.deepEqual(
        first,
        hosts.map((h) => queue(h('1'))),
        'the queue ready first was not taken first',
      );
      // Every queue's next URL due at one time: all ready at once, each last taken at another time.
      await frontier.schedule(
        hosts.map((h) => h('2')),
        time.now() + 1,
      );
      time.advance(1);
      assert.deepEqual(
        await takeEach(),
        first,
        'of queues ready at once, the one taken longest ago did not come first',
      );
    } finally {
      await store.close();
    }
  });

  test('politeness: a queue waits its delay (its own, else the default), a block, and its in-flight limit', async () => {
    const { store, time } = await openTimed(ctx.factory);
    const unit = time.unit;
    try {
      const scope = store.scope('p', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: unit });
      await scope.enqueue([a('1'), a('2'), a('3'), a('4'), b('1'), b('2'), b('3')]);
      const first = await frontier.take(100, { leaseMs: HOUR_MS });
      assert.deepEqual(first.map((entry) => entry.url).sort(), [a('1'), b('1')]);
      assert.deepEqual(
        await frontier.take(100, { leaseMs: HOUR_MS }),
        [],
        'a queue was handed out again inside its delay',
      );
      const readyAt = (await frontier.queue('a.example'))?.readyAtMs;
      assert.ok(readyAt !== undefined && readyAt > time.now(), 'a queue inside its delay says it is ready');
      time.advance(unit);
      assert.deepEqual((await frontier.take(100, { leaseMs: HOUR_MS })).map((entry) => entry.url).sort(), [
        a('2'),
        b('2'),
      ]);
      await frontier.setDelay('b.example', 3 * unit);
      assert.equal((await frontier.queue('b.example'))?.delayMs, 3 * unit);
      time.advance(unit);
      assert.deepEqual(
        (await frontier.take(100, { leaseMs: HOUR_MS })).map((entry) => entry.url),
        [a('3')],
        "a queue's own delay was not kept",
      );
      await frontier.blockUntil('a.example', time.now() + 10 * unit);
      time.advance(3 * unit);
      assert.deepEqual(
        (await frontier.take(100, { leaseMs: HOUR_MS })).map((entry) => entry.url),
        [b('3')],
        'a blocked queue was handed out',
      );
      assert.ok(((await frontier.queue('a.example'))?.blockedUntilMs ?? 0) > time.now());
      await frontier.blockUntil('a.example', 0);
      await frontier.configure({ maxInFlightPerQueue: 3 });
      assert.deepEqual(
        await frontier.take(100, { leaseMs: HOUR_MS }),
        [],
        'a queue with as many URLs leased as its in-flight limit was handed out',
      );
      assert.equal(await frontier.done([first.find((entry) => entry.queue === 'a.example')!.id]), 1);
      assert.deepEqual(
        (await frontier.take(100, { leaseMs: HOUR_MS })).map((entry) => entry.url),
        [a('4')],
      );
      await frontier.setDelay('b.example', null);
      assert.equal((await frontier.queue('b.example'))?.delayMs, undefined);
    } finally {
      await store.close();
    }
  });

  test('crawl limit: once n URLs of a queue are completed it hands out no more; leased ones count', async () => {
    const { store } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('l', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      await scope.enqueue(['1', '2', '3', '4', '5'].map(a));
      await frontier.setCrawlLimit('a.example', 2);
      const taken = await frontier.take(100, { perQueue: 10, leaseMs: HOUR_MS });
      assert.equal(taken.length, 2, 'a take went past the crawl limit');
      assert.equal(await frontier.done(taken.map((entry) => entry.id)), 2);
      assert.deepEqual(await frontier.take(100, { perQueue: 10, leaseMs: HOUR_MS }), []);
      const queue = await frontier.queue('a.example');
      assert.equal(queue?.completed, 2);
      assert.equal(queue?.waiting, 3);
      assert.equal(queue?.crawlLimit, 2);
      assert.equal(queue?.readyAtMs, undefined, 'a queue at its crawl limit says when it is ready');
      await frontier.setCrawlLimit('a.example', null);
      assert.equal((await frontier.take(100, { perQueue: 10, leaseMs: HOUR_MS })).length, 3);
    } finally {
      await store.close();
    }
  });

  test('the gate is atomic: concurrent takers on two handles never get one queue twice inside its delay', async () => {
    const { store, time } = await openTimed(ctx.factory);
    const other = await SeenStore.open(store.dir, { ...ctx.factory.options, ...time.options });
    try {
      const scope = store.scope('g', EXACT);
      await scope.frontier().configure({ delayMs: HOUR_MS });
      const hosts = Array.from({ length: 20 }, (_, i) => host(`h${i}.example`));
      await scope.enqueue(hosts.flatMap((h) => [h('1'), h('2'), h('3')]));
      const takers = [store, other, store, other, store, other].map((handle) =>
        handle.scope('g', EXACT).frontier().take(7, { leaseMs: HOUR_MS }),
      );
      const taken = (await Promise.all(takers)).flat();
      const perQueue = countBy(queuesOf(taken));
      assert.equal(perQueue.size, 20, 'a ready queue was not handed out');
      assert.ok(
        [...perQueue.values()].every((n) => n === 1),
        'a queue was handed out twice inside its delay',
      );
    } finally {
      await other.close();
      await store.close();
    }
  });

  test('affinity: live owners split the queues between them on the ring, each queue to one owner', async () => {
    const { store } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('o', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      const hosts = Array.from({ length: 40 }, (_, i) => host(`site${i}.example`));
      await scope.enqueue(hosts.flatMap((h) => [h('1'), h('2')]));
      // Both owners become live (a take within the lease time), then give their URLs back.
      for (const owner of ['w1', 'w2'])
        await frontier.release((await frontier.take(1, { owner, leaseMs: HOUR_MS })).map((entry) => entry.id));
      const one = await frontier.take(100, { owner: 'w1', affinity: true, leaseMs: HOUR_MS });
      const two = await frontier.take(100, { owner: 'w2', affinity: true, leaseMs: HOUR_MS });
      const [mine, theirs] = [new Set(queuesOf(one)), new Set(queuesOf(two))];
      assert.ok(mine.size > 0 && theirs.size > 0, 'one owner got no queue');
      assert.ok(
        [...mine].every((queue) => !theirs.has(queue)),
        'a queue went to both owners',
      );
      assert.equal(mine.size + theirs.size, 40);
      await expectCode('USAGE', () => frontier.take(1, { affinity: true }));
    } finally {
      await store.close();
    }
  });
}
