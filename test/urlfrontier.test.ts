import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { AuthThrottle } from '../src/server/auth-throttle.js';
import { createLogger } from '../src/server/logger.js';
import type { ServedStore } from '../src/server/served-store.js';
import { openServedStore } from '../src/server/store-spec.js';
import type { Crawls } from '../src/urlfrontier/crawls.js';
import { PutDiscoveredStream } from '../src/urlfrontier/put-discovered.js';
import { UrlFrontierServer } from '../src/urlfrontier/server.js';
import { memoryStore } from './helpers/memory.js';
import { tempDir } from './helpers/tmp.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';
import { discovered, FrontierClient, info, known, statusOf, type UrlInfo } from './helpers/urlfrontier.js';

/**
 * The URLFrontier service driven by a real gRPC client (@grpc/grpc-js) through the behaviours
 * URLFrontier's own test suite checks, on each store location below. The server runs in this
 * process over a store whose clock the test owns: leases, delays and revisit dates are reached by
 * moving the clock, never by sleeping. A driver joins by adding its line.
 */
const LMDB_ROOT = tempDir();
const REDIS_MISSING = redisMissing();
let cluster: Promise<RedisCluster> | undefined;
after(async () => (await cluster?.catch(() => undefined))?.stop());

interface Location {
  readonly name: string;
  readonly location: () => string | Promise<string>;
  /** The store keeps time by the test's clock (Redis keeps Redis's: tests that move the clock skip it). */
  readonly ownsClock: boolean;
  readonly skip?: string;
}

const LOCATIONS: readonly Location[] = [
  { name: 'memory', location: () => memoryStore('urlfrontier'), ownsClock: true },
  // Stores in one directory removed when the file ends, after every server and store is closed.
  { name: 'lmdb', location: () => mkdtempSync(join(LMDB_ROOT, 'store-')), ownsClock: true },
  // One local cluster (3 masters, 1 replica each, AOF fsynced always) for the file; a store is a fresh key prefix on it.
  {
    name: 'redis cluster',
    location: async () => (await (cluster ??= startRedisCluster())).location(),
    ownsClock: false,
    ...(REDIS_MISSING === undefined ? {} : { skip: REDIS_MISSING }),
  },
];

interface Served {
  readonly client: FrontierClient;
  readonly store: ServedStore;
  /** The service's Prometheus metrics, as /metrics would show them. */
  metrics(): Promise<string>;
  readonly port: number;
  /** Moves the store's clock on. */
  advance(ms: number): void;
  nowS(): number;
}

const quietLogger = createLogger(true, () => undefined);

async function serve(location: string, password?: string, logger = quietLogger): Promise<Served> {
  let nowMs = Date.now();
  const clock = (): number => nowMs;
  const store = await openServedStore(location, { clock }, false);
  const registry = new Registry();
  const server = new UrlFrontierServer(store, {
    registry,
    port: 0,
    bind: '127.0.0.1',
    scopeOptions: { capacityUrls: 100_000, fprTarget: 0.001, keys: 'raw' },
    logger,
    authThrottle: new AuthThrottle(),
    clock,
    ...(password === undefined ? {} : { password }),
  });
  await server.start();
  const client = new FrontierClient(server.port, password);
  after(async () => {
    client.close();
    await server.stop();
    await store.close();
  });
  return {
    client,
    store,
    metrics: () => registry.metrics(),
    port: server.port,
    advance: (ms) => (nowMs += ms),
    nowS: () => Math.floor(nowMs / 1000),
  };
}

interface ListedItem {
  readonly item: 'discovered' | 'known';
  readonly discovered?: { info: UrlInfo };
  readonly known?: { info: UrlInfo; refetchable_from_date: number };
  readonly creation_date: number;
}
const urlOfItem = (item: ListedItem): string => (item.discovered ?? item.known)!.info.url;

const urlsOf = (infos: readonly UrlInfo[]): string[] => infos.map((info) => info.url).sort();

