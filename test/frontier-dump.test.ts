import assert from 'node:assert/strict';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { SeenStore, SeenStoreError } from '../src/index.js';
import type { FrontierEntry } from '../src/store/backend.js';
import { exportDumpLines, importDump } from '../src/urlfrontier/dump.js';
import { runCli } from './helpers/cli.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';
import { tempDir } from './helpers/tmp.js';

/*
 * `frontier import` / `export` against the reference URLFrontier client's DumpURLs format, as the
 * published description has it (one URLItem per line in protobuf's JSON mapping; the writer below
 * is ours, from that description): both field spellings, 64-bit integers as strings and as
 * numbers, default values left out, gzip and plain; on memory, LMDB and a Redis cluster.
 */

const quiet = { onWarning: () => {} };
const DAY_S = 24 * 3600;
const nowS = Math.floor(Date.now() / 1000);
/** A revisit date, whole seconds (the format's unit), so that it survives the format exactly. */
const laterS = nowS + 3 * DAY_S;

interface Written {
  readonly url: string;
  readonly crawlID: string;
  readonly key?: string;
  readonly metadata?: Record<string, string[]>;
  /** undefined: discovered; 0: known, done; else known, refetchable then (seconds). */
  readonly refetchS?: number;
}

/**
 * One URLItem line as protobuf's JSON printer writes it (`camel`: lowerCamelCase names, uint64
 * as strings) or as a parser also accepts it (the .proto's names, uint64 as numbers); fields at
 * their default left out, as the printer does.
 */
function urlItemLine(item: Written, camel: boolean): string {
  const info: Record<string, unknown> = { url: item.url };
  if (item.key !== undefined) info.key = item.key;
  if (item.metadata !== undefined)
    info.metadata = Object.fromEntries(Object.entries(item.metadata).map(([k, values]) => [k, { values }]));
  if (item.crawlID !== '') info.crawlID = item.crawlID;
  const uint64 = (n: number) => (camel ? String(n) : n);
  const creation = { [camel ? 'creationDate' : 'creation_date']: uint64(nowS - DAY_S) };
  if (item.refetchS === undefined)
    return JSON.stringify({ discovered: { info }, ID: `${item.crawlID}_${item.url}`, ...creation });
  const known: Record<string, unknown> = { info };
  if (item.refetchS !== 0) known[camel ? 'refetchableFromDate' : 'refetchable_from_date'] = uint64(item.refetchS);
  return JSON.stringify({ known, ...creation });
}

/** A crawl of 3 crawls: discovered URLs (some with metadata, some with their own key), scheduled and done ones. */
function writtenItems(): Written[] {
  const items: Written[] = [];
  for (let i = 0; i < 60; i++) {
    const crawlID = ['', 'news', 'shop:eu'][i % 3]!;
    const url = `https://h${i % 7}.example/${crawlID || 'd'}/${i}`;
    if (i % 5 === 0) items.push({ url, crawlID, refetchS: laterS + i });
    else if (i % 5 === 1) items.push({ url, crawlID, refetchS: 0 });
    else if (i % 5 === 2)
      items.push({ url, crawlID, key: `queue-${i % 4}`, metadata: { depth: [String(i)], tags: ['a', 'b'] } });
    else items.push({ url, crawlID });
  }
  return items;
}

/** The file: lines alternate between the two spellings. */
function writeDump(path: string, items: readonly Written[], gzip: boolean): void {
  const text = `${items.map((item, i) => urlItemLine(item, i % 2 === 0)).join('\r\n')}\n`;
  writeFileSync(path, gzip ? gzipSync(text) : text);
}

const SCOPE_OF: Record<string, string> = { '': 'DEFAULT', news: 'news', 'shop:eu': 'shop.eu' };

type Shape = Pick<FrontierEntry, 'url' | 'queue' | 'state' | 'data'> & { readonly atMs?: number };

async function entriesOf(store: SeenStore, scope: string): Promise<FrontierEntry[]> {
  const all: FrontierEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await store
      .scope(scope)
      .frontier()
      .entries({ limit: 7, ...(cursor === undefined ? {} : { cursor }) });
    all.push(...page.entries);
    cursor = page.cursor;
  } while (cursor !== undefined);
  return all;
}

/** Entries by URL, with the due time only where it is a date (scheduled): a waiting URL is due from its import. A null payload is none. */
async function shapes(store: SeenStore, scope: string): Promise<Map<string, Shape>> {
  const map = new Map<string, Shape>();
  for (const e of await entriesOf(store, scope)) {
    assert.ok(!map.has(e.url), `${e.url} is queued twice in ${scope}`);
    map.set(e.url, {
      url: e.url,
      queue: e.queue,
      state: e.state,
      ...(e.state === 'scheduled' ? { atMs: e.atMs } : {}),
      ...(e.data === undefined || e.data === null ? {} : { data: e.data }),
    });
  }
  return map;
}

