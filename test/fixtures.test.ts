import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { Packr } from 'msgpackr';
import { ExportedEpoch, FORMAT_VERSION, HASH_SCHEME_ID, SeenStore, SeenStoreError } from '../src/index.js';
import { ROOT } from './helpers/data.js';
import { ageLocks } from './helpers/locks.js';
import { tempDir } from './helpers/tmp.js';
import { runCli } from './helpers/cli.js';

interface Expected {
  formatVersion: number;
  scope: string;
  epochs: {
    epoch: number;
    state: string;
    capacityUrls: number;
    fprTarget: number;
    strategy?: string;
    submitted: number;
    added: number;
    slices: number;
    journalRecords: number;
  }[];
  urls: Record<string, [string, number]>;
  neverSeenInAnyEpoch: number;
  exportFile?: { file: string; epoch: number; urls: string };
  /** From format 4: the hash scheme of the fixture's epochs (before: xxh64-km-v1). */
  hashScheme?: string;
  /** From format 4: a scope of URL keys (the default) and one of raw keys with the lines it holds. */
  keys?: { url: { scope: string; normalize: string }; raw: { scope: string; normalize: string; lines: string[] } };
  /** From format 3: a counting scope, its URLs and the count of each, part of them in the journal. */
  counting?: { scope: string; urls: [string, number]; counts: number[] };
}

const FIXTURES = join(ROOT, 'test', 'fixtures');

/** Regenerates the URL lists the fixture scripts used (synthetic, deterministic). */
function urls([tag, n]: [string, number]): string[] {
  return Array.from({ length: n }, (_, i) => `https://fixture.example/${tag}/${i}?q=${(i * 7919) % 1000}`);
}

function copyOf(format: string): string {
  const dir = tempDir();
  cpSync(join(FIXTURES, format, 'store'), dir, { recursive: true });
  return dir;
}

/** Every checkpoint record of a store, decoded, keyed by its meta key. */
async function checkpointRecords(dir: string): Promise<Record<string, unknown>> {
  const root = open({ path: dir, maxDbs: 8 });
  const meta = root.openDB({ name: 'meta', encoding: 'binary' });
  const packr = new Packr({ useRecords: false, mapsAsObjects: true });
  const out: Record<string, unknown> = {};
  for (const { key, value } of meta.getRange({})) {
    if (Array.isArray(key) && key[0] === 'ckpt') {
      const { atMs: _atMs, ...record } = packr.unpack(value as Buffer) as Record<string, unknown>;
      out[JSON.stringify(key)] = record;
    }
  }
  await root.close();
  return out;
}

/** Opens the store at `dir` and checks it answers as `expected` records, then that it is still writable. */
async function answersAsRecorded(dir: string, expected: Expected): Promise<void> {
  const store = await SeenStore.open(dir);
  const scope = store.scope(expected.scope);
  const stats = await scope.stats();
  for (const want of expected.epochs) {
    const got = stats.epochs.find((e) => e.epoch === want.epoch);
    assert.ok(got, `epoch ${want.epoch} missing`);
    for (const field of [
      'state',
      'capacityUrls',
      'fprTarget',
      'submitted',
      'added',
      'slices',
      'journalRecords',
    ] as const) {
      assert.equal(got[field], want[field], `epoch ${want.epoch} ${field}`);
    }
    // Fixtures before format 3 predate strategies: every epoch of theirs is classic.
    assert.equal(got.strategy, want.strategy ?? 'classic', `epoch ${want.epoch} strategy`);
  }
  const byEpoch: [number, string][] = [
    [1, 'epoch1'],
    [2, 'epoch2'],
    [3, 'epoch3'],
  ];
  if (expected.urls.merged !== undefined) byEpoch.push([3, 'merged']);
  for (const [epoch, list] of byEpoch) {
    assert.ok(
      (await scope.has(urls(expected.urls[list]!), { epochs: epoch })).every(Boolean),
      `epoch ${epoch} lost URLs of ${list}`,
    );
  }
  assert.equal(
    (await scope.has(urls(expected.urls.never!), { epochs: 'all' })).filter(Boolean).length,
    expected.neverSeenInAnyEpoch,
  );
  if (expected.counting !== undefined) {
    assert.deepEqual(
      await store.scope(expected.counting.scope).count(urls(expected.counting.urls)),
      expected.counting.counts,
      'counting scope',
    );
  }
  assert.ok((await store.verify()).ok);
  // Every fixture epoch hashes by xxh64-km-v1, and keeps doing so (the answers above): an epoch's
  // scheme never changes. Epochs created from now on use the current scheme.
  for (const want of expected.epochs)
    assert.equal((await scope.epoch(want.epoch)).hashScheme, expected.hashScheme ?? 'xxh64-km-v1');
  await keysAsRecorded(store, expected);
  // Still writable: new adds, a rotation, and the journal tail checkpointed on close.
  assert.deepEqual(await scope.addIfAbsent(['https://fixture.example/after-upgrade']), [true]);
  const { opened } = await scope.rotate();
  assert.equal(opened.hashScheme, HASH_SCHEME_ID);
  assert.notEqual(HASH_SCHEME_ID, 'xxh64-km-v1');
  assert.equal(opened.normalize, expected.keys?.url.normalize ?? 'none', 'a rotation keeps the key mode');
  await store.close();
  const reopened = await SeenStore.open(dir);
  assert.ok(
    (await reopened.scope(expected.scope).has(['https://fixture.example/after-upgrade'], { epochs: 'previous' }))[0],
  );
  await reopened.close();
}

