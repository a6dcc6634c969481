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
  readonly queued: readonly {
    readonly url: string;
    readonly host: string;
    readonly attempts: number;
    readonly data?: unknown;
  }[];
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
    assert.deepEqual(
      report.steps.map((step) => [step.from, step.to, step.changed]),
      [
        [4, 5, 0],
        [5, 6, expected.queued.length + 1],
        [6, 7, 0],
      ],
    );
    assert.equal(report.to, FORMAT_VERSION);
    const store = await SeenStore.open(dir);
    try {
      const scope = store.scope(expected.scope);
      const frontier = scope.frontier();
      const { pending, leased, done } = expected.stats;
      assert.deepEqual(await frontier.stats(), {
        pending: pending + leased,
        leased: 0,
        done,
        failed: 0,
        queues: new Set(expected.queued.map((q) => q.host)).size,
      });
      for (const url of expected.finished)
        assert.equal(await frontier.urlStatus(url), undefined, `${url} was finished`);
      const hosts = [...new Set(expected.queued.map((q) => q.host))].sort();
      assert.deepEqual(
        (await frontier.listQueues()).map((q) => [q.key, q.waiting, q.leased]),
        hosts.map((host) => [host, expected.queued.filter((q) => q.host === host).length, 0]),
      );
      for (const { url, host, attempts } of expected.queued) {
        const status = await frontier.urlStatus(url);
        assert.equal(status?.queue, host, url);
        assert.equal(status.state, 'waiting', url);
        assert.equal(status.attempts, attempts, url);
      }
      await frontier.configure({ delayMs: 0 });
      const taken = await frontier.take(100, { perQueue: 100 });
      assert.deepEqual(
        taken
          .map((entry) => ({
            url: entry.url,
            host: entry.queue,
            attempts: entry.attempts - 1,
            ...(entry.data === undefined ? {} : { data: entry.data }),
          }))
          .sort((a, b) => a.url.localeCompare(b.url)),
        [...expected.queued].sort((a, b) => a.url.localeCompare(b.url)),
      );
      // Within a queue, oldest first, as the old list had them.
      for (const host of hosts) {
        const order = taken.filter((entry) => entry.queue === host).map((entry) => Number(entry.id.split('-')[0]));
        assert.deepEqual(
          order,
          [...order].sort((a, b) => a - b),
          host,
        );
      }
      assert.equal(await frontier.done(taken.map((entry) => entry.id)), expected.queued.length);
      assert.deepEqual(await scope.enqueue(['https://a.fixture.example/new']), [true]);
      const [fresh] = await frontier.take(1);
      assert.ok(
        Number(fresh!.id.split('-')[0]) > expected.queued.length + expected.finished.length,
        `id ${fresh!.id} reused an old id`,
      );
      assert.equal((await SeenStore.verify(dir)).ok, true);
    } finally {
      await store.close();
    }
  });
});

interface ExpectedV6 {
  readonly formatVersion: number;
  readonly scope: string;
  readonly settings: unknown;
  readonly otherSettings: unknown;
  readonly stats: {
    readonly pending: number;
    readonly leased: number;
    readonly done: number;
    readonly failed: number;
    readonly queues: number;
  };
  readonly queues: readonly {
    readonly key: string;
    readonly waiting: number;
    readonly leased: number;
    readonly readyAtMs?: number;
  }[];
  readonly finished: readonly string[];
  readonly leased: readonly { readonly url: string; readonly attempts: number }[];
  readonly scheduled: string;
  readonly statuses: Readonly<
    Record<
      string,
      {
        readonly queue: string;
        readonly state: string;
        readonly atMs?: number;
        readonly attempts: number;
        readonly epoch: number;
        readonly createdMs: number;
      }
    >
  >;
  readonly listed: readonly { readonly url: string; readonly state: string }[];
}

/**
 * Migration 6 -> 7 on the frozen store of format 6 (per-host queues, leases, a revisit, a
 * scheduled URL, payloads, politeness): every entry, queue, setting and counter reads back as the
 * format-6 store answered, the leases (long run out) wait again, and the ids go on.
 */
