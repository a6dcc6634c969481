import assert from 'node:assert/strict';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FORMAT_VERSION, SeenStore } from '../src/index.js';
import { ROOT } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

interface Expected {
  readonly formatVersion: number;
  readonly scope: string;
  readonly stats: { readonly pending: number; readonly leased: number; readonly done: number };
  readonly finished: readonly string[];
  readonly queued: readonly { readonly url: string; readonly host: string; readonly attempts: number; readonly data?: unknown }[];
}

const FIXTURE = join(ROOT, 'test', 'fixtures', 'format-4-frontier');

/**
 * Migrations 4 -> 5 -> 6 on the frozen store of format 4 with a frontier (the old layout: one list per
 * scope): every queued URL joins its host's queue with its attempts and payload, the finished
 * count stays, the old leases (long run out) come back, and the ids go on from where they were.
 */
describe('frozen fixture format-4-frontier', () => {
  const expected = JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8')) as Expected;

  test('is refused until migrated; then every queued URL is in its host queue, as recorded', async () => {
    const dir = tempDir();
    cpSync(join(FIXTURE, 'store'), dir, { recursive: true });
    assert.equal(expected.formatVersion, 4);
    await expectCode('FORMAT_UNSUPPORTED', () => SeenStore.open(dir));
    const report = await SeenStore.migrate(dir, { snapshot: false });
    assert.deepEqual(report.steps.map((step) => [step.from, step.to, step.changed]), [[4, 5, 0], [5, 6, expected.queued.length + 1], [6, 7, 0]]);
    assert.equal(report.to, FORMAT_VERSION);
    const store = await SeenStore.open(dir);
    try {
      const scope = store.scope(expected.scope);
      const frontier = scope.frontier();
      const { pending, leased, done } = expected.stats;
      assert.deepEqual(await frontier.stats(), { pending: pending + leased, leased: 0, done, failed: 0, queues: new Set(expected.queued.map((q) => q.host)).size });
      for (const url of expected.finished) assert.equal(await frontier.urlStatus(url), undefined, `${url} was finished`);
      const hosts = [...new Set(expected.queued.map((q) => q.host))].sort();
      assert.deepEqual((await frontier.listQueues()).map((q) => [q.key, q.waiting, q.leased]), hosts.map((host) => [host, expected.queued.filter((q) => q.host === host).length, 0]));
      for (const { url, host, attempts } of expected.queued) {
        const status = await frontier.urlStatus(url);
        assert.equal(status?.queue, host, url);
        assert.equal(status.state, 'waiting', url);
        assert.equal(status.attempts, attempts, url);
      }
      await frontier.configure({ delayMs: 0 });
      const taken = await frontier.take(100, { perQueue: 100 });
      assert.deepEqual(
        taken.map((entry) => ({ url: entry.url, host: entry.queue, attempts: entry.attempts - 1, ...(entry.data === undefined ? {} : { data: entry.data }) })).sort((a, b) => a.url.localeCompare(b.url)),
        [...expected.queued].sort((a, b) => a.url.localeCompare(b.url)),
      );
      // Within a queue, oldest first, as the old list had them.
      for (const host of hosts) {
        const order = taken.filter((entry) => entry.queue === host).map((entry) => Number(entry.id.split('-')[0]));
        assert.deepEqual(order, [...order].sort((a, b) => a - b), host);
      }
      assert.equal(await frontier.done(taken.map((entry) => entry.id)), expected.queued.length);
      assert.deepEqual(await scope.enqueue(['https://a.fixture.example/new']), [true]);
      const [fresh] = await frontier.take(1);
      assert.ok(Number(fresh!.id.split('-')[0]) > expected.queued.length + expected.finished.length, `id ${fresh!.id} reused an old id`);
      assert.equal((await SeenStore.verify(dir)).ok, true);
    } finally {
      await store.close();
    }
  });
});