for (const { name, location, skip } of LOCATIONS.filter((l) => l.ownsClock)) {
  describe(`URLFrontier over gRPC (${name})`, { ...(skip === undefined ? {} : { skip }) }, () => {
    test('duplicates are acked, each with its ID, and queued once', async () => {
      const { client } = await serve(await location());
      const acks = await client.put([
        discovered('http://a.com/1'),
        discovered('http://a.com/1', { ID: 'again' }),
        discovered('http://b.com/1'),
      ]);
      assert.deepEqual(acks, [
        { ID: 'http://a.com/1', status: 'OK' },
        { ID: 'again', status: 'OK' },
        { ID: 'http://b.com/1', status: 'OK' },
      ]);
      assert.deepEqual(await client.put([discovered('http://a.com/1')]), [{ ID: 'http://a.com/1', status: 'OK' }]);
      assert.equal((await client.call('CountURLs', {})).value, 2);
      assert.deepEqual(urlsOf(await client.get()), ['http://a.com/1', 'http://b.com/1']);
    });

    test('one queue per host: GetURLs hands out max_urls_per_queue of each, keyed by host', async () => {
      const { client } = await serve(await location());
      await client.put(
        ['http://a.com/1', 'http://a.com/2', 'http://b.com/1', 'http://c.com:8080/1', 'http://c.com:8080/2'].map(
          (url) => discovered(url),
        ),
      );
      const queues = await client.call<{ values: string[]; total: number }>('ListQueues', { include_inactive: true });
      assert.deepEqual(queues.values, ['a.com', 'b.com', 'c.com:8080']);
      assert.equal(queues.total, 3);
      const got = await client.get({ max_urls_per_queue: 1 });
      assert.deepEqual(got.map((info) => info.key).sort(), ['a.com', 'b.com', 'c.com:8080']);
      assert.ok(got.every((info) => new URL(info.url).host === info.key && info.crawlID === 'DEFAULT'));
      assert.deepEqual(
        await client.get({ max_queues: 1, max_urls_per_queue: 5 }),
        [],
        'every queue is within its delay (1 s by default)',
      );
    });

    test('an in-process URL is not handed out again until delay_requestable has passed', async () => {
      const { client, advance } = await serve(await location());
      await client.call('SetDelay', { key: '', delay_requestable: 0 });
      await client.put([discovered('http://a.com/1')]);
      assert.deepEqual(urlsOf(await client.get({ delay_requestable: 60 })), ['http://a.com/1']);
      assert.deepEqual(await client.get(), []);
      advance(59_000);
      assert.deepEqual(await client.get(), []);
      assert.equal((await client.call('GetStats', {})).inProcess, 1);
      advance(2_000);
      assert.deepEqual(urlsOf(await client.get()), ['http://a.com/1'], 'the lease ran out: it is handed out again');
    });

    test('a known URL without a refetch date is finished: never handed out again', async () => {
      const { client, advance } = await serve(await location());
      await client.call('SetDelay', { key: '', delay_requestable: 0 });
      await client.put([discovered('http://a.com/1'), discovered('http://a.com/2')]);
      assert.equal((await client.get({ delay_requestable: 10 })).length, 2);
      assert.deepEqual(await client.put([known('http://a.com/1', 0)]), [{ ID: 'http://a.com/1', status: 'OK' }]);
      advance(3_600_000);
      assert.deepEqual(urlsOf(await client.get()), ['http://a.com/2']);
      advance(3_600_000);
      assert.deepEqual(urlsOf(await client.get()), ['http://a.com/2']);
      assert.equal(
        (await client.call<{ counts: { completed: number } }>('GetStats', { key: 'a.com' })).counts.completed,
        1,
      );
    });

    test('revisits: nothing before its date, the sooner refetch date first', async () => {
      const { client, advance, nowS } = await serve(await location());
      await client.call('SetDelay', { key: '', delay_requestable: 0 });
      await client.put([known('http://x.com/later', nowS() + 200), known('http://x.com/sooner', nowS() + 100)]);
      assert.deepEqual(await client.get(), []);
      advance(300_000);
      assert.deepEqual(urlsOf(await client.get({ max_urls_per_queue: 1 })), ['http://x.com/sooner']);
      assert.deepEqual(urlsOf(await client.get({ max_urls_per_queue: 1 })), ['http://x.com/later']);
    });

    test('crawl IDs are separate frontiers; anyCrawlID takes from each', async () => {
      const { client } = await serve(await location());
      await client.call('SetDelay', { key: '', delay_requestable: 0, crawlID: 'c1' });
      await client.put([
        discovered('http://a.com/1', { crawlID: 'c1' }),
        discovered('http://a.com/1', { crawlID: 'c2' }),
        discovered('http://b.com/1', { crawlID: 'c2' }),
      ]);
      assert.deepEqual((await client.call<{ values: string[] }>('ListCrawls', {})).values.sort(), ['c1', 'c2']);
      const c1 = await client.get({ crawlID: 'c1' });
      assert.deepEqual(
        c1.map((info) => [info.url, info.crawlID]),
        [['http://a.com/1', 'c1']],
      );
      assert.equal((await client.call('CountURLs', { crawlID: 'c2' })).value, 2);
      const any = await client.get({ anyCrawlID: {} });
      assert.deepEqual(any.map((info) => `${info.crawlID} ${info.url}`).sort(), [
        'c2 http://a.com/1',
        'c2 http://b.com/1',
      ]);
    });

    test('DeleteQueue and DeleteCrawl answer how many URLs they removed; a deleted crawl takes its URLs anew', async () => {
      const { client } = await serve(await location());
      await client.put(
        ['http://a.com/1', 'http://a.com/2', 'http://a.com/3', 'http://b.com/1', 'http://b.com/2'].map((url) =>
          discovered(url, { crawlID: 'c' }),
        ),
      );
      assert.equal((await client.call('DeleteQueue', { key: 'a.com', crawlID: 'c' })).value, 3);
      assert.equal((await client.call('GetStats', { crawlID: 'c' })).size, 2);
      assert.equal((await client.call('DeleteCrawl', { value: 'c' })).value, 2);
      assert.equal((await client.call('CountURLs', { crawlID: 'c' })).value, 0);
      await client.put([discovered('http://b.com/1', { crawlID: 'c' })]);
      assert.equal(
        (await client.call('CountURLs', { crawlID: 'c' })).value,
        1,
        'after DeleteCrawl a URL is discovered again',
      );
    });

    test('politeness: SetDelay, BlockQueueUntil and SetCrawlLimit gate a queue', async () => {
      const { client, advance, nowS } = await serve(await location());
      await client.put(
        ['http://a.com/1', 'http://a.com/2', 'http://a.com/3', 'http://b.com/1', 'http://b.com/2'].map((url) =>
          discovered(url),
        ),
      );
      await client.call('SetDelay', { key: 'a.com', delay_requestable: 10 });
      await client.call('BlockQueueUntil', { key: 'b.com', time: nowS() + 60 });
      assert.deepEqual(urlsOf(await client.get({ max_urls_per_queue: 1 })), ['http://a.com/1']);
      advance(9_000);
      assert.deepEqual(await client.get({ max_urls_per_queue: 1 }), []);
      advance(1_000);
      assert.deepEqual(urlsOf(await client.get({ max_urls_per_queue: 1 })), ['http://a.com/2']);
      advance(60_000);
      assert.deepEqual(urlsOf(await client.get({ max_urls_per_queue: 1, key: 'b.com' })), ['http://b.com/1']);
      await client.call('SetCrawlLimit', { key: 'a.com', limit: 2 });
      await client.put([known('http://a.com/1', 0), known('http://a.com/2', 0)]);
      advance(3_600_000);
      assert.deepEqual(await client.get({ key: 'a.com' }), [], 'a.com completed its crawl limit of 2');
    });

    test('GetURLStatus: queued and scheduled exactly, finished as probably seen, else NOT_FOUND', async () => {
      const { client, nowS } = await serve(await location());
      await client.put([
        discovered('http://a.com/new'),
        discovered('http://a.com/done'),
        known('http://a.com/later', nowS() + 100),
      ]);
      await client.put([known('http://a.com/done', 0)]);
      const fresh = await client.call<{ item: string; discovered: { info: UrlInfo } }>('GetURLStatus', {
        url: 'http://a.com/new',
      });
      assert.equal(fresh.item, 'discovered');
      assert.equal(fresh.discovered.info.key, 'a.com');
      const later = await client.call<{ item: string; known: { refetchable_from_date: number } }>('GetURLStatus', {
        url: 'http://a.com/later',
      });
      assert.deepEqual([later.item, later.known.refetchable_from_date], ['known', nowS() + 100]);
      const done = await client.call<{ item: string; known: { refetchable_from_date: number } }>('GetURLStatus', {
        url: 'http://a.com/done',
      });
      assert.deepEqual([done.item, done.known.refetchable_from_date], ['known', 0]);
      assert.equal(
        (await statusOf(client.call('GetURLStatus', { url: 'http://a.com/never' }))).code,
        GrpcStatus.NOT_FOUND,
      );
    });

    test("PurgeURLs goes by each URL's creation_date", async () => {
      const { client, advance } = await serve(await location());
      await client.put([discovered('http://a.com/old')]);
      advance(3 * 24 * 3600_000);
      await client.put([discovered('http://a.com/new')]);
      const dates = new Map((await client.list<ListedItem>({})).map((item) => [urlOfItem(item), item.creation_date]));
      assert.equal(dates.get('http://a.com/new')! - dates.get('http://a.com/old')!, 3 * 24 * 3600);
      assert.equal((await client.call('PurgeURLs', { days: 2 })).value, 1);
      assert.deepEqual((await client.list<ListedItem>({})).map(urlOfItem), ['http://a.com/new']);
    });

    test('metadata travels with a URL; SetActive(false) holds GetURLs while PutURLs goes on', async () => {
      const { client } = await serve(await location());
      assert.equal((await client.call('GetActive', {})).state, true);
      await client.call('SetActive', { state: false });
      await client.put([
        discovered('http://a.com/1', { metadata: { depth: { values: ['2'] }, source: { values: ['http://s.com/'] } } }),
      ]);
      assert.deepEqual(await client.get(), []);
      assert.equal((await client.call('GetActive', {})).state, false);
      await client.call('SetActive', { state: true });
      const [info] = await client.get();
      assert.deepEqual(info!.metadata, { depth: { values: ['2'] }, source: { values: ['http://s.com/'] } });
    });
  });
}

