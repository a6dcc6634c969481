import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { XxHash } from '../src/hash/xxhash.js';
import { LAYOUT_2_KEYS } from '../src/store/redis/keys.js';
import { QUEUE_PARTITIONS, queuePartitionOf } from '../src/store/redis/queue-partition.js';
import { runChild } from './helpers/child-run.js';
import { runCli } from './helpers/cli.js';
import { ROOT, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';

/**
 * A frontier of Redis key layout 2, written by layout 2's own queue functions (the frozen fixture
 * test/fixtures/redis-frontier-2/library.lua, loaded beside the current library), migrated to
 * layout 3 by `seenstore migrate`: killed after its fifth batch, then run again. Every entry comes
 * through with its URL, queue, state, times, attempts and data, and its id (a URL leased before is
 * finished by its id after); the queues keep their settings and counts; layout 2's keys are gone.
 */
const missing = redisMissing();
const CHILD = join(ROOT, 'dist', 'test', 'helpers', 'redis-frontier-child.js');
const LAYOUT_2_LIBRARY = readFileSync(join(ROOT, 'test', 'fixtures', 'redis-frontier-2', 'library.lua'), 'utf8');
const LAYOUT_2_STATE = ['seq', 'ent', 'url', 'qs', 'w', 'l', 'leases', 'ready', 'names', 'marks', 'counts', 'cfg'];
const HOUR_MS = 3_600_000;
const quiet = { onWarning: () => {} };

const cluster =
  missing === undefined ? await startRedisCluster({ masters: 3, replicas: 0 }) : (undefined as unknown as RedisCluster);
after(() => cluster?.stop());

interface OldEntry {
  readonly u: string;
  readonly q: string;
  readonly e: number;
  readonly t: number;
  readonly n: number;
  readonly a: number;
  readonly l: number;
  readonly o?: string;
  readonly d?: string;
  readonly c?: number;
}

describe('redis frontier: key layout 2 migrated to layout 3', { skip: missing }, () => {
  test('seenstore migrate moves every entry, lease, schedule and queue setting, in batches a kill cannot cut in half', async () => {
    for (const port of cluster.masters()) cluster.cli(port, 'FUNCTION', 'LOAD', 'REPLACE', LAYOUT_2_LIBRARY);
    const location = cluster.location();
    const prefix = new URL(location).searchParams.get('prefix')!;
    const redis = (...args: string[]): string => cluster.cli(cluster.nodes[0]!.port, '-c', ...args);
    const hash = await XxHash.load();
    const words = new Uint32Array(2);
    const partitionOf = (key: string): number => queuePartitionOf(hash, key, QUEUE_PARTITIONS, words);
    const tag = (i: number): string => `{${prefix}/m/q${i}}`;
    const state = (i: number): string[] => LAYOUT_2_STATE.map((name) => `${tag(i)}:${name}`);
    const settings = ['1', '0', '0'];
    let answers = 0;
    const answered = (i: number): string[] => [...state(i), `${tag(i)}:a:${++answers}`, `${tag(i)}:a:${answers}`];
    const call = (name: string, keys: string[], ...args: string[]): string =>
      redis('FCALL', name, String(keys.length), ...keys, ...settings, ...args);

    // The scope exists (migrate walks the store's scopes); its frontier is of layout 2.
    const store = await SeenStore.open(location, quiet);
    try {
      await store.scope('m', { capacityUrls: 100_000, fprTarget: 1e-9 }).add(['https://seed.example/']);
      redis(
        'HSET',
        `{${prefix}/m}:frontier`,
        'layout',
        '2',
        'partitions',
        String(QUEUE_PARTITIONS),
        'queueKey',
        'host',
        'delayMs',
        '0',
        'maxInFlightPerQueue',
        '0',
        'rev',
        '1',
        'pinned',
        '1',
      );

      // Layout 2's admission: 4,500 URLs of one host (more than one migration batch in its
      // partition) and 1,500 real URLs of many hosts, some with data, due a minute ago.
      const big = Array.from({ length: 4_500 }, (_, i) => `https://big.example/p/${i}?q=${i % 7}`);
      const real = [...new Set(sharedUrls('crawl-benign-35k.txt'))]
        .filter((url) => new URL(url).host !== '')
        .slice(0, 1_500);
      const dueMs = Date.now() - 60_000;
      const byPartition = new Map<number, string[]>();
      [...big, ...real].forEach((url, n) => {
        const key = new URL(url).host;
        const data = n % 5 === 0 ? JSON.stringify({ depth: n % 3 }) : '';
        const i = partitionOf(key);
        byPartition.set(i, [
          ...(byPartition.get(i) ?? []),
          '0',
          `${dueMs}-${n + 1}`,
          url,
          key,
          '1',
          data,
          String(dueMs),
          String(n),
        ]);
      });
      for (const [i, args] of byPartition) {
        for (let at = 0; at < args.length; at += 8 * 1_000)
          call('l2_fq_admit', state(i), ...args.slice(at, at + 8 * 1_000));
      }
      // Leases, finished and failed URLs, a refetch, a release with data, schedules, queue settings.
      const home = partitionOf('big.example');
      const taken = redis(
        'FCALL',
        'l2_fq_take',
        '14',
        ...answered(home),
        ...settings,
        '300',
        '',
        String(HOUR_MS),
        'crawler-1',
        'big.example',
        '300',
      ).split('\n');
      const takenIds = taken.filter((_, at) => at % 7 === 0);
      assert.equal(takenIds.length, 300);
      const leased = takenIds.slice(0, 170);
      const [finished, failed, refetched, released] = [
        takenIds.slice(170, 250),
        takenIds.slice(250, 270),
        takenIds.slice(270, 280),
        takenIds.slice(280, 300),
      ];
      const none = (ids: string[]): string[] => ids.map(() => '0');
      redis(
        'FCALL',
        'l2_fq_done',
        '14',
        ...answered(home),
        ...settings,
        '300',
        '',
        String(finished.length),
        ...finished,
        ...none(finished),
        '0',
      );
      redis(
        'FCALL',
        'l2_fq_done',
        '14',
        ...answered(home),
        ...settings,
        '300',
        '',
        String(failed.length),
        ...failed,
        ...none(failed),
        '1',
      );
      redis(
        'FCALL',
        'l2_fq_done',
        '14',
        ...answered(home),
        ...settings,
        '300',
        '',
        String(refetched.length),
        ...refetched,
        ...refetched.map(() => String(Date.now() + HOUR_MS)),
        '0',
      );
      redis(
        'FCALL',
        'l2_fq_release',
        '14',
        ...answered(home),
        ...settings,
        '300',
        '',
        String(released.length),
        ...released,
        ...released.map((_, n) => JSON.stringify({ retries: n })),
      );
      const later = partitionOf('later.example');
      redis(
        'FCALL',
        'l2_fq_schedule',
        '14',
        ...answered(later),
        ...settings,
        '300',
        '',
        '3',
        ...[1, 2, 3].flatMap((n) => [
          `https://later.example/${n}`,
          'later.example',
          String(Date.now() + n * HOUR_MS),
          '',
        ]),
      );
      const slow = new URL(real[0]!).host;
      call('l2_fq_set', state(partitionOf(slow)), slow, String(HOUR_MS), String(Date.now() + 2 * HOUR_MS), '9');
      call('l2_fq_set', state(partitionOf('empty.example')), 'empty.example', '5000', '', 'none');

      // What layout 2 holds: every entry by id, every queue's stats, the whole frontier's counts.
      const oldEntries = new Map<string, OldEntry>();
      const oldQueues = new Map<string, string>();
      const counts = [0, 0, 0, 0, 0];
      for (let i = 0; i < QUEUE_PARTITIONS; i++) {
        const flat = redis('HGETALL', `${tag(i)}:ent`)
          .split('\n')
          .filter(Boolean);
        for (let at = 0; at + 1 < flat.length; at += 2)
          oldEntries.set(`${i}-${flat[at]}`, JSON.parse(flat[at + 1]!) as OldEntry);
        for (const key of redis('HKEYS', `${tag(i)}:qs`)
          .split('\n')
          .filter(Boolean))
          oldQueues.set(key, call('l2_fq_queue', state(i), key));
        call('l2_fq_stats', state(i))
          .split('\n')
          .forEach((n, at) => (counts[at] = counts[at]! + Number(n)));
      }
      assert.equal(oldEntries.size, 6_000 - 100 + 3);
      const expectedStats = {
        pending: counts[0]! - counts[1]!,
        leased: counts[1]!,
        done: counts[2]!,
        failed: counts[4]!,
        queues: counts[3]!,
      };
      assert.deepEqual(expectedStats, {
        pending: 6_000 - 100 - 170 + 3,
        leased: 170,
        done: 90,
        failed: 20,
        queues: new Set([...big, ...real].map((url) => new URL(url).host)).size + 1,
      });

      // A scope whose frontier is of layout 2 can be deleted before it is migrated.
      const other = store.scope('gone', { capacityUrls: 1_000 });
      await other.add(['https://seed.example/']);
      redis('HSET', `{${prefix}/gone}:frontier`, 'layout', '2', 'partitions', String(QUEUE_PARTITIONS));
      const goneTag = `{${prefix}/gone/q${home}}`;
      redis(
        'FCALL',
        'l2_fq_admit',
        '12',
        ...LAYOUT_2_STATE.map((name) => `${goneTag}:${name}`),
        ...settings,
        '0',
        `${dueMs}-1`,
        'https://big.example/gone',
        'big.example',
        '1',
        '',
        String(dueMs),
        '0',
      );
      assert.deepEqual(await store.deleteScope('gone'), { epochs: 1, queuedUrls: 1 });
      assert.equal(redis('EXISTS', ...LAYOUT_2_STATE.map((name) => `${goneTag}:${name}`)), '0');

      // Refused until migrated, naming the way out.
      const frontier = store.scope('m').frontier();
      const refusal = await expectCode('FORMAT_UNSUPPORTED', () => frontier.stats());
      assert.match(refusal.message, /layout 2 .*seenstore --store LOCATION migrate/);

      // A migration killed after its fifth batch leaves the frontier refused; run again, it finishes.
      const killed = await runChild(CHILD, [location, 'migrate', 'frontier:migrate-batch', '5'], 'redis migrate child');
      assert.ok(killed.killed, 'the migration was not killed after a batch');
      await expectCode('FORMAT_UNSUPPORTED', () => frontier.stats());
      const run = await runCli(['--store', location, 'migrate']);
      assert.equal(run.code, 0, run.stderr);
      const [step, done] = run.stdout.trim().split('\n');
      const moved = Number(
        /^format 2 -> 3: the frontier of scope m, Redis key layout 2 to 3 \(([\d,]+) records\)$/
          .exec(step ?? '')?.[1]
          ?.replace(/,/g, ''),
      );
      assert.ok(
        moved > 0 && moved < oldEntries.size + oldQueues.size,
        `the second run moved ${moved}: it did not go on where the first stopped`,
      );
      assert.equal(done, 'migrated from format 2 to 3 (no snapshot taken)');
      assert.equal((await runCli(['--store', location, 'migrate'])).stdout, 'store is at format 3: nothing to do\n');
      for (let i = 0; i < QUEUE_PARTITIONS; i++) {
        assert.equal(
          redis('EXISTS', ...LAYOUT_2_KEYS.map((name) => `${tag(i)}:${name}`)),
          '0',
          `layout 2's keys are left in partition ${i}`,
        );
      }

      // Everything as it was: counts, queues, every entry by its id.
      assert.deepEqual({ ...(await frontier.stats()) }, expectedStats);
      for (const [key, stats] of oldQueues) {
        const [waiting, leasedN, completed, delayMs, blockedUntilMs, crawlLimit, readyAtMs] = stats
          .split('\n')
          .map(Number);
        const now = await frontier.queue(key);
        assert.deepEqual(
          now && [
            now.waiting,
            now.leased,
            now.completed,
            now.delayMs ?? -1,
            now.blockedUntilMs,
            now.crawlLimit ?? -1,
            now.readyAtMs ?? -1,
          ],
          [waiting, leasedN, completed, delayMs, blockedUntilMs, crawlLimit, readyAtMs],
          `queue ${key}`,
        );
      }
      const listed = new Map<
        string,
        { url: string; queue: string; state: string; atMs: number; createdMs: number; data?: unknown }
      >();
      for (
        let page = await frontier.entries({ limit: 500 });
        ;
        page = await frontier.entries({ limit: 500, cursor: page.cursor })
      ) {
        for (const entry of page.entries) listed.set(entry.id, entry);
        if (page.cursor === undefined) break;
      }
      assert.equal(listed.size, oldEntries.size);
      const nowMs = Date.now();
      for (const [id, old] of oldEntries) {
        const entry = listed.get(id);
        const oldState = old.l > nowMs ? 'leased' : old.t > nowMs ? 'scheduled' : 'waiting';
        assert.deepEqual(
          entry && {
            url: entry.url,
            queue: entry.queue,
            state: entry.state,
            atMs: entry.atMs,
            createdMs: entry.createdMs,
            data: entry.data,
          },
          {
            url: old.u,
            queue: old.q,
            state: oldState,
            atMs: oldState === 'leased' ? old.l : old.t,
            createdMs: old.c ?? old.t,
            data: old.d === undefined ? undefined : JSON.parse(old.d),
          },
          `entry ${id}`,
        );
      }

      // The URL index: a migrated URL is found, and queued once when an add finds it new again.
      assert.equal((await frontier.urlStatus(real[7]!))?.state, 'waiting');
      assert.deepEqual(await store.scope('m').enqueue([real[7]!]), [true]);
      assert.equal((await frontier.stats()).pending, expectedStats.pending);
      // Leases held through the migration are finished by their ids.
      assert.equal(await frontier.done(leased.map((n) => `${home}-${n}`)), 170);
      // Each queue hands out its URLs in layout 2's order (due time, place, number), with their attempts and data.
      const waitingBig = [...oldEntries.entries()]
        .filter(([, e]) => e.q === 'big.example' && e.l <= nowMs && e.t <= nowMs)
        .sort(([x, a], [y, b]) => a.t - b.t || a.n - b.n || Number(x.split('-')[1]) - Number(y.split('-')[1]));
      const out = await frontier.take(10_000, { queue: 'big.example', perQueue: 10_000, leaseMs: HOUR_MS });
      assert.deepEqual(
        out.map((entry) => [entry.url, entry.attempts, entry.data]),
        waitingBig.map(([, e]) => [e.u, e.a + 1, e.d === undefined ? undefined : JSON.parse(e.d)]),
      );
    } finally {
      await store.close();
    }
  });
});