/**
 * Key modes (format 4): a scope of URL keys refuses a line that is not one, a raw scope holds such
 * lines. Scopes of older formats were any-line (`none`), and stay so after the migration.
 */
async function keysAsRecorded(store: SeenStore, expected: Expected): Promise<void> {
  const urlScope = store.scope(expected.keys?.url.scope ?? expected.scope);
  const { normalize } = (await urlScope.stats()).epochs.at(-1)!;
  if (expected.keys === undefined) {
    assert.equal(normalize, 'none', 'a scope from before format 4 keeps any-line keys');
    assert.deepEqual(await urlScope.addIfAbsent(['not a url at all']), [true], 'any line is still a key');
    return;
  }
  assert.equal(normalize, expected.keys.url.normalize);
  await assert.rejects(
    urlScope.addIfAbsent(['not a url at all']),
    (error: unknown) => error instanceof SeenStoreError && error.code === 'INVALID_URL',
  );
  const raw = store.scope(expected.keys.raw.scope);
  assert.equal((await raw.stats()).epochs[0]!.normalize, expected.keys.raw.normalize);
  assert.ok((await raw.has(expected.keys.raw.lines)).every(Boolean), 'raw lines recorded as they were');
  assert.deepEqual(await raw.addIfAbsent(['another line, not a URL']), [true]);
}

/**
 * Every released on-disk format keeps a frozen store (and, from format 2, an export file); the
 * tests open copies, never the originals. Older formats must be refused until migrated, then
 * answer exactly as recorded.
 */
for (const format of ['format-1', 'format-2', 'format-3', 'format-4', 'format-5']) {
  describe(`frozen fixture ${format}`, () => {
    const expected = JSON.parse(readFileSync(join(FIXTURES, format, 'expected.json'), 'utf8')) as Expected;

    if (expected.formatVersion < FORMAT_VERSION) {
      test('is refused with FORMAT_UNSUPPORTED naming `seenstore migrate`, then migrates and answers as recorded', async () => {
        const dir = copyOf(format);
        await assert.rejects(SeenStore.open(dir), (error: unknown) => {
          assert.ok(error instanceof SeenStoreError);
          assert.equal(error.code, 'FORMAT_UNSUPPORTED');
          assert.match(error.message, /seenstore migrate/);
          return true;
        });
        const report = await SeenStore.migrate(dir);
        assert.equal(report.from, expected.formatVersion);
        assert.equal(report.to, FORMAT_VERSION);
        assert.ok(report.snapshot !== null && existsSync(join(report.snapshot.path, 'data.mdb')));
        assert.equal(report.snapshot.formatVersion, expected.formatVersion);
        await answersAsRecorded(dir, expected);
      });
    } else {
      test('opens through a copy and answers as recorded', async () => {
        await answersAsRecorded(copyOf(format), expected);
      });
    }

    if (expected.exportFile !== undefined) {
      const { file, epoch, urls: list } = expected.exportFile;
      test(`export file ${file} reads, imports and answers as recorded`, async () => {
        const path = join(FIXTURES, format, file);
        const exported = await ExportedEpoch.open(path);
        assert.equal(exported.epoch.epoch, epoch);
        assert.ok(exported.has(urls(expected.urls[list]!)).every(Boolean));
        const store = await SeenStore.open(tempDir());
        await store.import(path, { scope: 'imported' });
        assert.ok((await store.scope('imported').has(urls(expected.urls[list]!), { epochs: epoch })).every(Boolean));
        await store.close();
      });
    }
  });
}

describe('journal file version 1 (the format-5 fixture)', () => {
  test('is read as it is (after the store migration), and rewritten as version 2 by the first write, every frame kept', async () => {
    const dir = copyOf('format-5');
    const expected = JSON.parse(readFileSync(join(FIXTURES, 'format-5', 'expected.json'), 'utf8')) as Expected;
    const journalVersion = (): number => readFileSync(join(dir, 'journal.log')).readUInt32LE(8);
    const tail = expected.epochs.find((e) => e.epoch === 3)!.journalRecords;
    await SeenStore.migrate(dir, { snapshot: false });
    assert.equal(journalVersion(), 1, 'the store migration is not what rewrites the journal file');
    assert.ok(tail > 1, 'the fixture has a journal tail');
    const reader = await SeenStore.open(dir, { readOnly: true });
    assert.ok((await reader.scope(expected.scope).has(urls(expected.urls.epoch3!), { epochs: 3 })).every(Boolean));
    await reader.close();
    assert.equal(journalVersion(), 1, 'a reader rewrote the journal file');
    const store = await SeenStore.open(dir, { checkpointJournalBytes: 2 ** 40, checkpointIntervalMs: 2 ** 40 });
    const scope = store.scope(expected.scope);
    assert.deepEqual(await scope.addIfAbsent(['https://fixture.example/journal-v2']), [true]);
    assert.equal(journalVersion(), 2);
    assert.ok(
      (await scope.has(urls(expected.urls.epoch3!), { epochs: 3 })).every(Boolean),
      'a frame was lost in the rewrite',
    );
    assert.equal((await scope.stats()).epochs.find((e) => e.epoch === 3)!.journalRecords, tail + 1);
    assert.ok((await store.verify()).ok);
    await store.close();
  });
});