for (const { name, location, skip } of LOCATIONS) {
  describe(`URLFrontier API of 69399d2 over gRPC (${name})`, { ...(skip === undefined ? {} : { skip }) }, () => {
    test('PutDiscovered: one ack per batch with its ID; new OK; known, repeated or hostless SKIPPED; empty batch acked', async () => {
      const { client } = await serve(await location());
      const acks = await client.putDiscovered([
        { ID: 'b1', items: [info('http://a.com/1'), info('http://b.com/1'), info('http://a.com/2')] },
        { ID: 'b2', items: [info('http://a.com/1'), info('http://c.com/1'), info('http://c.com/1')] },
        { ID: 'b3', items: [info(''), info('not a url'), info('http://d.com/1')] },
        { ID: 'probe', items: [] },
      ]);
      assert.deepEqual(acks, [
        { ID: 'b1', statuses: ['OK', 'OK', 'OK'] },
        { ID: 'b2', statuses: ['SKIPPED', 'OK', 'SKIPPED'] },
        { ID: 'b3', statuses: ['SKIPPED', 'SKIPPED', 'OK'] },
        { ID: 'probe', statuses: [] },
      ]);
      assert.deepEqual(
        await client.putDiscovered([{ ID: 'again', items: [info('http://a.com/2'), info('http://e.com/1')] }]),
        [{ ID: 'again', statuses: ['SKIPPED', 'OK'] }],
        'known from an earlier stream',
      );
      assert.equal((await client.call('CountURLs', {})).value, 6, 'each URL queued once');
      assert.deepEqual((await client.call<{ values: string[] }>('ListQueues', { include_inactive: true })).values, [
        'a.com',
        'b.com',
        'c.com',
        'd.com',
        'e.com',
      ]);
      assert.equal((await client.call('GetStats', { key: 'a.com' })).size, 2);
    });

    test('DeleteCrawl as the reference: unknown answers 0; a deleted crawl leaves ListCrawls and GetStats; unknown GetStats is zeros', async () => {
      const { client, store } = await serve(await location());
      assert.equal((await client.call('DeleteCrawl', { value: 'nosuch' })).value, 0);
      assert.deepEqual(await client.call('GetStats', { crawlID: 'nosuch' }), {
        size: 0,
        inProcess: 0,
        counts: { completed: 0 },
        numberOfQueues: 0,
        crawlID: 'nosuch',
      });
      assert.equal((await client.call('CountURLs', { crawlID: 'nosuch' })).value, 0);
      await client.put(
        ['http://a.com/1', 'http://a.com/2', 'http://b.com/1'].map((url) => discovered(url, { crawlID: 'c' })),
      );
      await client.put([known('http://a.com/1', 0, { crawlID: 'c' })]);
      await client.call('SetDelay', { key: '', delay_requestable: 7, crawlID: 'c' });
      assert.equal(
        (await client.call<{ counts: { completed: number } }>('GetStats', { crawlID: 'c' })).counts.completed,
        1,
      );
      assert.deepEqual((await client.call<{ values: string[] }>('ListCrawls', {})).values, ['c']);
      assert.equal((await client.call('DeleteCrawl', { value: 'c' })).value, 2);
      assert.deepEqual((await client.call<{ values: string[] }>('ListCrawls', {})).values, [], 'deleted: not listed');
      assert.deepEqual(await client.call('GetStats', { crawlID: 'c' }), {
        size: 0,
        inProcess: 0,
        counts: { completed: 0 },
        numberOfQueues: 0,
        crawlID: 'c',
      });
      const scope = await store.scope('c', {});
      assert.equal((await scope.frontier().settings()).delayMs, 1_000, "the crawl's default delay is gone too");
      const opened = await scope.epoch((await scope.openEpoch())!);
      assert.equal(opened.epoch, 2);
      assert.equal(opened.capacityUrls, 100_000, 'the capacity carries over: not sized from 2 URLs');
      assert.equal(opened.sizing.policy, 'carry-over');
      assert.equal((await client.call('DeleteCrawl', { value: 'c' })).value, 0, 'deleting again: nothing queued');
      assert.equal(
        (await scope.epoch((await scope.openEpoch())!)).capacityUrls,
        100_000,
        'and an empty epoch sealed by it carries over again',
      );
      assert.deepEqual(await client.put([discovered('http://a.com/1', { crawlID: 'c' })]), [
        { ID: 'http://a.com/1', status: 'OK' },
      ]);
      assert.deepEqual(
        (await client.call<{ values: string[] }>('ListCrawls', {})).values,
        ['c'],
        'put again: listed again',
      );
    });

    test('metrics: calls, URLs in by status and out, errors and latency per RPC', async () => {
      const { client, metrics } = await serve(await location());
      await client.call('SetDelay', { key: '', delay_requestable: 0 });
      await client.putDiscovered([
        { ID: 'b', items: [info('http://a.com/1'), info('http://a.com/1'), info('http://b.com/1')] },
      ]);
      await client.put([discovered('http://c.com/1'), discovered('')]);
      assert.equal((await client.get({ max_urls_per_queue: 5 })).length, 3);
      await statusOf(client.call('SetDelay', { key: 'a.com', delay_requestable: -1 }));
      const text = await metrics();
      const value = (line: string): number =>
        Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      assert.equal(value('seenstore_urlfrontier_calls_total{rpc="PutDiscovered"}'), 1);
      assert.equal(value('seenstore_urlfrontier_calls_total{rpc="SetDelay"}'), 2);
      assert.equal(value('seenstore_urlfrontier_urls_in_total{rpc="PutDiscovered",status="OK"}'), 2);
      assert.equal(value('seenstore_urlfrontier_urls_in_total{rpc="PutDiscovered",status="SKIPPED"}'), 1);
      assert.equal(value('seenstore_urlfrontier_urls_in_total{rpc="PutURLs",status="OK"}'), 1);
      assert.equal(value('seenstore_urlfrontier_urls_in_total{rpc="PutURLs",status="SKIPPED"}'), 1);
      assert.equal(value('seenstore_urlfrontier_urls_out_total{rpc="GetURLs"}'), 3);
      assert.equal(
        value(`seenstore_urlfrontier_errors_total{rpc="SetDelay",code="${GrpcStatus.INVALID_ARGUMENT}"}`),
        1,
      );
      assert.equal(value('seenstore_urlfrontier_seconds_count{rpc="GetURLs"}'), 1);
    });

    test('ListURLs pages and filters; CountURLs filters; creation_date is when the URL was first stored', async () => {
      const { client, nowS } = await serve(await location());
      const before = nowS();
      await client.put([
        ...['http://a.com/One', 'http://a.com/two', 'http://b.com/one', 'http://b.com/three'].map((url) =>
          discovered(url, { crawlID: 'c' }),
        ),
        known('http://c.com/later', before + 500, { crawlID: 'c' }),
      ]);
      const listed = await client.list<ListedItem>({ crawlID: 'c' });
      assert.deepEqual(listed.map(urlOfItem).sort(), [
        'http://a.com/One',
        'http://a.com/two',
        'http://b.com/one',
        'http://b.com/three',
        'http://c.com/later',
      ]);
      const later = listed.find((item) => urlOfItem(item) === 'http://c.com/later')!;
      assert.deepEqual(
        [later.item, later.known!.refetchable_from_date, later.known!.info.key],
        ['known', before + 500, 'c.com'],
      );
      for (const item of listed) {
        assert.ok(
          item.creation_date >= before - 1 && item.creation_date <= Math.floor(Date.now() / 1000) + 1,
          `creation_date ${item.creation_date} is when it was stored`,
        );
      }
      // Pages: start and size walk the same order without gap or repeat.
      const pages = [
        ...(await client.list<ListedItem>({ crawlID: 'c', size: 2 })),
        ...(await client.list<ListedItem>({ crawlID: 'c', start: 2, size: 2 })),
        ...(await client.list<ListedItem>({ crawlID: 'c', start: 4, size: 2 })),
      ];
      assert.deepEqual(pages.map(urlOfItem), listed.map(urlOfItem));
      assert.deepEqual((await client.list<ListedItem>({ crawlID: 'c', key: 'b.com' })).map(urlOfItem).sort(), [
        'http://b.com/one',
        'http://b.com/three',
      ]);
      assert.deepEqual((await client.list<ListedItem>({ crawlID: 'c', filter: 'one' })).map(urlOfItem), [
        'http://b.com/one',
      ]);
      assert.deepEqual(
        (await client.list<ListedItem>({ crawlID: 'c', filter: 'one', ignoreCase: true })).map(urlOfItem).sort(),
        ['http://a.com/One', 'http://b.com/one'],
      );
      assert.deepEqual(await client.list<ListedItem>({ crawlID: 'nosuch' }), []);
      assert.equal((await client.call('CountURLs', { crawlID: 'c', filter: 'one' })).value, 1);
      assert.equal((await client.call('CountURLs', { crawlID: 'c', filter: 'ONE', ignoreCase: true })).value, 2);
      assert.equal((await client.call('CountURLs', { crawlID: 'c', filter: 'w', key: 'a.com' })).value, 1);
      assert.equal(
        (await client.call('CountURLs', { crawlID: 'c', filter: ' ' })).value,
        5,
        'a blank filter is no filter',
      );
      const status = await client.call<{ creation_date: number }>('GetURLStatus', {
        url: 'http://a.com/two',
        crawlID: 'c',
      });
      assert.equal(status.creation_date, listed.find((item) => urlOfItem(item) === 'http://a.com/two')!.creation_date);
    });

    test('PurgeURLs removes the URLs older than N days, of a queue or the crawl, without completing them', async () => {
      const { client, advance, nowS } = await serve(await location());
      await client.put([
        discovered('http://a.com/1'),
        discovered('http://a.com/2'),
        discovered('http://b.com/1'),
        known('http://c.com/x', nowS() + 100),
      ]);
      assert.equal((await client.call('PurgeURLs', { days: 1 })).value, 0, 'nothing is a day old');
      advance(2 * 24 * 3600_000);
      assert.equal((await client.call('PurgeURLs', { key: 'a.com', days: 1 })).value, 2);
      assert.equal((await client.call('CountURLs', {})).value, 2);
      assert.equal((await client.call('PurgeURLs', { days: 1, crawlID: 'nosuch' })).value, 0);
      assert.equal((await client.call('PurgeURLs', { days: 1 })).value, 2);
      assert.equal((await client.call('CountURLs', {})).value, 0);
      assert.equal(
        (await client.call<{ counts: { completed: number } }>('GetStats', {})).counts.completed,
        0,
        'purged, not completed',
      );
      assert.deepEqual(
        await client.putDiscovered([{ ID: 'p', items: [info('http://a.com/1')] }]),
        [{ ID: 'p', statuses: ['SKIPPED'] }],
        "a purged URL stays seen in the crawl's filter",
      );
    });

    test('PutDiscovered: crawl IDs per URL; one that cannot be a crawl is SKIPPED, as in PutURLs', async () => {
      const { client } = await serve(await location());
      const acks = await client.putDiscovered([
        {
          ID: 'x',
          items: [
            info('http://a.com/1', { crawlID: 'c1' }),
            info('http://a.com/1', { crawlID: 'c2' }),
            info('http://a.com/2', { crawlID: 'no spaces' }),
            info('http://a.com/3', { key: 'mine', crawlID: 'c1' }),
          ],
        },
      ]);
      assert.deepEqual(acks, [{ ID: 'x', statuses: ['OK', 'OK', 'SKIPPED', 'OK'] }]);
      assert.deepEqual(await client.put([discovered('http://a.com/2', { crawlID: 'no spaces', ID: 'p' })]), [
        { ID: 'p', status: 'SKIPPED' },
      ]);
      assert.deepEqual((await client.call<{ values: string[] }>('ListCrawls', {})).values.sort(), ['c1', 'c2']);
      assert.equal(
        (await client.call('CountURLs', { crawlID: 'c1', key: 'mine' })).value,
        1,
        'a key given is the queue',
      );
    });
  });
}

