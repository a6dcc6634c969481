import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore, type Scope } from '../src/index.js';
import { COUNTER_MAX, CountingFilter, SpectralFilter } from '../src/filters/counting.js';
import { sizeForFpr } from '../src/filters/sizing.js';
import { XxHash } from '../src/hash/xxhash.js';
import { pausedAt, startCheckpointChild } from './helpers/checkpoint-race.js';
import { runCrashChild } from './helpers/cli.js';
import { binomialUpper, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const hash = await XxHash.load();
const benign = sharedUrls('crawl-benign-35k.txt');
const benignSet = new Set(benign);
const probes = sharedUrls('crawl-sitelist-15k.txt').filter((url) => !benignSet.has(url));

function hashes(urls: readonly string[], seed: bigint): Uint32Array {
  const words = new Uint32Array(2 * urls.length);
  hash.hashKeys(urls, [seed], words, 2, 0);
  return words;
}

/** A deterministic multiplicity 1..5 per URL. */
const times = (i: number): number => 1 + (((i * 2654435761) >>> 0) % 5);

describe('counting (spectral Bloom filter)', () => {
  test('minimum selection: never below the true count, exact for most, no false negatives, FPR as a Bloom filter', () => {
    const urls = benign.slice(0, 20_000);
    const { mBits, k } = sizeForFpr(urls.length, 0.01);
    const filter = new CountingFilter(mBits, k);
    const words = hashes(urls, 0x1234n);
    urls.forEach((_, i) => {
      for (let t = 0; t < times(i); t++) filter.increment(words[2 * i + 1]!, words[2 * i]!);
    });
    let exact = 0;
    urls.forEach((_, i) => {
      const count = filter.count(words[2 * i + 1]!, words[2 * i]!);
      assert.ok(count >= times(i), `URL ${i}: count ${count} below ${times(i)}`);
      if (count === times(i)) exact++;
    });
    assert.ok(exact / urls.length > 0.95, `exact ${exact} of ${urls.length}`);
    const probeWords = hashes(probes, 0x1234n);
    const present = probes.filter((_, i) => filter.count(probeWords[2 * i + 1]!, probeWords[2 * i]!) > 0).length;
    assert.ok(present <= binomialUpper(probes.length, 0.01), `${present} false positives of ${probes.length}`);
  });

  test('recurring minimum: membership never false-negative, counts at least as exact as minimum selection alone', () => {
    const urls = benign.slice(0, 20_000);
    const { mBits, k } = sizeForFpr(urls.length, 0.05);
    const spectral = SpectralFilter.create(mBits, k, Math.ceil(mBits / 4));
    const plain = new CountingFilter(mBits, k);
    const words = hashes(urls, 0x99n);
    urls.forEach((_, i) => {
      for (let t = 0; t < times(i); t++) {
        spectral.add(words[2 * i + 1]!, words[2 * i]!);
        plain.increment(words[2 * i + 1]!, words[2 * i]!);
      }
    });
    let exactRm = 0;
    let exactMs = 0;
    urls.forEach((_, i) => {
      const rm = spectral.count(words[2 * i + 1]!, words[2 * i]!);
      assert.ok(rm > 0, 'no false negatives');
      if (rm === times(i)) exactRm++;
      if (plain.count(words[2 * i + 1]!, words[2 * i]!) === times(i)) exactMs++;
    });
    assert.ok(exactRm >= exactMs, `recurring minimum exact ${exactRm}, minimum selection ${exactMs}`);
  });

  test('delete takes back exactly what add gave; the remaining URLs keep their counts', () => {
    const urls = benign.slice(0, 10_000);
    const { mBits, k } = sizeForFpr(urls.length, 0.001);
    const spectral = SpectralFilter.create(mBits, k, Math.ceil(mBits / 4));
    const words = hashes(urls, 0x77n);
    urls.forEach((_, i) => spectral.add(words[2 * i + 1]!, words[2 * i]!));
    const kept = new Set<number>();
    urls.forEach((_, i) => {
      if (i % 2 === 0) assert.ok(spectral.delete(words[2 * i + 1]!, words[2 * i]!));
      else kept.add(i);
    });
    let stillPresent = 0;
    urls.forEach((_, i) => {
      const count = spectral.count(words[2 * i + 1]!, words[2 * i]!);
      if (kept.has(i)) assert.ok(count >= 1, `kept URL ${i} lost`);
      else if (count > 0) stillPresent++;
    });
    // A deleted URL still reads present only through collisions, at about the filter's FPR.
    assert.ok(stillPresent <= binomialUpper(urls.length / 2, 0.001), `${stillPresent} deleted URLs still present`);
    // Deleting a URL whose count is zero changes nothing.
    const probeWords = hashes(probes, 0x77n);
    const absent = probes.findIndex((_, i) => spectral.count(probeWords[2 * i + 1]!, probeWords[2 * i]!) === 0);
    const before = Buffer.from(spectral.primary.counters);
    assert.equal(spectral.delete(probeWords[2 * absent + 1]!, probeWords[2 * absent]!), false);
    assert.deepEqual(Buffer.from(spectral.primary.counters), before);
  });

  test('counters saturate at 255 and stay there: never wrap, never drop below the truth by deletion', () => {
    const filter = new CountingFilter(1024, 4);
    for (let i = 0; i < 300; i++) filter.increment(7, 11);
    assert.equal(filter.count(7, 11), COUNTER_MAX);
    for (let i = 0; i < 10; i++) filter.decrement(7, 11);
    assert.equal(filter.count(7, 11), COUNTER_MAX, 'a saturated counter no longer knows the truth: it stays');
    assert.ok(Math.max(...filter.counters) <= COUNTER_MAX);
  });

  test('a hash whose positions repeat (a short period of the double-hashing step) still counts once per add', () => {
    // Found by the soak: with m = 4096 counters and step m / 4, the 8 positions visit 4 cells
    // twice; counted per position, one add read as 2. Epochs of xxh64-km-v1 still hash that way.
    const v1 = new CountingFilter(4096, 8, { scheme: 'xxh64-km-v1' });
    const hi = 4096 / 4 - 1; // step = 1 + (hi mod (m - 1)) = 1024: period 4
    v1.increment(hi, 5);
    assert.equal(v1.count(hi, 5), 1);
    assert.equal(v1.nonZero, 4, 'four distinct counters');
    assert.equal(
      v1.counters.reduce((sum, c) => sum + c, 0),
      4,
    );
    v1.decrement(hi, 5);
    assert.equal(v1.count(hi, 5), 0);
    assert.equal(v1.nonZero, 0);
    // Under v2 a repeat is rare and anywhere: hi = 1358 gives 5 1364 2724 4086 1355 2724 2 1382.
    const v2 = new CountingFilter(4096, 8, { scheme: 'xxh64-km-v2' });
    v2.increment(1358, 5);
    assert.equal(v2.count(1358, 5), 1);
    assert.equal(v2.nonZero, 7, 'seven distinct counters');
    assert.equal(v2.counters[2724], 1);
    v2.decrement(1358, 5);
    assert.equal(v2.nonZero, 0);
  });

  test('the same operations in the same order give the same bytes (what journal replay relies on)', () => {
    const urls = benign.slice(0, 5_000);
    const words = hashes(urls, 5n);
    const run = (): SpectralFilter => {
      const f = SpectralFilter.create(40_000, 5, 10_000);
      urls.forEach((_, i) => {
        f.add(words[2 * i + 1]!, words[2 * i]!);
        if (i % 3 === 0) f.delete(words[2 * i + 1]!, words[2 * i]!);
      });
      return f;
    };
    const a = run();
    const b = run();
    assert.deepEqual(a.primary.counters, b.primary.counters);
    assert.deepEqual(a.secondary.counters, b.secondary.counters);
  });
});

describe('the counting strategy in the store', () => {
  test('counts survive reopen exactly; delete takes one back; export and import keep the counts; merge is refused', async () => {
    const dir = tempDir();
    const urls = benign.slice(0, 10_000);
    let store = await SeenStore.open(dir);
    const scope = store.scope('counts', { strategy: 'counting', capacityUrls: 20_000, fprTarget: 0.001 });
    for (let round = 1; round <= 5; round++) await scope.add(urls.filter((_, i) => times(i) >= round));
    const before = await scope.count(urls);
    const exact = before.filter((n, i) => n === times(i)).length;
    assert.ok(exact / urls.length > 0.99, `exact ${exact} of ${urls.length}`);
    assert.ok(
      before.every((n) => n > 0),
      'no false negatives',
    );
    const stats = (await scope.stats()).epochs[0]!;
    assert.equal(stats.strategy, 'counting');
    // New = count 0 before the first add: a URL that is a false positive then is not new (rare at
    // this fill: about 0.03 expected), so allow a few.
    assert.ok(stats.added <= urls.length && stats.added >= urls.length - 5, `added ${stats.added}`);
    assert.equal(
      stats.submitted,
      urls.reduce((sum, _, i) => sum + times(i), 0),
    );
    const present = (await scope.has(probes)).filter(Boolean).length;
    assert.ok(present <= binomialUpper(probes.length, 0.001), `${present} false positives of ${probes.length}`);
    await store.close();

    store = await SeenStore.open(dir);
    const again = store.scope('counts');
    assert.deepEqual(await again.count(urls), before, 'the same counts after reopen (checkpointed on close)');
    assert.equal(await again.delete(urls.slice(0, 1_000)), 1_000);
    const afterDelete = await again.count(urls.slice(0, 1_000));
    assert.ok(afterDelete.filter((n, i) => n === before[i]! - 1).length > 990, 'one occurrence fewer');
    assert.ok((await store.verify()).ok);
    const file = join(dir, 'counts.ssx');
    await again.export(file);
    await store.import(file, { scope: 'copy' });
    assert.deepEqual(await store.scope('copy').count(urls, { epochs: 1 }), await again.count(urls));
    await expectCode('INCOMPATIBLE', () => again.merge([file]));
    await expectCode('USAGE', () =>
      store
        .scope('plain')
        .add(['http://a/'])
        .then(() => store.scope('plain').count(['http://a/'])),
    );
    await store.close();
  });

  for (const point of ['add:before-commit', 'add:after-commit', 'checkpoint:before-trim', 'checkpoint:after-trim']) {
    test(`kill -9 at ${point}: every acknowledged add counted exactly once, also after a second replay`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      const urls = benign.slice(0, 20_000);
      writeFileSync(file, `${urls.join('\n')}\n`);
      const env = { CHILD_CAPACITY: '1000000', CHILD_STRATEGY: 'counting' };
      const crashed = await runCrashChild([dir, 'default', file, '5000', point, 'checkpoint-each'], env);
      assert.equal(crashed.signal, 'SIGKILL', `${point} was never reached`);
      const check = async (): Promise<void> => {
        const store = await SeenStore.open(dir, { lockStaleMs: 2_000 });
        const counts = await store.scope().count(urls);
        const acked = crashed.acked * 5000;
        assert.ok(
          counts.slice(0, acked).every((n) => n === 1),
          'an acknowledged URL is lost or counted twice',
        );
        // The batch in flight is all there or not at all, each URL once.
        const inFlight = counts.slice(acked, acked + 5000);
        assert.ok(
          inFlight.every((n) => n === inFlight[0]) && inFlight[0]! <= 1,
          `in-flight batch counted ${[...new Set(inFlight)].join(',')}`,
        );
        assert.ok(counts.slice(acked + 5000).every((n) => n === 0));
        assert.ok((await store.verify()).ok);
        await store.close();
      };
      await check();
      await check();
    });
  }

  // This process loads its copy of the epoch. Between reading the chunks and replaying the journal
  // after them (the fault point), another process adds two batches, checkpoints them (they leave
  // the journal file) and adds one more. A replay that saw the chunks of one moment and the
  // journal of another took the two batches for lost and went on without them: missing from a
  // counting copy (and from the chunks its next checkpoint writes), from a Bloom copy loaded
  // whole (threads: 2) and from every copy's counts. The load now catches up inside its write
  // transaction, checkpoint first.
  for (const [strategy, threads] of [
    ['counting', 1],
    ['classic', 2],
    ['classic', 1],
  ] as const) {
    test(`a copy loaded while another process checkpoints and compacts keeps every batch of it (${strategy}, threads ${threads})`, async () => {
      const dir = tempDir();
      const signals = tempDir();
      const size = 100;
      const urls = benign.slice(0, 6 * size);
      const batch = (n: number): string[] => urls.slice(n * size, (n + 1) * size);
      const file = join(signals, 'urls.txt');
      writeFileSync(file, `${urls.slice(size, 5 * size).join('\n')}\n`);
      const options = { checkpointJournalBytes: 2 ** 40, checkpointIntervalMs: 2 ** 40, threads };
      const first = await SeenStore.open(dir, options);
      await first.scope('s', { capacityUrls: 10_000, fprTarget: 1e-6, strategy }).add(batch(0));
      await first.close();
      const child = startCheckpointChild(dir, 's', file, signals);
      const store = await SeenStore.open(dir, options);
      const held = async (scope: Scope, n: number): Promise<number> =>
        (strategy === 'counting'
          ? (await scope.count(urls.slice(0, n * size))).filter((c) => c === 1)
          : (await scope.has(urls.slice(0, n * size))).filter(Boolean)
        ).length;
      try {
        await child.appeared('ready');
        const scope = store.scope('s');
        assert.ok(
          await pausedAt('load:before-replay', signals, () => scope.has(batch(0))),
          'the test did not reach its fault point',
        );
        await child.appeared('done');
        // Only now may the child close (its close checkpoints, which would make this copy reload).
        assert.equal(await child.finish(), 0);
        assert.equal(await held(scope, 5), 5 * size, "a batch the child added is missing from this process's copy");
        assert.equal((await scope.stats()).epochs[0]!.submitted, 5 * size, "the copy's counts miss a batch");
        await scope.add(batch(5));
        await scope.checkpoint();
      } finally {
        child.kill();
        await store.close();
      }
      const reopened = await SeenStore.open(dir, options);
      try {
        assert.equal(
          await held(reopened.scope('s'), 6),
          6 * size,
          "a batch is missing from the store after this process's checkpoint",
        );
        assert.equal((await reopened.scope('s').stats()).epochs[0]!.submitted, 6 * size);
      } finally {
        await reopened.close();
      }
    });
  }

  test('two processes adding the same URLs with checkpoints racing: every URL counted exactly twice', async () => {
    const dir = tempDir();
    const file = join(dir, 'urls.txt');
    const urls = benign.slice(0, 20_000);
    writeFileSync(file, `${urls.join('\n')}\n`);
    const env = { CHILD_CAPACITY: '1000000', CHILD_STRATEGY: 'counting' };
    const runs = await Promise.all(
      [0, 1].map(() => runCrashChild([dir, 'default', file, '1000', 'none', 'checkpoint-each'], env)),
    );
    assert.ok(runs.every((run) => run.done));
    const store = await SeenStore.open(dir);
    const counts = await store.scope().count(urls);
    const wrong = counts.filter((n) => n !== 2).length;
    assert.equal(wrong, 0, `${wrong} URLs not counted exactly twice`);
    assert.equal((await store.scope().stats()).epochs[0]!.submitted, 40_000);
    await store.close();
  });
});