/** What importing `items` must leave in the store, checked URL by URL. */
async function checkImported(store: SeenStore, items: readonly Written[]): Promise<void> {
  for (const [crawlID, scope] of Object.entries(SCOPE_OF)) {
    const mine = items.filter((item) => item.crawlID === crawlID);
    const got = await shapes(store, scope);
    const queued = mine.filter((item) => item.refetchS !== 0);
    assert.equal(got.size, queued.length, `scope ${scope}: ${got.size} entries, ${queued.length} expected`);
    for (const item of queued) {
      const entry = got.get(item.url);
      assert.ok(entry !== undefined, `${item.url} is not queued`);
      assert.equal(entry.queue, item.key ?? new URL(item.url).host);
      assert.equal(entry.state, item.refetchS === undefined ? 'waiting' : 'scheduled');
      if (item.refetchS !== undefined) assert.equal(entry.atMs, item.refetchS * 1000);
      if (item.metadata !== undefined)
        assert.deepEqual(entry.data, {
          metadata: Object.fromEntries(Object.entries(item.metadata).map(([k, values]) => [k, { values }])),
        });
      else
        assert.equal(
          entry.data ?? undefined,
          undefined,
          'a URL without metadata has no payload (null where others of its batch have one)',
        );
    }
    // Every URL of the dump is seen, the done ones included: discovering one again queues nothing.
    const urls = mine.map((item) => item.url);
    assert.deepEqual(
      await store.scope(scope).has(urls),
      urls.map(() => true),
    );
    assert.deepEqual(
      await store.scope(scope).enqueue(urls),
      urls.map(() => false),
      `scope ${scope}: a URL of the dump was discovered again`,
    );
  }
}

async function importFile(store: SeenStore, path: string, options: Parameters<typeof importDump>[2] = {}) {
  return importDump(store, createReadStream(path), { batchLines: 16, ...options });
}

/** Imports, checks, then exports and imports into a second store of the same driver: the same frontier. */
async function roundTrip(open: () => Promise<SeenStore>, dir: string): Promise<void> {
  const items = writtenItems();
  const plain = join(dir, 'dump.jsonl');
  const zipped = join(dir, 'dump.data');
  writeDump(plain, items, false);
  writeDump(zipped, items, true);
  const first = await open();
  const second = await open();
  try {
    const counts = await importFile(first, zipped);
    assert.deepEqual(counts, {
      read: 60,
      queued: 36,
      seen: 0,
      scheduled: 12,
      done: 12,
      invalid: 0,
      scopes: ['DEFAULT', 'news', 'shop.eu'],
    });
    await checkImported(first, items);
    // Again, plain this time: nothing changes (every step is add-if-absent or a move to the same place).
    const again = await importFile(first, plain);
    assert.deepEqual({ queued: again.queued, seen: again.seen }, { queued: 0, seen: 36 });
    await checkImported(first, items);

    // A payload that is not URLFrontier metadata, and a leased URL, survive the trip (the lease as a waiting URL).
    await first
      .scope('news')
      .enqueue(['https://crawlee.example/x'], { data: [{ label: 'DETAIL', retries: 2, nested: [1, null] }] });
    await first.scope('news').frontier().configure({ delayMs: 0 });
    const [leased] = await first.scope('news').frontier().take(1, { queue: 'h1.example' });
    assert.ok(leased !== undefined);
    let text = '';
    for await (const page of exportDumpLines(first)) text += page;
    const exported = join(dir, 'export.jsonl');
    writeFileSync(exported, text);
    assert.equal(text.split('\n').length - 1, 36 + 12 + 1);
    await importFile(second, exported);
    for (const scope of Object.values(SCOPE_OF)) {
      const want = await shapes(first, scope);
      const got = await shapes(second, scope);
      const leasedUrl = want.get(leased.url);
      if (leasedUrl !== undefined) {
        assert.equal(leasedUrl.state, 'leased');
        want.set(leased.url, { ...leasedUrl, state: 'waiting' });
      }
      assert.deepEqual(got, want, `scope ${scope} differs after export and import`);
    }
  } finally {
    await first.close();
    await second.close();
  }
}

let stores = 0;

test('memory: a DumpURLs file (both spellings, gzip and plain) imports; export and re-import give the same frontier', async () => {
  await roundTrip(() => SeenStore.open(`memory://dump-${process.pid}-${++stores}`, quiet), tempDir());
});

test('LMDB: the same', async () => {
  const dir = tempDir();
  await roundTrip(() => SeenStore.open(join(dir, `store-${++stores}`), quiet), dir);
});

const missing = redisMissing();
describe('Redis cluster', { skip: missing }, () => {
  const cluster = missing === undefined ? startRedisCluster() : (undefined as unknown as Promise<RedisCluster>);
  after(async () => (await cluster)?.stop());
  test('the same on a local Redis cluster', async () => {
    const location = await cluster;
    await roundTrip(() => SeenStore.open(location.location(), quiet), tempDir());
  });
});

