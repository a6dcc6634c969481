import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { setFaultHook } from '../src/store/faults.js';
import { runCli } from './helpers/cli.js';
import { allSharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const urls = allSharedUrls();

interface Run {
  readonly added: boolean[];
  readonly probes: boolean[];
  readonly fill: number;
  readonly seeds: readonly string[];
}

/** Adds `batches` to a new scope of `strategy` (with `seeds` when given) and probes held-out URLs. */
async function run(
  threads: number,
  strategy: string,
  batches: readonly string[][],
  seeds?: readonly string[],
): Promise<Run> {
  const store = await SeenStore.open(tempDir(), { threads });
  const scope = store.scope('t', {
    capacityUrls: 40_000,
    fprTarget: 0.01,
    strategy,
    ...(seeds === undefined ? {} : { seeds }),
  });
  const added: boolean[] = [];
  for (const batch of batches) added.push(...(await scope.addIfAbsent(batch)));
  const probes = await scope.has(urls.slice(40_000));
  const details = await scope.epoch(1);
  await store.close();
  return { added, probes, fill: details.fillRatio, seeds: details.sliceDetails[0]!.seeds };
}

/** Batches with URLs repeated inside a batch and across batches, and non-ASCII URLs. */
function batchesWithRepeats(): string[][] {
  const inserted = [...urls.slice(0, 30_000), 'https://例え.テスト/パス?q=ü', 'https://x.example/😀'];
  return [
    inserted.slice(0, 10_000),
    [...inserted.slice(10_000, 13_000), ...inserted.slice(12_000, 12_500), ...inserted.slice(0, 100)],
    inserted.slice(13_000),
  ];
}

describe('threads (a bit thread over filters in shared memory)', () => {
  for (const strategy of ['classic', 'blocked', 'spatial:2', 'eigen:3']) {
    test(`threads 2 gives exactly the answers and bits of one thread: ${strategy}`, async () => {
      const batches = batchesWithRepeats();
      const one = await run(1, strategy, batches);
      const two = await run(2, strategy, batches, one.seeds);
      assert.deepEqual(two.added, one.added);
      assert.deepEqual(two.probes, one.probes);
      // The bit thread counts the bits it sets into the calling thread's filters.
      assert.equal(two.fill, one.fill);
      const firstTimes = new Set(batches.flat()).size;
      const fresh = one.added.filter(Boolean).length;
      assert.ok(fresh <= firstTimes && fresh > firstTimes - 300, `${fresh} new of ${firstTimes} distinct`);
    });
  }

  test('an epoch with grown slices: the same answers from a copy of the store, one thread or two', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(join(dir, 'base'));
    const scope = store.scope('g', { capacityUrls: 4_000, fprTarget: 0.01 });
    await scope.addIfAbsent(urls.slice(0, 6_000));
    const slices = (await scope.epoch(1)).sliceDetails;
    await store.close();
    assert.equal(slices.length, 2);
    // Within the second slice's room, so that no slice with fresh seeds is added: 2,000 + 3,000 < 8,000.
    const more = [urls.slice(5_000, 8_000), [...urls.slice(8_000, 9_000), ...urls.slice(0, 500)]];
    const answers: boolean[][] = [];
    for (const threads of [1, 2]) {
      cpSync(join(dir, 'base'), join(dir, `t${threads}`), { recursive: true });
      const copy = await SeenStore.open(join(dir, `t${threads}`), { threads });
      const again = copy.scope('g');
      const got: boolean[] = [];
      for (const batch of more) got.push(...(await again.addIfAbsent(batch)));
      got.push(...(await again.has(urls.slice(40_000, 45_000))));
      assert.equal((await again.epoch(1)).sliceDetails.length, 2);
      await copy.close();
      answers.push(got);
    }
    assert.deepEqual(answers[1], answers[0]);
    // URLs the first slice holds are not new; the slices overlap only by false positives.
    const fresh = answers[0]!.slice(3_000, 4_000).filter(Boolean).length;
    assert.ok(
      fresh > 960,
      `${fresh} of 1,000 unseen URLs new (false positives of two slices near 1 % are ~7 in 1,000)`,
    );
    assert.ok(answers[0]!.slice(4_000, 4_500).every((isNew) => !isNew));
  });

  test('bits set by the bit thread are checkpointed and survive a reopen on one thread', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir, { threads: 2 });
    const scope = store.scope('c', { capacityUrls: 40_000 });
    for (let i = 0; i < 30_000; i += 7_000) await scope.addIfAbsent(urls.slice(i, Math.min(30_000, i + 7_000)));
    assert.equal(await scope.checkpoint(), 'written');
    const probes = await scope.has(urls.slice(40_000));
    await store.close();
    const reopened = await SeenStore.open(dir, { threads: 1 });
    const again = reopened.scope('c');
    assert.ok((await again.has(urls.slice(0, 30_000))).every(Boolean));
    assert.deepEqual(await again.has(urls.slice(40_000)), probes);
    await reopened.close();
  });

  test('a batch that fails after the bit thread set its bits leaves none of them: the copy is reloaded', async () => {
    const one = await run(1, 'classic', [urls.slice(0, 10_000)]);
    const store = await SeenStore.open(tempDir(), { threads: 2 });
    const scope = store.scope('t', { capacityUrls: 40_000, fprTarget: 0.01, seeds: one.seeds });
    // Inside the write transaction, after the bit thread finished the batch: every bit is set.
    setFaultHook((point) => {
      if (point === 'add:before-commit') throw new Error('injected: the commit fails');
    });
    try {
      await assert.rejects(scope.addIfAbsent(urls.slice(0, 10_000)), /injected/);
    } finally {
      setFaultHook(undefined);
    }
    assert.deepEqual(await scope.addIfAbsent(urls.slice(0, 10_000)), one.added);
    // A URL the hashing refuses, in a late chunk: the bit thread has usually decided the earlier ones.
    const bad = [...urls.slice(10_000, 19_000), 'https://x.example/\ud800', ...urls.slice(19_000, 20_000)];
    await expectCode('INVALID_URL', () => scope.addIfAbsent(bad));
    // A control character, which the kernel's hashing pass refuses, likewise.
    await expectCode('INVALID_URL', () =>
      scope.addIfAbsent([...urls.slice(10_000, 19_000), 'https://x.example/\u0000', ...urls.slice(19_000, 20_000)]),
    );
    assert.ok((await scope.addIfAbsent(urls.slice(10_000, 20_000))).filter(Boolean).length > 9_900);
    await store.close();
  });

  test('a bit-thread writer and a one-thread writer on one store, the epoch growing under both: every URL new once', async () => {
    const dir = tempDir();
    const two = await SeenStore.open(dir, { threads: 2 });
    const one = await SeenStore.open(dir, { threads: 1 });
    const scopes = [two.scope('grow', { capacityUrls: 3_000 }), one.scope('grow')];
    const newCount = new Map<string, number>();
    // Alternating writers, overlapping batches: each catches up with slices the other added.
    for (let b = 0; b < 12; b++) {
      const batch = urls.slice(b * 1_500, b * 1_500 + 2_500);
      const answers = await scopes[b % 2]!.addIfAbsent(batch);
      batch.forEach((url, i) => answers[i] && newCount.set(url, (newCount.get(url) ?? 0) + 1));
    }
    const distinct = new Set(urls.slice(0, 11 * 1_500 + 2_500));
    assert.ok(
      [...newCount.values()].every((n) => n === 1),
      'a URL reported new twice',
    );
    assert.ok(newCount.size > distinct.size - 200, `${newCount.size} new of ${distinct.size}`);
    assert.ok((await scopes[0]!.epoch(1)).sliceDetails.length >= 3, 'the epoch grew');
    for (const scope of scopes) assert.ok((await scope.has([...distinct])).every(Boolean));
    await one.close();
    await two.close();
  });

  test('concurrent adds on one scope with two threads: every URL new exactly once', async () => {
    const store = await SeenStore.open(tempDir(), { threads: 2 });
    const scope = store.scope('race', { capacityUrls: 100_000 });
    const a = urls.slice(0, 30_000);
    const b = urls.slice(15_000, 45_000);
    const [ra, rb] = await Promise.all([scope.addIfAbsent(a), scope.addIfAbsent(b)]);
    const newCount = new Map<string, number>();
    a.forEach((url, i) => ra[i] && newCount.set(url, (newCount.get(url) ?? 0) + 1));
    b.forEach((url, i) => rb[i] && newCount.set(url, (newCount.get(url) ?? 0) + 1));
    assert.ok(
      [...newCount.values()].every((n) => n === 1),
      'a URL reported new twice',
    );
    assert.ok(newCount.size > 44_000, `${newCount.size} new of 45,000`);
    assert.ok((await scope.has(urls.slice(0, 45_000))).every(Boolean));
    await store.close();
  });

  test('bad thread counts are USAGE errors (hashThreads, the earlier name, too); the CLI takes --threads and exits when done', async () => {
    for (const threads of [0, 17, 1.5]) {
      await expectCode('USAGE', () => SeenStore.open(tempDir(), { threads }));
      await expectCode('USAGE', () => SeenStore.open(tempDir(), { hashThreads: threads }));
    }
    const dir = tempDir();
    const input = `${urls.slice(0, 20_000).join('\n')}\n`;
    const cli = await runCli(['filter-new', '--store', dir, '--threads', '2', '--batch-size', '5000'], input);
    assert.equal(cli.code, 0, cli.stderr);
    const printed = cli.stdout.split('\n').filter(Boolean);
    assert.equal(new Set(printed).size, printed.length);
    assert.ok(printed.length > 19_700);
    const bad = await runCli(['add', '--store', dir, '--threads', '0'], input);
    assert.equal(bad.code, 2);
  });
});