describe('hash schemes across versions', () => {
  test('an export of a v1 epoch is not merged into a v2 epoch: INCOMPATIBLE naming both schemes, nothing written', async () => {
    const store = await SeenStore.open(tempDir());
    const scope = store.scope('fresh');
    await scope.add(['https://fixture.example/fresh']);
    assert.equal((await scope.epoch(1)).hashScheme, HASH_SCHEME_ID);
    await assert.rejects(
      async () => scope.merge([join(FIXTURES, 'format-3', 'export-epoch2.ssx')]),
      (error: unknown) =>
        error instanceof SeenStoreError &&
        error.code === 'INCOMPATIBLE' &&
        /hash scheme xxh64-km-v1 vs xxh64-km-v2/.test(error.message),
    );
    assert.equal((await scope.stats()).epochs[0]!.added, 1);
    await store.close();
  });
});

describe('migration 1 -> 2 (fixture in, fixture out)', () => {
  test('rewrites exactly the checkpoint records as frozen in format-1/migrated-to-2.json', async () => {
    const dir = copyOf('format-1');
    const before = await checkpointRecords(dir);
    await SeenStore.migrate(dir, { snapshot: false });
    const after = await checkpointRecords(dir);
    const frozen = JSON.parse(readFileSync(join(FIXTURES, 'format-1', 'migrated-to-2.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.deepEqual(after, frozen);
    assert.deepEqual(Object.keys(after), Object.keys(before));
    // A second run finds nothing to do.
    const again = await SeenStore.migrate(dir);
    assert.deepEqual(again.steps, []);
    assert.equal(again.snapshot, null);
  });

  test('a crash before the migration commits leaves the old format, which migrates later', async () => {
    const dir = copyOf('format-1');
    const { spawnSync } = await import('node:child_process');
    const script = `
      import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
      import { setFaultHook } from ${JSON.stringify(new URL('../src/store/faults.js', import.meta.url).href)};
      setFaultHook((point) => { if (point === 'migrate:before-commit') process.kill(process.pid, 'SIGKILL'); });
      await SeenStore.migrate(process.argv[1]);`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], { encoding: 'utf8' });
    assert.equal(child.signal, 'SIGKILL', child.stderr);
    await assert.rejects(SeenStore.open(dir), /FORMAT_UNSUPPORTED|migrate/);
    // The killed process's lock would go stale after lockStaleMs: it is aged at once instead.
    assert.ok(ageLocks(dir) >= 1, 'the killed migration left no lock');
    const report = await SeenStore.migrate(dir, { lockStaleMs: 2000 });
    assert.equal(report.to, FORMAT_VERSION);
    await answersAsRecorded(
      dir,
      JSON.parse(readFileSync(join(FIXTURES, 'format-1', 'expected.json'), 'utf8')) as Expected,
    );
  });

  test('CLI: commands on an unmigrated store exit 5 naming `seenstore migrate`; migrate exits 0 and reports the step', async () => {
    const dir = copyOf('format-1');
    const refused = await runCli(['has', '--store', dir, '--scope', 'fixture'], 'https://fixture.example/one/0?q=0\n');
    assert.equal(refused.code, 5);
    assert.match(refused.stderr, /^seenstore: error FORMAT_UNSUPPORTED: .*run `seenstore migrate`/);
    const migrated = await runCli(['migrate', '--store', dir]);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /^format 1 -> 2: checkpoint records gain .* \(3 records\)\n/);
    assert.match(migrated.stdout, /\nformat 2 -> 3: slices may carry a keying .* \(0 records\)\n/);
    assert.match(migrated.stdout, /\nformat 3 -> 4: epochs may normalise with `url` .* \(0 records\)\n/);
    assert.match(
      migrated.stdout,
      new RegExp(
        `migrated from format 1 to ${FORMAT_VERSION}; the old store is snapshot pre-migrate-1-to-${FORMAT_VERSION}-`,
      ),
    );
    const answered = await runCli(
      ['has', '--store', dir, '--scope', 'fixture', '--epochs', '1'],
      'https://fixture.example/one/0?q=0\n',
    );
    assert.equal(answered.stdout, 'https://fixture.example/one/0?q=0\n');
    assert.match((await runCli(['migrate', '--store', dir])).stdout, /nothing to do/);
    const listed = JSON.parse((await runCli(['snapshot', 'list', '--json', '--store', dir])).stdout);
    assert.deepEqual(
      listed.map((s: { reason: string; formatVersion: number }) => [s.reason, s.formatVersion]),
      [['pre-migrate', 1]],
    );
  });
});