describe('frozen fixture format-6-frontier', () => {
  const fixture = join(ROOT, 'test', 'fixtures', 'format-6-frontier');
  const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as ExpectedV6;

  test('is refused until migrated; then the frontier answers as format 6 did', async () => {
    const dir = tempDir();
    cpSync(join(fixture, 'store'), dir, { recursive: true });
    assert.equal(expected.formatVersion, 6);
    await expectCode('FORMAT_UNSUPPORTED', () => SeenStore.open(dir));
    const entries = Object.keys(expected.statuses).length;
    const report = await SeenStore.migrate(dir, { snapshot: false });
    assert.deepEqual(
      report.steps.map((step) => [step.from, step.to, step.changed]),
      [[6, 7, entries]],
    );
    const store = await SeenStore.open(dir);
    try {
      const frontier = store.scope(expected.scope).frontier();
      assert.deepEqual(await frontier.settings(), expected.settings);
      assert.deepEqual(await store.scope('other').frontier().settings(), expected.otherSettings);
      const { pending, leased, done, failed, queues } = expected.stats;
      // The leases ran out long ago: their URLs wait again.
      assert.deepEqual(await frontier.stats(), { pending: pending + leased, leased: 0, done, failed, queues });
      const withoutTimes = ({ readyAtMs: _r, leased: l, waiting, ...rest }: ExpectedV6['queues'][number]) => ({
        ...rest,
        waiting: waiting + l,
        leased: 0,
      });
      assert.deepEqual(
        (await frontier.listQueues()).map(({ readyAtMs: _r, ...rest }) => rest),
        expected.queues.map(withoutTimes),
      );
      for (const url of expected.finished)
        assert.equal(await frontier.urlStatus(url), undefined, `${url} was finished`);
      for (const [url, status] of Object.entries(expected.statuses)) {
        const { id: _id, atMs, ...now } = (await frontier.urlStatus(url))!;
        const { atMs: before, state, ...rest } = status;
        assert.deepEqual(now, { ...rest, state: state === 'leased' ? 'waiting' : state }, url);
        if (state !== 'leased') assert.equal(atMs, before, url);
      }
      const listed = [];
      for (let cursor: string | undefined; ; ) {
        const page = await frontier.entries({ limit: 4, ...(cursor === undefined ? {} : { cursor }) });
        listed.push(...page.entries.map(({ id: _id, atMs: _at, ...rest }) => rest));
        if (page.cursor === undefined) break;
        cursor = page.cursor;
      }
      const wasLeased = new Set(expected.leased.map((l) => l.url));
      assert.deepEqual(
        listed.sort((a, b) => a.url.localeCompare(b.url)),
        expected.listed.map((e) => (wasLeased.has(e.url) ? { ...e, state: 'waiting' } : e)),
      );
      // Takes hand out the ready queues' URLs, oldest first in each queue, their attempts and payloads kept.
      const taken = await frontier.take(100, { perQueue: 100 });
      assert.ok(taken.length > 0);
      for (const entry of taken) {
        assert.equal(entry.attempts, expected.statuses[entry.url]!.attempts + 1, entry.url);
        assert.deepEqual(
          entry.data,
          expected.listed.find((e) => e.url === entry.url && 'data' in e) === undefined
            ? undefined
            : (expected.listed.find((e) => e.url === entry.url) as { data?: unknown }).data,
          entry.url,
        );
        assert.notEqual(entry.queue, 'd.fixture.example', 'a blocked queue was taken');
      }
      for (const host of new Set(taken.map((entry) => entry.queue))) {
        const seqs = taken.filter((entry) => entry.queue === host).map((entry) => Number(entry.id.split('-')[0]));
        assert.deepEqual(
          seqs,
          [...seqs].sort((a, b) => a - b),
          host,
        );
      }
      assert.deepEqual(await store.scope(expected.scope).enqueue(['https://a.fixture.example/new']), [true]);
      const fresh = await frontier.urlStatus('https://a.fixture.example/new');
      assert.ok(
        Number(fresh!.id.split('-')[0]) > entries + expected.finished.length,
        `id ${fresh!.id} reused an old number`,
      );
      assert.equal((await SeenStore.verify(dir)).ok, true);
    } finally {
      await store.close();
    }
  });
});
