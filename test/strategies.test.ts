import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { expectedFpr } from '../src/filters/sizing.js';
import { runCli } from './helpers/cli.js';
import { binomialLower, binomialUpper, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { memoryStore } from './helpers/memory.js';
import { tempDir } from './helpers/tmp.js';

const benign = sharedUrls('crawl-benign-35k.txt');
const benignSet = new Set(benign);
/** Real URLs never added here: every "seen" answer for them is a false positive. */
const probes = sharedUrls('crawl-sitelist-15k.txt').filter((url) => !benignSet.has(url));

describe('strategies', () => {
  test('spatial:3 is persisted: three seeds per slice, no false negatives, FPR at its theory, survives reopen', async () => {
    const dir = tempDir();
    const inserted = benign.slice(0, 20_000);
    let store = await SeenStore.open(dir);
    // 20 % target: each of the three filters runs at the cube root, ~58 %, so every one matters.
    const scope = store.scope('spatial', { strategy: 'spatial:3', capacityUrls: 20_000, fprTarget: 0.2 });
    const added = (await scope.addIfAbsent(inserted)).filter(Boolean).length;
    const details = await scope.epoch(1);
    assert.equal(details.strategy, 'spatial:3');
    assert.equal(details.sliceDetails.length, 1);
    const slice = details.sliceDetails[0]!;
    assert.equal(slice.seeds.length, 3);
    assert.equal(new Set(slice.seeds).size, 3, 'every filter has its own seed');
    // All three must hold a URL: the theory is the single-filter rate cubed. Every inserted URL's
    // bits are set (a false positive's were set already), so n is the inserted count, not `added`.
    assert.ok(added <= inserted.length);
    const single = expectedFpr(slice.mBits, slice.k, inserted.length);
    const p = single ** 3;
    const bits = (3 * slice.mBits) / 20_000;
    assert.ok(
      bits < 8,
      `spatial:3 at 20 % costs ${bits.toFixed(2)} bits per URL; one filter at the slice's 10 % costs 4.8`,
    );
    const measured = (await scope.has(probes)).filter(Boolean).length;
    assert.ok(
      measured <= binomialUpper(probes.length, p) && measured >= binomialLower(probes.length, p),
      `${measured} false positives of ${probes.length}, theory ${(p * probes.length).toFixed(0)}`,
    );
    assert.ok((await scope.has(inserted)).every(Boolean), 'no false negatives');
    await store.close();

    store = await SeenStore.open(dir);
    const again = store.scope('spatial');
    assert.ok((await again.has(inserted)).every(Boolean), 'no false negatives after reopen');
    assert.equal((await again.has(probes)).filter(Boolean).length, measured, 'the same answers after reopen');
    assert.deepEqual((await again.epoch(1)).sliceDetails[0]!.seeds, slice.seeds);
    await store.close();
  });

  test('a spatial epoch grows by slices of S filters, and rotation keeps or changes the strategy', async () => {
    const dir = memoryStore('strategies');
    const store = await SeenStore.open(dir);
    const scope = store.scope('grow', { strategy: 'spatial:2', capacityUrls: 2_000, fprTarget: 0.01 });
    await scope.add(benign);
    const grown = await scope.epoch(1);
    assert.ok(grown.sliceDetails.length >= 4, `${grown.sliceDetails.length} slices for 17x the capacity`);
    assert.ok(grown.sliceDetails.every((s) => s.seeds.length === 2));
    const measured = (await scope.has(probes)).filter(Boolean).length;
    assert.ok(
      measured <= binomialUpper(probes.length, 0.01),
      `${measured} false positives of ${probes.length} at a 1 % promise`,
    );
    assert.ok((await scope.has(benign)).every(Boolean));

    const kept = await scope.rotate();
    assert.equal(kept.opened.strategy, 'spatial:2');
    assert.equal(kept.opened.sliceDetails[0]!.seeds.length, 2);
    const changed = await scope.rotate({ strategy: 'blocked' });
    assert.equal(changed.opened.strategy, 'blocked');
    assert.equal(changed.opened.sliceDetails[0]!.layout, 'blocked');
    assert.deepEqual(
      (await scope.stats()).epochs.map((e) => e.strategy),
      ['spatial:2', 'spatial:2', 'blocked'],
    );
    await store.close();
  });

  test('scalable:F,T chooses the growth: slices F times larger, errors tightened by T, the promise kept', async () => {
    const dir = memoryStore('strategies');
    const store = await SeenStore.open(dir);
    const scope = store.scope('grow', { strategy: 'scalable:4,0.8', capacityUrls: 1_000, fprTarget: 0.01 });
    await scope.add(benign);
    const details = await scope.epoch(1);
    assert.equal(details.strategy, 'scalable:4,0.8');
    assert.deepEqual(details.growth, { factor: 4, tightening: 0.8 });
    const capacities = details.sliceDetails.map((s) => s.capacityUrls);
    assert.ok(capacities.length >= 3, `${capacities.length} slices`);
    assert.deepEqual(
      capacities,
      capacities.map((_, j) => 1_000 * 4 ** j),
      'each slice 4x the one before',
    );
    const rates = details.sliceDetails.map((s) => s.fprTarget);
    rates
      .slice(1)
      .forEach((rate, j) => assert.ok(Math.abs(rate / rates[j]! - 0.8) < 1e-9, 'each slice 0.8x the error before'));
    assert.ok((await scope.has(benign)).every(Boolean));
    const measured = (await scope.has(probes)).filter(Boolean).length;
    assert.ok(measured <= binomialUpper(probes.length, 0.01), `${measured} false positives of ${probes.length}`);
    const rotated = await scope.rotate();
    assert.equal(rotated.opened.strategy, 'scalable:4,0.8', 'a rotation keeps the growth');
    const plain = store.scope('plain', { strategy: 'scalable' });
    await plain.add(['http://a/']);
    assert.equal((await plain.epoch(1)).strategy, 'classic', 'plain scalable is classic: every epoch grows by default');
    await store.close();
  });

  test('spatial epochs export, import and merge like any other (seeds per filter carried)', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const a = store.scope('a', { strategy: 'spatial:2', capacityUrls: 40_000 });
    await a.add(benign.slice(0, 15_000));
    const seeds = (await a.epoch(1)).sliceDetails[0]!.seeds;
    const b = store.scope('b', { strategy: 'spatial:2', capacityUrls: 40_000, seeds });
    await b.add(benign.slice(15_000));
    const fileA = join(dir, 'a.ssx');
    const fileB = join(dir, 'b.ssx');
    await a.export(fileA);
    await b.export(fileB);
    await store.import(fileB, { scope: 'copy' });
    assert.equal((await store.scope('copy').epoch(1)).strategy, 'spatial:2');
    assert.ok((await store.scope('copy').has(benign.slice(15_000), { epochs: 1 })).every(Boolean));
    await a.merge([fileB]);
    assert.ok((await a.has(benign)).every(Boolean), 'the merge holds both crawls');
    await store.close();
  });

  test('unknown and unavailable strategies, and seeds that do not fit, are USAGE errors before anything is written', async () => {
    const dir = memoryStore('strategies');
    const store = await SeenStore.open(dir);
    const bad = [
      'spatial',
      'spatial:1',
      'spatial:17',
      'eigen:0',
      'eigen:17',
      'multilayer:1',
      'multilayer:9',
      'scalable:0.5,0.5',
      'scalable:2,1',
      'scalable:2',
      'bloomier',
      'counting:2',
      'Classic',
    ];
    for (const [i, strategy] of bad.entries())
      await expectCode('USAGE', () => store.scope(`s${i}`, { strategy }).add(['http://a/']));
    await expectCode('USAGE', () =>
      store.scope('x', { strategy: 'spatial:2', seeds: ['0123456789abcdef'] }).add(['http://a/']),
    );
    await expectCode('USAGE', () => store.scope('y', { strategy: 'spatial:2', layout: 'blocked' }).add(['http://a/']));
    assert.deepEqual(await store.scopeNames(), []);
    const scope = store.scope('z');
    await scope.add(['http://a/']);
    await expectCode('USAGE', () => scope.rotate({ strategy: 'counting:8' }));
    await expectCode('USAGE', () => scope.rotate({ strategy: 'spatial:2', seeds: ['0123456789abcdef'] }));
    assert.equal((await scope.stats()).epochs.length, 1, 'no rotation happened');
    await store.close();
  });

  test('the CLI takes --strategy on add and epoch rotate; epoch show prints it', async () => {
    const dir = tempDir();
    const input = `${benign.slice(0, 2_000).join('\n')}\n`;
    const added = await runCli(['add', '--store', dir, '--strategy', 'spatial:4', '--capacity', '5000'], input);
    assert.equal(added.code, 0, added.stderr);
    const shown = await runCli(['epoch', 'show', '1', '--store', dir]);
    assert.match(shown.stdout, /strategy {9}spatial:4/);
    const rotated = await runCli(['epoch', 'rotate', '--store', dir, '--strategy', 'classic', '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(JSON.parse(rotated.stdout).opened.strategy, 'classic');
    const bad = await runCli(['add', '--store', dir, '--scope', 'other', '--strategy', 'bloomier'], input);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^seenstore: error USAGE: unknown strategy "bloomier": use classic, blocked, counting, /);
  });
});
