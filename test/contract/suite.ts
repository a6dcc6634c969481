import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore, type SeenStoreOptions } from '../../src/index.js';
import { ROOT, binomialLower, binomialUpper, sharedUrls } from '../helpers/data.js';
import { expectCode } from '../helpers/errors.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The behaviour of SeenStore and Scope that does not depend on where the bits live, written once
 * and run against every backend (in the manner of abstract-level's test suite): a backend's test
 * file calls `contractSuite` with a factory of fresh, empty store locations. What only one backend
 * does (kill -9 at named points, snapshots, migrations, frozen fixtures, verify) is tested beside it.
 */
export interface BackendFactory {
  /** The backend's name, in the suite's title. */
  readonly name: string;
  /** A location (directory, redis:// URL) of a fresh, empty store. */
  readonly location: () => Promise<string>;
  /** Options every open of this backend takes. */
  readonly options?: SeenStoreOptions;
  /**
   * How `take` orders what it hands out: oldest first over the whole frontier (LMDB), or oldest
   * first within each partition with the partitions in turn (Redis: one stream per partition of a
   * partitioned epoch, docs/frontier.md "On Redis").
   */
  readonly frontierOrder?: 'oldest-first' | 'per-partition';
}

/** The library's own entry, for child processes. */
const CHILD = join(ROOT, 'dist', 'test', 'contract', 'child.js');

/** Sized so that a false positive is all but impossible: answers can be compared exactly. */
const EXACT = { capacityUrls: 200_000, fprTarget: 1e-9 } as const;

export function contractSuite(factory: BackendFactory): void {
  const open = async (location?: string): Promise<{ store: SeenStore; location: string }> => {
    const where = location ?? (await factory.location());
    return { store: await SeenStore.open(where, factory.options ?? {}), location: where };
  };
  const urls = sharedUrls('crawl-sitelist-15k.txt');
  const others = sharedUrls('crawl-benign-35k.txt');
  const oldestFirst = (factory.frontierOrder ?? 'oldest-first') === 'oldest-first';
  /** `taken` are the first of `queued` to be handed out: exactly them in order (oldest first), else as many, all distinct, all queued. */
  const takenFirst = (taken: readonly string[], queued: readonly string[], message: string): void => {
    if (oldestFirst) {
      assert.deepEqual(taken, queued.slice(0, taken.length), message);
      return;
    }
    assert.equal(new Set(taken).size, taken.length, message);
    assert.ok(taken.every((url) => queued.includes(url)), message);
  };
  /** The same URLs, in order where the backend orders the whole frontier. */
  const sameTaken = (actual: readonly string[], expected: readonly string[], message: string): void => {
    assert.deepEqual(oldestFirst ? actual : [...actual].sort(), oldestFirst ? expected : [...expected].sort(), message);
  };

  describe(`storage contract: ${factory.name}`, () => {
    test('add-if-absent: new exactly once, duplicates within a call new once, never a false negative', async () => {
      const { store } = await open();
      try {
        const scope = store.scope('s', EXACT);
        const input = [...urls.slice(0, 5_000), ...urls.slice(0, 100)];
        const first = await scope.addIfAbsent(input);
        assert.equal(first.filter(Boolean).length, 5_000);
        assert.ok(first.slice(5_000).every((fresh) => !fresh), 'a duplicate within the call was new twice');
        const again = await scope.addIfAbsent(urls.slice(0, 6_000));
        assert.equal(again.slice(0, 5_000).filter(Boolean).length, 0, 'a URL was new twice');
        assert.equal(again.slice(5_000).filter(Boolean).length, 1_000);
        assert.ok((await scope.has(urls.slice(0, 6_000))).every(Boolean), 'a false negative');
        assert.equal((await scope.stats()).epochs[0]!.added, 6_000);
      } finally {
        await store.close();
      }
    });

    test('several processes on overlapping inputs: every URL reported new by exactly one of them', async () => {
      const location = await factory.location();
      const dir = tempDir('seenstore-contract-');
      const all = urls.slice(0, 9_000);
      // Three processes, each with two thirds of the URLs in an order of its own: every URL is offered twice.
      const thirds = [0, 1, 2].map((p) => all.filter((_, i) => i % 3 !== p));
      const inputs = [thirds[0]!, [...thirds[1]!].reverse(), [...thirds[2]!.filter((_, i) => i % 2 === 1), ...thirds[2]!.filter((_, i) => i % 2 === 0)]];
      const files = inputs.map((input, p) => {
        const file = join(dir, `input-${p}.txt`);
        writeFileSync(file, `${input.join('\n')}\n`);
        return file;
      });
      const printed = await Promise.all(files.map((file) => runChild(location, file, factory.options ?? {})));
      const seen = new Map<string, number>();
      for (const lines of printed) for (const url of lines) seen.set(url, (seen.get(url) ?? 0) + 1);
      assert.equal(seen.size, all.length, 'some URL was never reported new');
      const twice = [...seen].filter(([, n]) => n > 1);
      assert.deepEqual(twice, [], 'URLs reported new by more than one process');
    });

    test('rotation: fresh seeds, capacity sized from the previous epoch, membership over epochs with any and all', async () => {
      const { store } = await open();
      try {
        const scope = store.scope('s', EXACT);
        await scope.add(urls.slice(0, 4_000));
        const rotated = await scope.rotate();
        assert.equal(rotated.sealed.epoch, 1);
        assert.equal(rotated.sealed.state, 'sealed');
        assert.equal(rotated.sealed.added, 4_000);
        assert.equal(rotated.opened.epoch, 2);
        assert.equal(rotated.opened.sizing.policy, 'history-v1');
        assert.ok(rotated.opened.capacityUrls >= 4_000, `capacity ${rotated.opened.capacityUrls} is below what epoch 1 held`);
        const one = await scope.epoch(1);
        assert.notDeepEqual(rotated.opened.sliceDetails[0]!.seeds, one.sliceDetails[0]!.seeds, 'the new epoch hashes with the old seeds');
        await scope.add(urls.slice(2_000, 6_000));
        const probe = urls.slice(0, 8_000);
        const any = await scope.has(probe, { epochs: 'all', mode: 'any' });
        const both = await scope.has(probe, { epochs: 'all', mode: 'all' });
        const current = await scope.has(probe);
        probe.forEach((_, i) => {
          assert.equal(any[i], i < 6_000, `any, URL ${i}`);
          assert.equal(both[i], i >= 2_000 && i < 4_000, `all, URL ${i}`);
          assert.equal(current[i], i >= 2_000 && i < 6_000, `current, URL ${i}`);
        });
        const classes = await scope.classify(probe.slice(3_000, 5_000));
        assert.deepEqual(classes, probe.slice(3_000, 5_000).map((_, i) => (3_000 + i < 4_000 ? 'revisit' : 'new')));
        const diff = await scope.diff(probe, 1, 2);
        assert.deepEqual(diff.counts, { both: 2_000, 'only-from': 2_000, 'only-to': 2_000, neither: 2_000 });
      } finally {
        await store.close();
      }
    });

    test('rotation gives fresh seeds and independent false positives; `all` over two epochs measures about p^2', async () => {
      const benign = new Set(others);
      const probes = urls.filter((url) => !benign.has(url));
      const positives = (answers: readonly boolean[]): Set<number> => new Set(answers.flatMap((seen, i) => (seen ? [i] : [])));
      const { store } = await open();
      try {
        // A deliberately small filter: 10,000 URLs at a 10 % target, so the first slice runs at ~5 %.
        const scope = store.scope('temporal', { capacityUrls: 10_000, fprTarget: 0.1 });
        const inserted = others.slice(0, 10_000);
        await scope.add(inserted);
        const first = positives(await scope.has(probes));
        const rotation = await scope.rotate({ capacityUrls: 10_000 });
        await scope.add(inserted);
        const second = positives(await scope.has(probes));
        const one = await scope.epoch(1);
        assert.notDeepEqual(one.sliceDetails[0]!.seeds, (await scope.epoch(2)).sliceDetails[0]!.seeds);
        assert.equal(rotation.opened.sliceDetails[0]!.mBits, one.sliceDetails[0]!.mBits, 'same geometry, new seeds');
        const n = probes.length;
        const [p1, p2] = [first.size / n, second.size / n];
        for (const p of [p1, p2]) assert.ok(p > 0.03 && p < 0.075, `per-epoch FPR ${p}`);
        const overlap = [...first].filter((i) => second.has(i)).length;
        // Independent seeds: the overlap is binomial(n, p1 * p2); with equal seeds it would be all of it.
        assert.ok(overlap <= binomialUpper(n, p1 * p2), `overlap ${overlap}, expected ~${(n * p1 * p2).toFixed(1)}`);
        assert.ok(overlap >= binomialLower(n, p1 * p2), `overlap ${overlap}, expected ~${(n * p1 * p2).toFixed(1)}`);
        const both = (await scope.has(probes, { epochs: { last: 2 }, mode: 'all' })).filter(Boolean).length;
        assert.equal(both, overlap);
        assert.ok(both / n < p1 / 4, `'all' over two epochs: ${both / n} vs one epoch ${p1}`);
        assert.ok((await scope.has(inserted, { epochs: 'all', mode: 'all' })).every(Boolean), 'no false negatives in either epoch');
        // `any` over both epochs is the union of each epoch's positives.
        const either = positives(await scope.has(probes, { epochs: 'all', mode: 'any' }));
        assert.deepEqual([...either].sort((a, b) => a - b), [...new Set([...first, ...second])].sort((a, b) => a - b));
      } finally {
        await store.close();
      }
    });

    test('growth past capacity keeps the false-positive promise', async () => {
      const { store } = await open();
      try {
        const fprTarget = 0.01;
        const scope = store.scope('s', { capacityUrls: 1_000, fprTarget });
        await scope.add(urls.slice(0, 12_000));
        const stats = (await scope.stats()).epochs[0]!;
        assert.ok(stats.slices >= 3, `only ${stats.slices} slices for 12x the capacity`);
        const probes = others.slice(0, 20_000);
        const positives = (await scope.has(probes)).filter(Boolean).length;
        assert.ok(positives <= binomialUpper(probes.length, fprTarget), `${positives} false positives among ${probes.length} (target ${fprTarget})`);
        assert.ok((await scope.has(urls.slice(0, 12_000))).every(Boolean), 'a false negative after growth');
      } finally {
        await store.close();
      }
    });

    test('prune keeps what it is told to, and the dropped epochs are gone', async () => {
      const { store } = await open();
      try {
        const scope = store.scope('s', EXACT);
        for (let n = 0; n < 3; n++) {
          await scope.add(urls.slice(n * 1_000, (n + 1) * 1_000));
          await scope.rotate();
        }
        const dropped = await scope.prune({ keepLast: 2 });
        assert.deepEqual(dropped.map((d) => d.epoch), [1, 2]);
        assert.deepEqual((await scope.stats()).epochs.map((e) => e.epoch), [3, 4]);
        await expectCode('NOT_FOUND', () => scope.epoch(1));
        const inThree = await scope.has(urls.slice(2_000, 3_000), { epochs: 3 });
        assert.ok(inThree.every(Boolean));
      } finally {
        await store.close();
      }
    });

    test('export and import: the imported epoch answers exactly as the exported one, into another store', async () => {
      const { store } = await open();
      const target = await open();
      const file = join(tempDir('seenstore-contract-'), 'epoch.ssx');
      try {
        const scope = store.scope('s', { capacityUrls: 5_000, fprTarget: 0.01 });
        await scope.add(urls.slice(0, 8_000));
        await scope.export(file);
        const imported = await target.store.import(file, { scope: 'copy' });
        assert.equal(imported.imported, 1);
        assert.equal(imported.openEpoch, 2);
        const probes = [...urls.slice(0, 8_000), ...others.slice(0, 8_000)];
        assert.deepEqual(await target.store.scope('copy').has(probes, { epochs: 1 }), await scope.has(probes));
        await expectCode('USAGE', () => target.store.import(file, { scope: 'copy' }));
      } finally {
        await store.close();
        await target.store.close();
      }
    });

    test('merge: exports of a crawler sharing the seeds are ORed into the open epoch; other seeds are refused', async () => {
      const { store } = await open();
      const dir = tempDir('seenstore-contract-');
      try {
        const a = store.scope('a', EXACT);
        await a.add(urls.slice(0, 3_000));
        const seeds = (await a.epoch(1)).sliceDetails[0]!.seeds;
        const b = store.scope('b', { ...EXACT, seeds });
        await b.add(urls.slice(3_000, 6_000));
        await b.export(join(dir, 'b.ssx'));
        const merged = await a.merge([join(dir, 'b.ssx')], 1);
        assert.ok(merged.estimatedNewUrls > 2_500 && merged.estimatedNewUrls < 3_500, `estimated ${merged.estimatedNewUrls} new`);
        assert.ok((await a.has(urls.slice(0, 6_000))).every(Boolean));
        const c = store.scope('c', EXACT);
        await c.add(urls.slice(6_000, 7_000));
        await c.export(join(dir, 'c.ssx'));
        await expectCode('INCOMPATIBLE', () => a.merge([join(dir, 'c.ssx')]));
      } finally {
        await store.close();
      }
    });

    test('counting epochs count and delete; other epochs refuse to', async () => {
      const { store } = await open();
      try {
        const scope = store.scope('counts', { strategy: 'counting', capacityUrls: 10_000 });
        const url = urls[0]!;
        await scope.add([url, url, url, urls[1]!]);
        assert.deepEqual(await scope.count([url, urls[1]!, urls[2]!]), [3, 1, 0]);
        assert.equal(await scope.delete([url, urls[2]!]), 1);
        assert.deepEqual(await scope.count([url]), [2]);
        const plain = store.scope('plain', EXACT);
        await plain.add([url]);
        await expectCode('USAGE', () => plain.count([url]));
        await expectCode('USAGE', () => plain.delete([url]));
      } finally {
        await store.close();
      }
    });

    test('keys: URLs by default (trimmed, others INVALID_URL), raw any string; recorded in the header, kept by rotation and reopening', async () => {
      const { store, location } = await open();
      try {
        const urlScope = store.scope('u', EXACT);
        await expectCode('INVALID_URL', () => urlScope.addIfAbsent([urls[0]!, 'not a url at all']));
        assert.deepEqual(await urlScope.addIfAbsent([urls[0]!, `  ${urls[0]!}\t`]), [true, false]);
        const raw = store.scope('r', { ...EXACT, keys: 'raw' });
        assert.deepEqual(await raw.addIfAbsent(['not a url at all', ' not a url at all']), [true, true]);
        await urlScope.rotate();
        await raw.rotate();
      } finally {
        await store.close();
      }
      const { store: again } = await open(location);
      try {
        assert.deepEqual((await again.scope('u').stats()).epochs.map((e) => e.normalize), ['url', 'url']);
        assert.deepEqual((await again.scope('r').stats()).epochs.map((e) => e.normalize), ['none', 'none']);
        await expectCode('INVALID_URL', () => again.scope('u').addIfAbsent(['/relative/path']));
        assert.deepEqual(await again.scope('r').addIfAbsent(['/relative/path']), [true]);
        assert.deepEqual(await again.scope('u').has([` ${urls[0]!}`], { epochs: 'all' }), [true]);
      } finally {
        await again.close();
      }
    });

    test('frontier: discovery exactly once, leases that run out, done and release, queued URLs kept across rotation', async () => {
      const { store } = await open();
      try {
        const scope = store.scope('f', EXACT);
        const input = [...urls.slice(0, 1_000), ...urls.slice(0, 200)];
        assert.equal((await scope.enqueue(input)).filter(Boolean).length, 1_000);
        assert.equal((await scope.enqueue(urls.slice(0, 1_000))).filter(Boolean).length, 0, 'a URL was queued twice');
        const frontier = scope.frontier();
        // A short lease, but longer than the two takes below take on a loaded machine (over 64
        // partition streams on Redis): a lease that ran out meanwhile would hand its URL out again, rightly.
        const short = await frontier.take(300, { leaseMs: 1_500 });
        assert.equal(short.length, 300);
        takenFirst(short.map((entry) => entry.url), urls.slice(0, 1_000), 'not taken oldest first');
        assert.ok(short.every((entry) => entry.attempts === 1 && entry.epoch === 1));
        const [rest, none] = await Promise.all([frontier.take(1_000, { leaseMs: 60_000 }), frontier.take(1_000, { leaseMs: 60_000 })]);
        assert.equal(rest.length + none.length, 700, 'two takes handed out one URL twice, or lost one');
        assert.equal(new Set([...short, ...rest, ...none].map((entry) => entry.id)).size, 1_000);
        assert.deepEqual(await frontier.take(10), [], 'a leased URL was taken again before its lease ran out');
        await new Promise((resolve) => setTimeout(resolve, 1_600));
        const retried = await frontier.take(1_000, { leaseMs: 60_000 });
        sameTaken(retried.map((entry) => entry.url), short.map((entry) => entry.url), 'URLs whose lease ran out did not come back');
        assert.ok(retried.every((entry) => entry.attempts === 2));
        const finished = [...rest, ...none].map((entry) => entry.id);
        assert.equal(await frontier.done(finished), 700);
        assert.equal(await frontier.done(finished), 0, 'a URL was finished twice');
        assert.equal(await frontier.release(retried.map((entry) => entry.id)), 300);
        assert.deepEqual(await frontier.stats(), { pending: 300, leased: 0, done: 700 });
        await scope.rotate();
        assert.deepEqual(await frontier.stats(), { pending: 300, leased: 0, done: 700 }, 'rotation changed the frontier');
        await expectCode('USAGE', () => frontier.take(0));
        await expectCode('USAGE', () => frontier.done(['not-an-id']));
      } finally {
        await store.close();
      }
    });

    test('frontier: payloads kept with queued URLs and replaced by release; an owner takes back its own leases at once', async () => {
      const { store } = await open();
      try {
        const scope = store.scope('p', EXACT);
        const queued = urls.slice(0, 4);
        const data = queued.map((url, i) => ({ label: i % 2 === 0 ? 'list' : 'detail', depth: i, from: url }));
        assert.deepEqual(await scope.enqueue(queued, { data }), [true, true, true, true]);
        const frontier = scope.frontier();
        const first = await frontier.take(4, { leaseMs: 60_000, owner: 'crawler-1' });
        assert.deepEqual(first.map((entry) => entry.data).sort((x, y) => (x as { depth: number }).depth - (y as { depth: number }).depth), data);
        const firstData = first[0]!.data as (typeof data)[number];
        assert.equal(await frontier.release([first[0]!.id], [{ ...firstData, retries: 1 }]), 1);
        const retried = await frontier.take(4, { leaseMs: 60_000 });
        assert.deepEqual(retried.map((entry) => entry.data), [{ ...firstData, retries: 1 }]);
        // crawler-1 "died" holding three leases: its successor takes them back without waiting.
        assert.equal(await frontier.reclaim('crawler-1'), 3);
        assert.equal(await frontier.reclaim('crawler-1'), 0);
        const back = await frontier.take(10, { leaseMs: 60_000, owner: 'crawler-2' });
        sameTaken(back.map((entry) => entry.url), first.slice(1).map((entry) => entry.url), 'the reclaimed leases did not come back');
        await expectCode('USAGE', () => scope.enqueue(['https://a.example/'], { data: [] }));
        await expectCode('USAGE', () => scope.enqueue(['https://a.example/'], { data: ['x'.repeat(70_000)] }));
        await expectCode('USAGE', () => frontier.take(1, { owner: 'bad owner' }));
        assert.deepEqual(await scope.has(['https://a.example/']), [false], 'a refused enqueue recorded its URL');
      } finally {
        await store.close();
      }
    });

    test('every documented error code that does not depend on the backend is reachable', async () => {
      const { store } = await open();
      const dir = tempDir('seenstore-contract-');
      try {
        const scope = store.scope('s', EXACT);
        await expectCode('USAGE', () => scope.has(['x'], { mode: 'some' as 'any' }));
        await expectCode('USAGE', () => store.scope('-bad'));
        await expectCode('NOT_FOUND', () => scope.epoch(1));
        await expectCode('INVALID_URL', () => scope.addIfAbsent([urls[0]!, '']));
        assert.deepEqual(await store.scopeNames(), [], 'a refused batch created its scope');
        assert.deepEqual(await scope.has([urls[0]!]), [false], 'a refused batch recorded a URL');
        await scope.add(urls.slice(0, 10));
        await expectCode('NOT_FOUND', () => scope.epoch(7));
        await scope.rotate();
        await expectCode('EPOCH_SEALED', () => scope.add(urls.slice(10, 20), { epoch: 1 }));
        await expectCode('EPOCH_SEALED', () => scope.merge([join(dir, 'none.ssx')], 1));
        await expectCode('CAPACITY_EXCEEDED', () => store.scope('huge', { capacityUrls: 1e13, fprTarget: 1e-12 }).add(['https://a.example/']));
        const file = join(dir, 'e.ssx');
        await scope.export(file);
        const bytes = readFileSync(file);
        bytes[bytes.length - 3]! ^= 0xff;
        writeFileSync(join(dir, 'damaged.ssx'), bytes);
        await expectCode('STORE_CORRUPT', () => store.import(join(dir, 'damaged.ssx'), { scope: 'damaged' }));
        assert.deepEqual((await store.scopeNames()).includes('damaged'), false, 'a damaged file imported something');
        const aborted = new AbortController();
        aborted.abort();
        await expectCode('INTERRUPTED', () => store.import(file, { scope: 'stopped', signal: aborted.signal }));
        assert.deepEqual((await store.scopeNames()).includes('stopped'), false, 'an interrupted import left a scope');
      } finally {
        await store.close();
      }
    });

    test('every operation on a closed store fails with STORE_CLOSED', async () => {
      const { store } = await open();
      const scope = store.scope('s', EXACT);
      await scope.add(urls.slice(0, 10));
      await store.close();
      await store.close();
      const calls: [string, () => unknown][] = [
        ['scope', () => store.scope('t')],
        ['scopeNames', () => store.scopeNames()],
        ['stats', () => store.stats()],
        ['import', () => store.import('x.ssx')],
        ['addIfAbsent', () => scope.addIfAbsent(['https://a.example/'])],
        ['add', () => scope.add(['https://a.example/'])],
        ['has', () => scope.has(['https://a.example/'])],
        ['count', () => scope.count(['https://a.example/'])],
        ['classify', () => scope.classify(['https://a.example/'])],
        ['diff', () => scope.diff(['https://a.example/'], 1, 1)],
        ['rotate', () => scope.rotate()],
        ['prune', () => scope.prune({ keepLast: 1 })],
        ['export', () => scope.export('x.ssx')],
        ['merge', () => scope.merge(['x.ssx'])],
        ['stats', () => scope.stats()],
        ['epoch', () => scope.epoch(1)],
        ['openEpoch', () => scope.openEpoch()],
        ['checkpoint', () => scope.checkpoint()],
        ['enqueue', () => scope.enqueue(['https://a.example/'])],
        ['frontier', () => scope.frontier()],
      ];
      for (const [name, call] of calls) {
        const error = await expectCode('STORE_CLOSED', call);
        assert.ok(error.message.length > 0, name);
      }
    });
  });
}

/** Runs the contract's child process: adds FILE's URLs to scope `s` in batches, prints the new ones. */
function runChild(location: string, file: string, options: SeenStoreOptions): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, location, file, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.split('\n').filter((line) => line.length > 0)) : reject(new Error(`contract child exited ${code}: ${err}`))));
  });
}
