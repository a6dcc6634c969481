import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { planSizing } from '../src/epochs/plan.js';
import { lmdbDriver } from '../src/store/lmdb/driver.js';
import { filterGeometries } from '../src/filters/keying.js';
import { parseStrategy } from '../src/filters/strategy.js';
import { runCli } from './helpers/cli.js';
import { sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { memoryStore } from './helpers/memory.js';

const URLS = sharedUrls('crawl-benign-35k.txt');

describe('plan: the sizing calculator', () => {
  for (const strategy of ['classic', 'blocked', 'partitioned', 'partitioned:4', 'spatial:2', 'eigen:2', 'counting']) {
    test(`${strategy}: the plan is the geometry an epoch gets, first slice and growth slices`, async () => {
      const capacityUrls = 4_000;
      const plan = planSizing(capacityUrls, 0.01, parseStrategy(strategy), 3, lmdbDriver.capabilities.storedBytes);
      const store = await SeenStore.open(memoryStore('plan'));
      const scope = store.scope('s', { capacityUrls, fprTarget: 0.01, strategy });
      // Over 12,000 new URLs fill the first slice (4,000) and the second (8,000): the third starts
      // (12,500 added: a few hundred at most are false positives and not new).
      for (let i = 0; i < 12_500; i += 500) await scope.add(URLS.slice(i, i + 500));
      assert.ok((await scope.epoch(1)).added > 12_000);
      const slices = (await scope.epoch(1)).sliceDetails;
      assert.equal(slices.length, 3);
      slices.forEach((slice, i) => {
        const planned = plan.slices[i]!;
        assert.equal(slice.k, planned.k, `slice ${i + 1} k`);
        assert.equal(slice.capacityUrls, planned.capacityUrls, `slice ${i + 1} capacity`);
        assert.equal(slice.fprTarget, planned.fprTarget, `slice ${i + 1} fpr`);
        const bits = filterGeometries(slice).reduce((sum, g) => sum + g.mBits, 0);
        assert.equal(bits, planned.bits, `slice ${i + 1} bits`);
      });
      await store.close();
      assert.ok(plan.slices[2]!.totalFpr < 0.01, 'the union stays inside the target');
      assert.equal(plan.slices[2]!.totalCapacityUrls, 4_000 + 8_000 + 16_000);
    });
  }

  test('the CLI prints the table, JSON, and refuses bad values with USAGE', async () => {
    const text = await runCli(['plan', '--capacity', '1e6', '--fpr', '0.001']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^classic, 1,000,000 URLs at FPR 0.001/);
    assert.equal(text.stdout.trim().split('\n').length, 2 + 4);
    const json = await runCli(['plan', '--strategy', 'blocked', '--slices', '2', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as { strategy: string; slices: { bits: number }[] };
    assert.equal(parsed.strategy, 'blocked');
    assert.equal(parsed.slices.length, 2);
    for (const args of [
      ['--capacity', '0'],
      ['--fpr', '1'],
      ['--strategy', 'nope'],
      ['--slices', '13'],
    ]) {
      const bad = await runCli(['plan', ...args]);
      assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
      assert.match(bad.stderr, /^seenstore: error USAGE: /);
    }
    await expectCode('USAGE', () =>
      planSizing(10, 0.01, parseStrategy('classic'), 0, lmdbDriver.capabilities.storedBytes),
    );
  });
});
