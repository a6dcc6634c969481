import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXACT, openTimed, type ContractContext } from './context.js';

const host = (name: string) => (path: string) => `https://${name}/${path}`;
const [a, b, c] = [host('a.example'), host('b.example'), host('c.example:8080')];
const HOUR_MS = 3600_000;

/** Revisits: URLs scheduled for a time, and done with a refetch time. */
export function revisitsContract(ctx: ContractContext): void {
  test('revisits: scheduled URLs wait until their time, sooner first; done with a refetch time reschedules; 0 finishes', async () => {
    const { store, time } = await openTimed(ctx.factory);
    const unit = time.unit;
    try {
      const scope = store.scope('r', EXACT);
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      assert.equal(await frontier.schedule([a('later'), a('sooner')], [time.now() + 2 * unit, time.now() + unit]), 2);
      assert.deepEqual(
        await frontier.take(100, { perQueue: 10, leaseMs: HOUR_MS }),
        [],
        'a URL was handed out before its time',
      );
      assert.equal((await frontier.urlStatus(a('later')))?.state, 'scheduled');
      assert.equal((await frontier.queue('a.example'))?.waiting, 2);
      time.advance(2 * unit);
      const due = await frontier.take(100, { perQueue: 10, leaseMs: HOUR_MS });
      assert.deepEqual(
        due.map((entry) => entry.url),
        [a('sooner'), a('later')],
        'the sooner refetch date did not come first',
      );
      assert.equal((await frontier.urlStatus(a('sooner')))?.state, 'leased');
      assert.equal(
        await frontier.done(
          due.map((entry) => entry.id),
          { refetchAtMs: [time.now() + unit, 0] },
        ),
        2,
      );
      assert.equal(await frontier.urlStatus(a('later')), undefined, 'a URL done without a refetch time stayed');
      const status = await frontier.urlStatus(a('sooner'));
      assert.equal(status?.state, 'scheduled');
      assert.equal(status?.queue, 'a.example');
      assert.deepEqual(await frontier.take(100, { leaseMs: HOUR_MS }), []);
      time.advance(unit);
      const again = await frontier.take(100, { leaseMs: HOUR_MS });
      assert.deepEqual(
        again.map((entry) => [entry.url, entry.attempts]),
        [[a('sooner'), 1]],
      );
      // A queued URL scheduled later moves to that time; a schedule of 0 finishes it.
      await scope.enqueue([b('1'), b('2')]);
      await frontier.schedule([b('1')], [time.now() + unit]);
      assert.deepEqual(
        (await frontier.take(100, { perQueue: 10, leaseMs: HOUR_MS })).map((entry) => entry.url),
        [b('2')],
      );
      const before = (await frontier.stats()).done;
      assert.equal(await frontier.schedule([b('1')], [0]), 0);
      assert.equal(await frontier.urlStatus(b('1')), undefined);
      assert.equal((await frontier.stats()).done, before + 1);
      assert.equal((await frontier.queue('b.example'))?.completed, 1);
      // A URL named twice in one schedule: each mention applies in order, the second seeing the first.
      assert.equal(await frontier.schedule([c('twice'), c('twice')], [time.now() + unit, 0]), 1);
      assert.equal(
        await frontier.urlStatus(c('twice')),
        undefined,
        'a URL scheduled, then finished in the same call, stayed queued',
      );
      assert.equal((await frontier.queue('c.example:8080'))?.completed, 1);
      assert.equal(await frontier.schedule([c('again'), c('again')], [0, time.now() + unit]), 1);
      assert.equal((await frontier.urlStatus(c('again')))?.atMs, time.now() + unit);
    } finally {
      await store.close();
    }
  });
}
