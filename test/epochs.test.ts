import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { HISTORY_HEADROOM } from '../src/epochs/sizing-policy.js';
import { prune } from '../src/epochs/retention.js';
import { epochHeaderOf } from '../src/epochs/seam-defaults.js';
import { XxHash } from '../src/hash/xxhash.js';
import { openBackend } from '../src/store/open.js';
import { setFaultHook } from '../src/store/faults.js';
import { CLI, runCli, runCrashChild, runPacedChild } from './helpers/cli.js';
import { binomialUpper, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const benign = sharedUrls('crawl-benign-35k.txt');
const benignSet = new Set(benign);
/** Real URLs never added in these tests: every "seen" answer for them is a false positive. */
const probes = sharedUrls('crawl-sitelist-15k.txt').filter((url) => !benignSet.has(url));

// The temporal strategy's p^2 check (rotation, fresh seeds, `all` over two epochs) is in the storage
// contract (test/contract/suite.ts), which runs it on every backend.
describe('epochs', () => {
  test('sizing from history follows the documented policy', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('sizing', { capacityUrls: 50_000, fprTarget: 0.01 });
    await scope.add(benign.slice(0, 8_000));
    const r1 = await scope.rotate();
    const d1 = r1.sealed.estimatedDistinct;
    assert.ok(Math.abs(d1 - 8_000) < 80, `estimated distinct ${d1}`);
    assert.equal(r1.opened.capacityUrls, Math.ceil(d1 * 1 * HISTORY_HEADROOM));
    assert.equal(r1.opened.sizing.policy, 'history-v1');
    assert.equal(r1.opened.sizing.inputs.previousDistinct, d1);
    assert.equal(r1.opened.fprTarget, 0.01);

    await scope.add(benign.slice(0, 12_000));
    const r2 = await scope.rotate();
    const d2 = r2.sealed.estimatedDistinct;
    const growth = Math.min(2, Math.max(0.5, d2 / d1));
    assert.equal(r2.opened.capacityUrls, Math.ceil(d2 * growth * HISTORY_HEADROOM));
    assert.equal(r2.opened.sizing.inputs.growth, growth);

    await scope.add(benign.slice(0, 30_000));
    const r3 = await scope.rotate();
    const d3 = r3.sealed.estimatedDistinct;
    assert.ok(d3 / d2 > 2);
    assert.equal(r3.opened.capacityUrls, Math.ceil(d3 * 2 * HISTORY_HEADROOM), 'growth is clamped to x2');

    const r4 = await scope.rotate();
    assert.equal(r4.opened.capacityUrls, r3.opened.capacityUrls, 'an empty epoch carries its capacity over');
    const r5 = await scope.rotate({ capacityUrls: 777, fprTarget: 0.001 });
    assert.equal(r5.opened.sizing.policy, 'explicit');
    assert.equal(r5.opened.capacityUrls, 777);
    assert.equal(r5.opened.fprTarget, 0.001);
    const shown = await runCli(['epoch', 'show', '3', '--store', dir, '--scope', 'sizing']);
    assert.match(shown.stdout, /sizing +history-v1: epoch 2 had ~\d+ distinct URLs; growth x/);
    assert.match(shown.stdout, /slice 0 seeds +[0-9a-f]{16}/);
    await store.close();
  });

  test('overfilling an epoch adds slices and keeps the measured FPR within the promise', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('overfill', { capacityUrls: 2_000, fprTarget: 0.01 });
    const answers = await scope.addIfAbsent(benign);
    assert.ok(answers.filter(Boolean).length > benign.length * 0.99);
    const stats = (await scope.stats()).epochs[0]!;
    assert.ok(stats.slices >= 4, `${stats.slices} slices for 17x the capacity`);
    assert.ok(stats.estimatedFpr <= 0.01, `estimated FPR ${stats.estimatedFpr}`);
    const measured = (await scope.has(probes)).filter(Boolean).length;
    assert.ok(measured <= binomialUpper(probes.length, 0.01), `${measured} false positives of ${probes.length}`);
    assert.ok((await scope.has(benign)).every(Boolean));
    await store.close();
    const reopened = await SeenStore.open(dir);
    assert.ok((await reopened.scope('overfill').has(benign)).every(Boolean), 'slices survive reopen');
    assert.equal((await reopened.scope('overfill').stats()).epochs[0]!.slices, stats.slices);
    await reopened.close();
  });

  test('a sealed or non-open epoch refuses pinned adds with EPOCH_SEALED', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope();
    await scope.add(['https://a.example/'], { epoch: 1 });
    await scope.rotate();
    await expectCode('EPOCH_SEALED', () => scope.add(['https://b.example/'], { epoch: 1 }));
    assert.deepEqual(await scope.addIfAbsent(['https://a.example/'], { epoch: 2 }), [true]);
    const cli = await runCli(['add', '--store', dir, '--epoch', '1'], 'https://c.example/\n');
    assert.equal(cli.code, 7);
    assert.match(cli.stderr, /^seenstore: error EPOCH_SEALED: /);
    await store.close();
  });

  for (const point of ['rotate:before-commit', 'rotate:after-commit']) {
    test(`kill -9 at ${point}: exactly one open epoch, no lost adds`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      writeFileSync(file, `${benign.slice(0, 6_000).join('\n')}\n`);
      const run = await runCrashChild([dir, 'default', file, '2000', point, 'rotate']);
      assert.equal(run.signal, 'SIGKILL');
      assert.equal(run.acked, 3);
      const store = await SeenStore.open(dir);
      const stats = await store.scope().stats();
      const open = stats.epochs.filter((e) => e.state === 'open');
      assert.equal(open.length, 1);
      assert.equal(stats.openEpoch, point === 'rotate:before-commit' ? 1 : 2);
      assert.equal(open[0]!.epoch, stats.openEpoch);
      assert.ok((await store.scope().has(benign.slice(0, 6_000), { epochs: 'all' })).every(Boolean));
      assert.equal(stats.epochs[0]!.added, 6_000);
      await store.close();
    });
  }

  test('adds racing rotations from another process land in exactly one epoch, none lost', async () => {
    const dir = tempDir();
    const file = join(dir, 'urls.txt');
    writeFileSync(file, `${benign.join('\n')}\n`);
    const store = await SeenStore.open(dir);
    const scope = store.scope('default', { capacityUrls: 100_000, fprTarget: 1e-7 });
    await scope.add(['https://start.example/']);
    // Batches of 500 in a child that waits for this process after each: after every 10th, a
    // rotation begins and the child's next batch races it; five batches on, the rotation has
    // committed before the child goes on, so every epoch gets batches of its own.
    const batches = Math.ceil(benign.length / 500);
    let rotations = 0;
    let rotating: Promise<unknown> = Promise.resolve();
    const child = runPacedChild([dir, 'default', file, '500', 'none'], async (n) => {
      if (n % 10 === 4) await rotating;
      if (n % 10 === 9 && n + 6 < batches) {
        rotating = scope.rotate({ capacityUrls: 100_000, fprTarget: 1e-7 });
        rotations++;
      }
    });
    assert.ok((await child).done);
    await rotating;
    assert.ok(rotations >= 3, `only ${rotations} rotations for ${batches} batches`);
    const stats = await scope.stats();
    assert.equal(stats.epochs.length, rotations + 1);
    assert.deepEqual(
      stats.epochs.filter((e) => e.added === 0).map((e) => e.epoch),
      [],
      'the child added nothing to an epoch: it missed a rotation by another process',
    );
    const addedOverEpochs = stats.epochs.reduce((sum, e) => sum + e.added, 0);
    assert.equal(addedOverEpochs, benign.length + 1, 'each URL was new in exactly one epoch');
    const perEpoch: number[] = [];
    for (const e of stats.epochs) perEpoch.push((await scope.has(benign, { epochs: e.epoch })).filter(Boolean).length);
    assert.equal(
      perEpoch.reduce((a, b) => a + b, 0),
      benign.length,
    );
    assert.equal(stats.epochs.filter((e) => e.state === 'open').length, 1);
    await store.close();
  });

  test('prune keeps what it should, frees the pages, and queries over pruned epochs fail clearly', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('default', { capacityUrls: 400_000, fprTarget: 0.01 });
    for (let e = 0; e < 4; e++) {
      await scope.add(benign.slice(e * 5_000, (e + 1) * 5_000));
      if (e < 3) await scope.rotate({ capacityUrls: 400_000 });
    }
    await expectCode('USAGE', () => scope.prune({}));
    assert.deepEqual(
      await scope.prune({ keepLast: 2, sealedWithinMs: 3_600_000 }),
      [],
      'all sealed within the hour: kept',
    );
    const before = (await scope.stats()).epochs;
    const dropped = await scope.prune({ keepLast: 2 });
    assert.deepEqual(
      dropped.map((d) => d.epoch),
      [1, 2],
    );
    for (const d of dropped) assert.equal(d.bytesFreed, before.find((e) => e.epoch === d.epoch)!.bytesOnDisk);
    assert.deepEqual(
      (await scope.stats()).epochs.map((e) => e.epoch),
      [3, 4],
    );
    await expectCode('NOT_FOUND', () => scope.has(['https://x.example/'], { epochs: 1 }));
    await assert.rejects(scope.has(['https://x.example/'], { epochs: '1..3' as never }), TypeError);
    await expectCode('NOT_FOUND', () => scope.diff(['https://x.example/'], 2, 4));
    assert.ok((await scope.has(benign.slice(10_000, 15_000), { epochs: 3 })).every(Boolean), 'kept epochs untouched');
    // The freed pages are reused: two more epochs of the same size grow the file by at least half
    // the freed bytes less than they grow a store where nothing was pruned (the same steps).
    const control = await SeenStore.open(tempDir());
    const controlScope = control.scope('default', { capacityUrls: 400_000, fprTarget: 0.01 });
    for (let e = 0; e < 4; e++) {
      await controlScope.add(benign.slice(e * 5_000, (e + 1) * 5_000));
      if (e < 3) await controlScope.rotate({ capacityUrls: 400_000 });
    }
    const growth = async (handle: SeenStore, s: typeof scope): Promise<number> => {
      const sizeBefore = statSync(join(handle.dir, 'data.mdb')).size;
      for (let e = 0; e < 2; e++) {
        await s.rotate({ capacityUrls: 400_000 });
        await s.add(benign.slice(20_000 + e * 5_000, 25_000 + e * 5_000));
        await s.checkpoint();
      }
      return statSync(join(handle.dir, 'data.mdb')).size - sizeBefore;
    };
    const grown = await growth(store, scope);
    const grownWithout = await growth(control, controlScope);
    await control.close();
    const freed = dropped.reduce((sum, d) => sum + d.bytesFreed, 0);
    assert.ok(
      grown <= grownWithout - freed / 2,
      `file grew ${grown} bytes after freeing ${freed}, ${grownWithout} without the prune`,
    );
    const cli = await runCli(['has', '--store', dir, '--epochs', '1..4'], 'https://x.example/\n');
    assert.equal(cli.code, 11);
    assert.match(cli.stderr, /no epoch 1 \(it was pruned\)/);
    await store.close();
  });

  test('another process rotates and prunes the epoch a store holds open: the store still closes, and a prune skips an epoch another prune dropped', async () => {
    // Found by `npm run soak` (its engine part): both threw NOT_FOUND.
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    await store.scope('p').add(['https://a.example/1', 'https://a.example/2']);
    for (const args of [
      ['epoch', 'rotate'],
      ['epoch', 'rotate'],
      ['epoch', 'prune', '--keep-last', '1'],
    ]) {
      const cli = await runCli(['--store', dir, '--scope', 'p', ...args]);
      assert.equal(cli.code, 0, cli.stderr);
    }
    // Its checkpoint at close finds epoch 1 pruned: nothing is left to write.
    await store.close();

    for (let i = 0; i < 2; i++)
      assert.equal((await runCli(['--store', dir, '--scope', 'p', 'epoch', 'rotate'])).code, 0);
    const backend = await openBackend(
      dir,
      { hash: await XxHash.load(), create: false, readOnly: false, warn: () => {} },
      {},
    );
    try {
      // Epochs 3, 4 and 5: another prune drops 3 after this one listed the epochs, before it reads 3.
      const racing = new Proxy(backend, {
        get(target, name) {
          if (name === 'epochHeader') {
            return async (scope: string, n: number) => {
              if (n === 3) await target.dropEpoch(await epochHeaderOf(target, scope, 3));
              return epochHeaderOf(target, scope, n);
            };
          }
          const value = Reflect.get(target, name);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      assert.deepEqual(
        (await prune(racing, 'p', { keepLast: 1 })).map((d) => d.epoch),
        [4],
      );
      assert.deepEqual(await backend.epochNumbers('p'), [5]);
    } finally {
      await backend.close?.();
    }
  });

  test('a rotation whose new epoch another process rotates past and prunes at once still answers what it opened', async () => {
    // Found by `npm run soak` (its engine part): the rotation stood, its answer threw NOT_FOUND.
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    await store.scope('p').add(['https://a.example/1']);
    setFaultHook((point) => {
      if (point !== 'rotate:after-commit') return;
      setFaultHook(undefined);
      for (const args of [
        ['epoch', 'rotate'],
        ['epoch', 'prune', '--keep-last', '1'],
      ]) {
        const other = spawnSync(process.execPath, [CLI, '--store', dir, '--scope', 'p', ...args], { encoding: 'utf8' });
        assert.equal(other.status, 0, other.stderr);
      }
    });
    try {
      const rotated = await store.scope('p').rotate();
      assert.equal(rotated?.opened.epoch, 2);
      assert.equal(rotated?.opened.adds, 0);
      assert.equal(await store.scope('p').openEpoch(), 3);
      await expectCode('NOT_FOUND', () => store.scope('p').epoch(2));
    } finally {
      setFaultHook(undefined);
      await store.close();
    }
  });

  test('kill -9 in the middle of a prune: the epoch is gone at once, the next prune finishes the job', async () => {
    const dir = tempDir();
    const file = join(dir, 'urls.txt');
    writeFileSync(file, `${benign.slice(0, 4_000).join('\n')}\n`);
    const run = await runCrashChild([dir, 'default', file, '2000', 'prune:after-unlink', 'prune']);
    assert.equal(run.signal, 'SIGKILL');
    const store = await SeenStore.open(dir);
    const scope = store.scope();
    assert.deepEqual((await scope.stats()).epochs.map((e) => e.epoch).includes(1), false);
    const finished = await scope.prune({ keepLast: 1 });
    assert.ok(finished.some((d) => d.epoch === 1));
    assert.deepEqual(
      (await scope.stats()).epochs.map((e) => e.epoch),
      [3],
    );
    await store.close();
  });

  test('the CLI runs a crawl, a rotation and a recrawl, and tells what is new since the last crawl', async () => {
    const dir = tempDir();
    const crawl1 = benign.slice(0, 3_000);
    const crawl2 = benign.slice(2_000, 6_000);
    const cli = (args: string[], input = '') => runCli(['--store', dir, '--scope', 'site', ...args], input);
    // The exact answers below need no false positive in ~7,000 queries: at 1e-9 one run in ~100,000
    // meets one. (Under xxh64-km-v1 small filters had a floor near 1 / (4 m) whatever the target,
    // 3.7e-6 here; v2 and the sizing's growth for low targets remove it: docs/strategies.md.)
    const first = await cli(['filter-new', '--capacity', '3000', '--fpr', '1e-9'], `${crawl1.join('\n')}\n`);
    assert.equal(first.stdout.split('\n').filter(Boolean).length, 3_000);
    const rotated = await cli(['epoch', 'rotate', '--json']);
    assert.equal(JSON.parse(rotated.stdout).opened.epoch, 2);
    const second = await cli(['filter-new'], `${crawl2.join('\n')}\n`);
    assert.equal(
      second.stdout.split('\n').filter(Boolean).length,
      4_000,
      'a recrawl fetches everything again in its epoch',
    );
    const newSince = await cli(
      ['diff', '--from', 'previous', '--to', 'current', '--print', 'only-to'],
      `${crawl2.join('\n')}\n`,
    );
    assert.deepEqual(newSince.stdout.split('\n').filter(Boolean), benign.slice(3_000, 6_000));
    const classes = await cli(['classify', '--json'], `${crawl2.join('\n')}\n`);
    assert.deepEqual(JSON.parse(classes.stdout), { read: 4_000, invalid: 0, new: 3_000, revisit: 1_000 });
    const list = await cli(['epoch', 'list', '--json']);
    assert.deepEqual(
      JSON.parse(list.stdout).epochs.map((e: { state: string }) => e.state),
      ['sealed', 'open'],
    );
    const bad = await cli(['has', '--epochs', 'yesterday'], 'x\n');
    assert.equal(bad.code, 2);
  });
});
