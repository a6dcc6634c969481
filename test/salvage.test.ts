import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  cpSync,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DELIVERY_DIR, DeliveryFile, deliveryFileName, readDeliveryFile } from '../src/store/lmdb/delivery-files.js';
import { SeenStore, type SalvageReport } from '../src/index.js';
import { walkPages } from '../src/store/lmdb/page-walk.js';
import { runCli } from './helpers/cli.js';
import { sharedUrls } from './helpers/data.js';
import { structuralPlaces } from './helpers/lmdb-pages.js';
import { tempDir } from './helpers/tmp.js';

const PAGE_BYTES = 4096;
/** The tests' clock: leases and due times are fixed against it, never against the machine's. */
const NOW_MS = 1_900_000_000_000;
const clock = (): number => NOW_MS;
const TAIL_URL = 'https://tail.example/not-yet-checkpointed';
const TAIL_URL_2 = 'https://tail.example/the-second-batch';
const SEALED = sharedUrls('crawl-sitelist-15k.txt').slice(0, 6000);
const OPEN = sharedUrls('crawl-benign-35k.txt').slice(0, 3000);
/** Frontier URLs: some left waiting, some leased, one scheduled for later; each with a payload. */
const QUEUED = Array.from({ length: 120 }, (_, i) => `https://q${i % 12}.example/page/${i}`);
const LATER = 'https://later.example/revisit';

/**
 * A store with scope `v` (a sealed epoch with branch pages in its chunks database, an open one, a
 * journal tail a killed process left) and scope `fr` (a frontier: waiting, leased and scheduled
 * URLs with payloads, one queue with its own politeness).
 */
async function makeStore(dir: string): Promise<void> {
  const store = await SeenStore.open(dir, { clock });
  const v = store.scope('v', { capacityUrls: 10_000_000 });
  await v.add(SEALED);
  await v.rotate();
  await v.add(OPEN);
  const fr = store.scope('fr', { capacityUrls: 10_000 }).frontier();
  await fr.configure({ delayMs: 0 });
  await store.scope('fr').enqueue(QUEUED, { data: QUEUED.map((_, i) => ({ depth: i })) });
  await fr.setDelay('q3.example', 5000);
  await fr.setCrawlLimit('q4.example', 100);
  const taken = await fr.take(30, { leaseMs: 600_000, perQueue: 3, owner: 'crawler-1' });
  assert.equal(taken.length, 30);
  await fr.done([taken[0]!.id]);
  await fr.schedule([LATER], NOW_MS + 3_600_000);
  await store.close();
  const script = `
    import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const store = await SeenStore.open(process.argv[1]);
    await store.scope('v').add([${JSON.stringify(TAIL_URL)}]);
    await store.scope('v').add([${JSON.stringify(TAIL_URL_2)}]);
    process.kill(process.pid, 'SIGKILL');`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir]);
  assert.equal(child.signal, 'SIGKILL', child.stderr.toString());
}

const PRISTINE_DIR = tempDir('seenstore-salvage-pristine-');
let pristine: Promise<void> | undefined;

/** A copy of the store makeStore made (once per file). */
async function storeCopy(): Promise<string> {
  pristine ??= makeStore(PRISTINE_DIR);
  await pristine;
  const dir = tempDir();
  cpSync(PRISTINE_DIR, dir, { recursive: true });
  return dir;
}

/** Every URL of scope `v` the old store acknowledged that the copy does not hold. */
async function missingSeen(to: string): Promise<string[]> {
  const store = await SeenStore.open(to, { readOnly: true, clock });
  try {
    const urls = [...SEALED, ...OPEN, TAIL_URL, TAIL_URL_2];
    const has = await store.scope('v').has(urls, { epochs: 'all' });
    return urls.filter((_, i) => !has[i]);
  } finally {
    await store.close();
  }
}