describe('URLFrontier: bad input gets a status, and the server keeps serving', () => {
  test('a message that does not decode: INVALID_ARGUMENT naming the RPC; another client is served', async () => {
    const { client, port } = await serve(memoryStore('urlfrontier-bad'));
    const answer = await new Promise<{ code: number; details: string }>((resolve) => {
      client.raw.makeUnaryRequest(
        '/urlfrontier.URLFrontier/GetStats',
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        Buffer.from([0xff, 0xff, 0xff]),
        (error) => resolve({ code: error!.code, details: error!.details }),
      );
    });
    assert.equal(answer.code, GrpcStatus.INVALID_ARGUMENT);
    assert.match(answer.details, /GetStats request is not a valid protobuf message/);
    const other = new FrontierClient(port);
    assert.deepEqual(await other.put([discovered('http://a.com/1')]), [{ ID: 'http://a.com/1', status: 'OK' }]);
    other.close();
  });

  test('an undecodable item ends PutURLs with INVALID_ARGUMENT after the acks of the items before it', async () => {
    const { client } = await serve(memoryStore('urlfrontier-bad'));
    const stream = client.raw.makeBidiStreamRequest(
      '/urlfrontier.URLFrontier/PutURLs',
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
    );
    const acks: Buffer[] = [];
    const ended = new Promise<{ code: number; details: string }>((resolve) =>
      stream.on('error', (error: { code: number; details: string }) => resolve(error)),
    );
    stream.on('data', (ack: Buffer) => acks.push(ack));
    // Field 1 (discovered) { field 1 (info) { field 1 (url) "http://a.com/1" } }, then garbage.
    const url = Buffer.from('http://a.com/1');
    stream.write(Buffer.concat([Buffer.from([0x0a, url.length + 4, 0x0a, url.length + 2, 0x0a, url.length]), url]));
    stream.write(Buffer.from([0xff, 0xff, 0xff]));
    const status = await ended;
    assert.equal(status.code, GrpcStatus.INVALID_ARGUMENT);
    assert.match(status.details, /PutURLs request is not a valid protobuf message/);
    assert.equal(acks.length, 1);
    assert.equal((await client.call('CountURLs', {})).value, 1);
  });

  test('a URL of an unknown crawl, an unusable crawl ID, a negative delay: NOT_FOUND and INVALID_ARGUMENT', async () => {
    const { client } = await serve(memoryStore('urlfrontier-bad'));
    const unknown = await statusOf(client.call('GetURLStatus', { url: 'http://a.com/', crawlID: 'nosuchcrawl' }));
    assert.deepEqual(
      [unknown.code, unknown.details],
      [GrpcStatus.NOT_FOUND, 'http://a.com/ is not in crawl nosuchcrawl: no such crawl'],
    );
    assert.deepEqual(
      await client.get({ crawlID: 'nosuchcrawl' }),
      [],
      'GetURLs polls: an unknown crawl has nothing to hand out',
    );
    assert.deepEqual(
      (await client.call<{ values: string[] }>('ListCrawls', {})).values,
      [],
      'and the poll made no crawl',
    );
    const unusable = await statusOf(
      client.call('SetDelay', { key: 'a.com', delay_requestable: 1, crawlID: 'no spaces/allowed' }),
    );
    assert.equal(unusable.code, GrpcStatus.INVALID_ARGUMENT);
    assert.match(unusable.details, /crawl ID "no spaces\/allowed" is not usable/);
    const negative = await statusOf(client.call('SetDelay', { key: 'a.com', delay_requestable: -1 }));
    assert.equal(negative.code, GrpcStatus.INVALID_ARGUMENT);
    assert.match(negative.details, /delay_requestable must be 0 to \d+ seconds, got 4294967295/);
    assert.equal((await statusOf(client.get({ delay_requestable: -1 }))).code, GrpcStatus.INVALID_ARGUMENT);
    assert.equal((await client.call('GetActive', {})).state, true, 'still serving');
  });

  test('a 10 MB URL: RESOURCE_EXHAUSTED for its stream; a 100 KB URL is SKIPPED; others go through', async () => {
    const { client } = await serve(memoryStore('urlfrontier-bad'));
    const huge = await statusOf(client.put([discovered(`http://a.com/${'x'.repeat(10 * 2 ** 20)}`)]));
    assert.equal(huge.code, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.match(huge.details, /larger than max/);
    const acks = await client.put([
      discovered(`http://a.com/${'x'.repeat(100_000)}`, { ID: 'long' }),
      discovered('', { ID: 'empty' }),
      discovered('not a url', { ID: 'hostless' }),
      discovered('http://a.com/x', { ID: 'badcrawl', crawlID: 'no spaces' }),
      discovered('http://a.com/ok'),
    ]);
    assert.deepEqual(
      acks.map((ack) => `${ack.ID} ${ack.status}`),
      ['long SKIPPED', 'empty SKIPPED', 'hostless SKIPPED', 'badcrawl SKIPPED', 'http://a.com/ok OK'],
    );
    // A control character (issue 45), discovered or known, in a batch with a good URL: only it is SKIPPED.
    const controls = await client.put([
      discovered('http://a.com/\u0000', { ID: 'nul' }),
      discovered('http://a.com/ok2'),
      { ...known('http://a.com/x\ty', 0), ID: 'tab' },
    ]);
    assert.deepEqual(
      controls.map((ack) => `${ack.ID} ${ack.status}`),
      ['nul SKIPPED', 'http://a.com/ok2 OK', 'tab SKIPPED'],
    );
    assert.deepEqual(
      await client.putDiscovered([{ ID: 'd', items: [info('http://a.com/\u007f'), info('http://a.com/ok3')] }]),
      [{ ID: 'd', statuses: ['SKIPPED', 'OK'] }],
    );
    assert.equal((await client.call('CountURLs', {})).value, 3);
  });

  test("SetLogLevel sets the level of serve's log: DEBUG logs each call, ERROR only errors", async () => {
    const lines: string[] = [];
    const { client } = await serve(
      memoryStore('urlfrontier-log'),
      undefined,
      createLogger(true, (line) => lines.push(line)),
    );
    await client.call('GetActive', {});
    assert.equal(lines.length, 0, 'info: calls are not logged');
    await client.call('SetLogLevel', { package: 'crawlercommons.urlfrontier', level: 'DEBUG' });
    assert.match(lines.at(-1)!, /"method":"SetLogLevel","level":"debug"/);
    await client.call('GetStats', { crawlID: 'c' });
    assert.match(lines.at(-1)!, /"event":"debug".*"method":"GetStats"/);
    await client.call('SetLogLevel', { package: '', level: 'ERROR' });
    const before = lines.length;
    await client.call('GetStats', {});
    await client.put([discovered('http://a.com/1', { crawlID: 'no spaces' })]);
    assert.equal(lines.length, before, 'error: neither calls nor warnings are logged');
  });

  test('with a password, a call needs it as a Bearer token: UNAUTHENTICATED without', async () => {
    const { port } = await serve(memoryStore('urlfrontier-auth'), 's3cret');
    const anonymous = new FrontierClient(port);
    const wrong = new FrontierClient(port, 'guess');
    const right = new FrontierClient(port, 's3cret');
    try {
      assert.equal((await statusOf(anonymous.call('GetActive', {}))).code, GrpcStatus.UNAUTHENTICATED);
      assert.equal((await statusOf(wrong.put([discovered('http://a.com/1')]))).code, GrpcStatus.UNAUTHENTICATED);
      assert.equal((await statusOf(wrong.get())).code, GrpcStatus.UNAUTHENTICATED);
      assert.deepEqual(await right.put([discovered('http://a.com/1')]), [{ ID: 'http://a.com/1', status: 'OK' }]);
    } finally {
      for (const client of [anonymous, wrong, right]) client.close();
    }
  });
});

describe('URLFrontier: PutDiscovered in-flight cap', () => {
  test('the stream is no longer read with maxInFlight batches unacked, and is read again once they are acked', async () => {
    const gates: (() => void)[] = [];
    const enqueued: string[][] = [];
    const scope = {
      enqueue: async (urls: readonly string[]) => {
        enqueued.push([...urls]);
        await new Promise<void>((resolve) => gates.push(resolve));
        return urls.map(() => true);
      },
    };
    const crawls = { scope: async () => scope, queueKeyMode: async () => 'host' } as unknown as Crawls;
    const call = new FakeDuplex();
    new PutDiscoveredStream(call as never, {
      crawls,
      maxInFlight: 2,
      onUnusableCrawl: () => undefined,
      onAcks: () => undefined,
    });
    call.emit('data', { ID: 'b1', items: [info('http://a.com/1')] });
    assert.equal(call.isPaused(), false);
    call.emit('data', { ID: 'b2', items: [info('http://a.com/2')] });
    assert.equal(call.isPaused(), true, 'two batches in flight: paused');
    await until(() => gates.length === 1);
    assert.deepEqual(enqueued, [['http://a.com/1', 'http://a.com/2']], 'batches waiting together are one enqueue');
    assert.equal(call.written.length, 0, 'no ack before the commit');
    gates.shift()!();
    await until(() => call.written.length === 2);
    assert.deepEqual(
      call.written.map((ack) => ack.ID),
      ['b1', 'b2'],
    );
    assert.equal(call.isPaused(), false, 'acked: read again');
    call.emit('data', { ID: 'b3', items: [info('http://a.com/3')] });
    call.emit('end');
    await until(() => gates.length === 1);
    gates.shift()!();
    await until(() => call.ended);
    assert.deepEqual(
      call.written.map((ack) => ack.ID),
      ['b1', 'b2', 'b3'],
    );
  });
});

/** The part of a grpc-js server duplex stream PutDiscoveredStream uses. */
class FakeDuplex extends EventEmitter {
  readonly written: { ID: string; statuses: string[] }[] = [];
  ended = false;
  #paused = false;
  get writableEnded(): boolean {
    return this.ended;
  }
  pause(): void {
    this.#paused = true;
  }
  resume(): void {
    this.#paused = false;
  }
  isPaused(): boolean {
    return this.#paused;
  }
  write(ack: { ID: string; statuses: string[] }): void {
    this.written.push(ack);
  }
  end(): void {
    this.ended = true;
  }
}

/** Resolves once `ok()` holds, checked on each turn of the event loop (no timers: the condition is an event of the code under test). */
async function until(ok: () => boolean): Promise<void> {
  for (let turn = 0; !ok(); turn++) {
    if (turn > 10_000) throw new Error('condition never held');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
