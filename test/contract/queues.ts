import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeasedUrl } from '../../src/index.js';
import { EXACT, openTimed, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';

const host = (name: string) => (path: string) => `https://${name}/${path}`;
const [a, b, c] = [host('a.example'), host('b.example'), host('c.example:8080')];
const HOUR_MS = 3600_000;

function queuesOf(taken: readonly LeasedUrl[]): string[] {
  return taken.map((entry) => entry.queue);
}

/** Queues: one per host (or domain, or given), their keys and settings, listing, deleting, clearing, and the bad input of every frontier call. */
export function queuesContract(ctx: ContractContext): void {
  test('queues: one queue per host (port included), perQueue and maxQueues, oldest ready first, listing', async () => {
    const { store, time } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('q', EXACT);
      const frontier = scope.frontier();
      assert.deepEqual(await frontier.settings(), { queueKey: 'host', delayMs: 1_000, maxInFlightPerQueue: 0 });
      await frontier.configure({ delayMs: 0 });
      await scope.enqueue([b('1'), b('2')]);
      time.advance(5);
      await scope.enqueue([a('1'), a('2'), a('3'), a('4')]);
      time.advance(5);
      await scope.enqueue([c('1')]);
      const first = await frontier.take(100, { perQueue: 2, leaseMs: HOUR_MS });
      // b's URLs came first, then a's, then c's.
      assert.deepEqual(
        first.map((entry) => entry.url),
        [b('1'), b('2'), a('1'), a('2'), c('1')],
      );
      assert.deepEqual(queuesOf(first), ['b.example', 'b.example', 'a.example', 'a.example', 'c.example:8080']);
      const stats = await frontier.stats();
      assert.deepEqual({ ...stats }, { pending: 2, leased: 5, done: 0, failed: 0, queues: 3 });
      const queueA = await frontier.queue('a.example');
      assert.equal(queueA?.waiting, 2);
      assert.equal(queueA?.leased, 2);
      assert.deepEqual(
        (await frontier.listQueues()).map((queue) => queue.key),
        ['a.example', 'b.example', 'c.example:8080'],
      );
      assert.deepEqual(
        (await frontier.listQueues({ after: 'a.example', limit: 1 })).map((queue) => queue.key),
        ['b.example'],
      );
      await scope.enqueue([b('3'), c('2')]);
      const one = await frontier.take(100, { perQueue: 5, maxQueues: 1, leaseMs: HOUR_MS });
      assert.equal(new Set(queuesOf(one)).size, 1, 'maxQueues 1 handed out several queues');
      assert.deepEqual(
        one.map((entry) => entry.url),
        [a('3'), a('4')],
        'the oldest ready queue did not come first',
      );
      // URLs given their own queue key (URLFrontier's URLInfo.key) go there.
      await scope.enqueue([a('5')], { queues: ['shared'] });
      assert.deepEqual(
        (await frontier.take(100, { queue: 'shared', leaseMs: HOUR_MS })).map((entry) => [entry.url, entry.queue]),
        [[a('5'), 'shared']],
      );
    } finally {
      await store.close();
    }
  });

  test("queues: domain keys group a site's hosts; the key is fixed once URLs were queued", async () => {
    const { store } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('d', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ queueKey: 'domain', delayMs: 0 });
      await scope.enqueue([
        'https://news.example.co.uk/1',
        'https://www.example.co.uk/2',
        'https://a.github.io/',
        'https://b.github.io/',
      ]);
      assert.deepEqual(
        (await frontier.listQueues()).map((queue) => [queue.key, queue.waiting]),
        [
          ['a.github.io', 1],
          ['b.github.io', 1],
          ['example.co.uk', 2],
        ],
      );
      await expectCode('USAGE', () => frontier.configure({ queueKey: 'host' }));
      assert.equal((await frontier.settings()).queueKey, 'domain');
    } finally {
      await store.close();
    }
  });

  test('queues: the key an enqueue reads is pinned; a configure after the read cannot re-key what it queues', async () => {
    const { store } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('p', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ queueKey: 'domain', delayMs: 0 });
      // What Scope.enqueue reads before computing its queues (and a caller that keeps the key).
      assert.equal(await frontier.pinnedQueueKey(), 'domain');
      assert.equal((await frontier.stats()).pending, 0, "nothing is queued: the refusal below is the pin's");
      // Refused whole: the delay of the same call is not applied either.
      await expectCode('USAGE', () => frontier.configure({ queueKey: 'host', delayMs: 7 }));
      assert.deepEqual(await frontier.settings(), { queueKey: 'domain', delayMs: 0, maxInFlightPerQueue: 0 });
      // The same key again, and the other settings, still change.
      assert.deepEqual(await frontier.configure({ queueKey: 'domain', delayMs: 5 }), {
        queueKey: 'domain',
        delayMs: 5,
        maxInFlightPerQueue: 0,
      });
      await scope.enqueue(['https://www.example.co.uk/1']);
      assert.deepEqual(
        (await frontier.listQueues()).map((queue) => queue.key),
        ['example.co.uk'],
      );

      // An enqueue that queues nothing (its URL seen before) pins the key all the same; one of no URL does not.
      const seen = store.scope('p2', EXACT);
      await seen.enqueue([]);
      await seen.frontier().configure({ queueKey: 'none' });
      await seen.add(['https://a.example/']);
      assert.deepEqual(await seen.enqueue(['https://a.example/']), [false]);
      await expectCode('USAGE', () => seen.frontier().configure({ queueKey: 'host' }));
      assert.equal((await seen.frontier().settings()).queueKey, 'none');
    } finally {
      await store.close();
    }
  });

  test('queues: deleteQueue and clear remove waiting, scheduled and leased URLs and count them', async () => {
    const { store, time } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('x', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      await scope.enqueue([a('1'), a('2'), b('1'), c('1')]);
      await frontier.schedule([a('3')], [time.now() + HOUR_MS]);
      const leased = await frontier.take(1, { queue: 'a.example', leaseMs: HOUR_MS });
      assert.equal(await frontier.deleteQueue('a.example'), 3);
      assert.equal(await frontier.queue('a.example'), undefined);
      assert.equal(await frontier.done(leased.map((entry) => entry.id)), 0, 'a URL of a deleted queue was still there');
      assert.equal(await frontier.deleteQueue('a.example'), 0);
      assert.equal((await frontier.stats()).queues, 2);
      assert.equal(await frontier.clear(), 2);
      assert.deepEqual(
        { ...(await frontier.stats()), done: 0 },
        { pending: 0, leased: 0, done: 0, failed: 0, queues: 0 },
      );
      assert.deepEqual(await scope.enqueue([a('1')]), [false], 'deleting a queue forgot what was seen');
    } finally {
      await store.close();
    }
  });

  test('queues: bad input is USAGE and changes nothing', async () => {
    const { store, time } = await openTimed(ctx.factory);
    try {
      const scope = store.scope('b', EXACT);
      const frontier = scope.frontier();
      await expectCode('USAGE', () => frontier.setDelay('a.example', -1));
      await expectCode('USAGE', () => frontier.blockUntil('a.example', -5));
      await expectCode('USAGE', () => frontier.setCrawlLimit('a.example', 1.5));
      await expectCode('USAGE', () => frontier.take(1, { perQueue: 0 }));
      await expectCode('USAGE', () => frontier.configure({ queueKey: 'bogus' as 'host' }));
      await expectCode('USAGE', () => frontier.configure({ delayMs: Number.NaN }));
      await expectCode('USAGE', () => frontier.schedule([a('1'), a('2')], [time.now()]));
      await expectCode('USAGE', () => frontier.queue('k'.repeat(600)));
      await expectCode('USAGE', () => scope.enqueue([a('1')], { queues: ['one', 'two'] }));
      await expectCode('USAGE', () => frontier.done(['1'], { refetchAtMs: [-1] }));
      assert.deepEqual({ ...(await frontier.stats()) }, { pending: 0, leased: 0, done: 0, failed: 0, queues: 0 });
      assert.deepEqual(await scope.has([a('1')]), [false]);
    } finally {
      await store.close();
    }
  });
}