test('bad lines: one error naming the line by default; counted and skipped with onInvalid skip', async () => {
  const good = urlItemLine({ url: 'https://ok.example/1', crawlID: 'c' }, true);
  const bad = [
    'not json',
    '{"discovered":{"info":{"url":"https://x.example/"}},"known":{"info":{"url":"https://x.example/"}}}',
    '{"discovered":{"info":{"url":"https://x.example/","crawlId":"c"}}}',
    '{"known":{"info":{"url":"https://x.example/"},"refetchableFromDate":"-5"}}',
    '{"known":{"info":{"url":"https://x.example/"},"refetchableFromDate":"99999999999"}}',
    '{"discovered":{"info":{"url":"https://x.example/","crawlID":"no spaces"}}}',
    '{"discovered":{"info":{"url":"mailto:a@b"}}}',
    '{"discovered":{"info":{}}}',
    '[1]',
    `{"discovered":{"info":{"url":"https://x.example/${'a'.repeat(1_100_000)}"}}}`,
    '{"discovered":{"info":{"url":"https://x.example/\\u0000"}}}',
  ];
  for (const [i, line] of bad.entries()) {
    const store = await SeenStore.open(`memory://dump-bad-${process.pid}-${++stores}`, quiet);
    try {
      const input = Readable.from([Buffer.from(`${good}\n${line}\n${good}\n`)]);
      await assert.rejects(
        importDump(store, input),
        (error: unknown) =>
          error instanceof SeenStoreError &&
          error.code === 'INVALID_URL' &&
          /^line 2 of the dump: /.test(error.message),
        `bad line ${i}`,
      );
    } finally {
      await store.close();
    }
  }
  const store = await SeenStore.open(`memory://dump-bad-${process.pid}-${++stores}`, quiet);
  try {
    const warnings: string[] = [];
    const counts = await importDump(
      store,
      Readable.from([Buffer.from(`${[good, ...bad, good.replace('/1', '/2')].join('\n')}`)]),
      { onInvalid: 'skip', warn: (m) => warnings.push(m) },
    );
    assert.deepEqual(
      { read: counts.read, queued: counts.queued, invalid: counts.invalid },
      { read: 13, queued: 2, invalid: 11 },
    );
    assert.equal(warnings.length, 11);
    assert.match(warnings[9]!, /^line 11: longer than/);
    assert.equal(warnings[10], '11 invalid lines skipped in all');
  } finally {
    await store.close();
  }
});

test('a damaged gzip stream is STORE_CORRUPT, the lines before it imported', async () => {
  const lines = Array.from({ length: 3000 }, (_, i) =>
    urlItemLine({ url: `https://g${i}.example/`, crawlID: 'g' }, true),
  ).join('\n');
  const zipped = gzipSync(lines);
  const cut = zipped.subarray(0, zipped.length - 20);
  const store = await SeenStore.open(`memory://dump-gz-${process.pid}-${++stores}`, quiet);
  try {
    await assert.rejects(
      importDump(store, Readable.from([cut])),
      (error: unknown) => error instanceof SeenStoreError && error.code === 'STORE_CORRUPT',
    );
  } finally {
    await store.close();
  }
});

test('CLI: frontier import detects gzip by its bytes; export --out .gz writes the format, gzipped', async () => {
  const dir = tempDir();
  const store = join(dir, 'store');
  const items = writtenItems();
  writeDump(join(dir, 'dump.bin'), items, true);
  const imported = await runCli(['--store', store, '--json', 'frontier', 'import', join(dir, 'dump.bin')]);
  assert.equal(imported.code, 0, imported.stderr);
  assert.equal(JSON.parse(imported.stdout).queued, 36);
  const exported = await runCli([
    '--store',
    store,
    '--quiet',
    'frontier',
    'export',
    '--out',
    join(dir, 'out.jsonl.gz'),
  ]);
  assert.equal(exported.code, 0, exported.stderr);
  const lines = gunzipSync(readFileSync(join(dir, 'out.jsonl.gz')))
    .toString('utf8')
    .trim()
    .split('\n');
  assert.equal(lines.length, 48);
  const news = await runCli(['--store', store, '--scope', 'news', 'frontier', 'export']);
  assert.equal(news.stdout.trim().split('\n').length, 16);
  for (const line of news.stdout.trim().split('\n'))
    assert.equal(
      (JSON.parse(line) as { [k: string]: { info: { crawlID: string } } }).known?.info.crawlID ??
        JSON.parse(line).discovered.info.crawlID,
      'news',
    );
  const bad = await runCli(['--store', store, 'frontier', 'import'], 'https://plain.example/\n');
  assert.equal(bad.code, 3);
  assert.match(bad.stderr, /line 1 of the dump: not JSON/);
});