describe('salvage of a healthy store', () => {
  test('copies every epoch, the journal tail and every frontier URL with its state; exit 0', async () => {
    const dir = await storeCopy();
    const to = join(tempDir(), 'copy');
    const r = await runCli(['salvage', '--store', dir, '--to', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as SalvageReport;
    assert.equal(report.complete, true);
    assert.deepEqual(report.skipped, []);
    assert.equal(report.scopes, 2);
    assert.equal(report.epochs, 3);
    assert.ok(report.journalRecords >= 1, 'the journal tail of the killed process was carried');
    assert.equal(report.frontierUrls, QUEUED.length);
    assert.equal(report.leasesGivenBack, 29);
    assert.match(r.stderr, /salvaged .* complete: 2 scopes, 3 epochs/);
    assert.deepEqual(await missingSeen(to), []);
    const verify = await SeenStore.verify(to);
    assert.equal(verify.ok, true, JSON.stringify(verify.damage));

    const store = await SeenStore.open(to, { clock });
    const old = await SeenStore.open(dir, { readOnly: true, clock });
    const fr = store.scope('fr').frontier();
    const before = old.scope('fr').frontier();
    let dueNow = 0;
    for (const url of [...QUEUED, LATER]) {
      const was = await before.urlStatus(url);
      const now = await fr.urlStatus(url);
      if (was === undefined) {
        assert.equal(now, undefined, `${url} was done`);
        continue;
      }
      assert.ok(now !== undefined, `${url} lost`);
      assert.equal(now.id, was.id);
      assert.equal(now.queue, was.queue);
      assert.equal(now.state, was.state === 'leased' ? 'waiting' : was.state, url);
      assert.equal(now.attempts, was.attempts);
      // q3 was taken at NOW_MS and has its own 5 s delay: nothing of it is handed out at NOW_MS.
      if (now.state === 'waiting' && now.queue !== 'q3.example') dueNow++;
    }
    assert.equal((await fr.urlStatus(LATER))!.atMs, NOW_MS + 3_600_000);
    assert.equal((await fr.queue('q3.example'))!.delayMs, 5000);
    assert.equal((await fr.queue('q4.example'))!.crawlLimit, 100);
    assert.equal((await fr.stats()).done, 1);
    // Every URL due now comes out with its payload (the frontier's delay 0 was copied with its settings).
    const all = await fr.take(1000, { perQueue: 1000, leaseMs: 1000 });
    for (const taken of all) assert.deepEqual(taken.data, { depth: QUEUED.indexOf(taken.url) });
    assert.equal(all.length, dueNow);
    assert.ok(dueNow > 80, `${dueNow} URLs due`);
    await old.close();
    await store.close();
  });

  test("copies the runs' undelivered batches (their delivery files)", async () => {
    const dir = await storeCopy();
    const lines = [Buffer.from('https://a.example/\nhttps://b.example/\n'), Buffer.from('https://c.example/\n')];
    const file = new DeliveryFile(join(dir, DELIVERY_DIR, deliveryFileName('v', '999999.1.1', 0)));
    file.append([], { seq: 1, lines: lines[0]! });
    file.append([], { seq: 2, lines: lines[1]! });
    file.close();
    const to = join(tempDir(), 'copy');
    const report = await SeenStore.salvage(dir, to);
    assert.equal(report.complete, true, JSON.stringify(report.skipped));
    assert.equal(report.deliveryRecords, 2);
    const copied = readDeliveryFile(join(to, DELIVERY_DIR, deliveryFileName('v', '999999.1.1', 0)));
    assert.deepEqual(
      copied.batches.map((b) => Buffer.from(b.lines).toString()),
      lines.map((b) => b.toString()),
    );
  });

  test('refuses a --to that holds files, and a store directory without data.mdb', async () => {
    const dir = await storeCopy();
    const full = tempDir();
    cpSync(dir, full, { recursive: true });
    const r = await runCli(['salvage', '--store', dir, '--to', full]);
    assert.equal(r.code, 2, r.stderr);
    await assert.rejects(
      SeenStore.salvage(tempDir(), join(tempDir(), 'x')),
      (error: { code?: string }) => error.code === 'NOT_FOUND',
    );
  });
});

/** Salvages `dir` into `to`, opens the copy and checks it is a sound store. */
async function salvageChecked(dir: string, what: string, to = join(tempDir(), 'copy')): Promise<SalvageReport> {
  const report = await SeenStore.salvage(dir, to);
  assert.equal(report.complete, report.skipped.length === 0, what);
  for (const s of report.skipped)
    assert.ok(s.kind.length > 0 && s.where.length > 0 && s.problem.length > 0, `${what}: ${JSON.stringify(s)}`);
  const verify = await SeenStore.verify(to);
  assert.equal(verify.ok, true, `${what}: the copy is not sound: ${JSON.stringify(verify.damage)}`);
  const store = await SeenStore.open(to, { readOnly: true, clock });
  await store.stats();
  await store.close();
  return report;
}

function flipByte(path: string, offset: number): void {
  const fd = openSync(path, 'r+');
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, offset);
  byte[0] = byte[0]! ^ 0x7c;
  writeSync(fd, byte, 0, 1, offset);
  closeSync(fd);
}

describe('salvage of a damaged store', () => {
  test('a store open refuses: the refusal names salvage, and the copy holds every acknowledged URL (lost chunks filled with ones)', async () => {
    const dir = await storeCopy();
    const data = join(dir, 'data.mdb');
    // An overflow run of the chunks database: one chunk's record.
    const run = structuralPlaces(data).find((p) => /^overflow page \d+ \(chunks\) flags$/.test(p.what))!;
    flipByte(data, run.offset);
    const refused = await runCli(['stats', '--store', dir]);
    assert.equal(refused.code, 6, refused.stderr);
    assert.match(refused.stderr, /seenstore salvage --to NEWDIR/);
    const to = join(tempDir(), 'copy');
    const r = await runCli(['salvage', '--store', dir, '--to', to]);
    assert.equal(r.code, 20, r.stderr);
    assert.match(r.stderr, /skipped page .*\(database chunks\)/);
    assert.match(r.stderr, /skipped chunk v\/\d\/filter 0\/#\d+: its page was lost; filled with ones/);
    assert.match(r.stderr, /IN PART/);
    assert.deepEqual(await missingSeen(to), [], 'a lost chunk reads as seen, never as new');
    assert.equal((await SeenStore.verify(to)).ok, true);
  });

  test('flipped bytes at structural places: never a crash, a sound copy, each loss reported', async () => {
    const source = await storeCopy();
    const places = structuralPlaces(join(source, 'data.mdb'));
    const kinds = new Map<string, (typeof places)[number]>();
    for (const place of places) kinds.set(place.what.replace(/\d+/g, 'N'), place);
    assert.ok(
      [...kinds.keys()].some((kind) => kind.includes('child pointer')),
      'the store has branch pages',
    );
    let partial = 0;
    for (const place of kinds.values()) {
      const dir = tempDir();
      cpSync(source, dir, { recursive: true });
      flipByte(join(dir, 'data.mdb'), place.offset);
      const to = join(tempDir(), 'copy');
      const report = await salvageChecked(dir, place.what, to);
      if (!report.complete) partial++;
      // Unless an epoch header or journal record was lost, no acknowledged URL reads as new: a lost chunk is filled with ones.
      const headersOrJournal = report.skipped.some(
        (s) => /database (meta|main|journal)\)|meta pages/.test(s.where) || s.kind === 'journal',
      );
      if (!headersOrJournal)
        assert.deepEqual(await missingSeen(to), [], `${place.what}: ${JSON.stringify(report.skipped)}`);
      rmSync(dir, { recursive: true, force: true });
      rmSync(to, { recursive: true, force: true });
    }
    assert.ok(partial > 0, 'some flips lost something and said so');
  });

  test('a data file cut short, both meta pages damaged, a damaged journal frame', async () => {
    const source = await storeCopy();
    const used = walkPages(join(source, 'data.mdb')).highestUsedPage + 1;
    for (const short of [40, 1]) {
      const dir = tempDir();
      cpSync(source, dir, { recursive: true });
      truncateSync(join(dir, 'data.mdb'), (used - short) * PAGE_BYTES);
      const report = await salvageChecked(dir, `${short} pages short`);
      assert.equal(report.complete, false);
      assert.ok(
        report.skipped.some((s) => /beyond the end of the file/.test(s.problem)),
        JSON.stringify(report.skipped),
      );
    }
    const dir = tempDir();
    cpSync(source, dir, { recursive: true });
    for (const meta of [0, 1]) flipByte(join(dir, 'data.mdb'), meta * PAGE_BYTES + 24);
    const to = join(tempDir(), 'copy');
    await assert.rejects(
      SeenStore.salvage(dir, to),
      (error: { code?: string; message?: string }) =>
        error.code === 'STORE_CORRUPT' && /neither meta page/.test(error.message ?? ''),
    );
    assert.equal(existsSync(to), false, 'no copy when nothing could be read');

    // The journal file: damage a frame in the middle; the frames after it are still folded in.
    const journal = tempDir();
    cpSync(source, journal, { recursive: true });
    const log = join(journal, 'journal.log');
    const bytes = readFileSync(log);
    assert.ok(bytes.readUInt32LE(16) > 0, 'the killed process left a frame');
    flipByte(log, 16 + 40);
    const report = await salvageChecked(journal, 'a damaged journal frame');
    assert.equal(report.complete, false);
    assert.ok(
      report.skipped.some((s) => s.kind === 'journal'),
      JSON.stringify(report.skipped),
    );
  });
});
