import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { allSharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const urls = allSharedUrls();
const SEEDS = ['0123456789abcdef'];

async function answers(hashThreads: number, batches: readonly string[][]): Promise<{ added: boolean[]; probes: boolean[] }> {
  const store = await SeenStore.open(tempDir(), { hashThreads });
  const scope = store.scope('t', { capacityUrls: 40_000, fprTarget: 0.01, seeds: SEEDS });
  const added: boolean[] = [];
  for (const batch of batches) added.push(...(await scope.addIfAbsent(batch)));
  const probes = scope.has(urls.slice(40_000));
  await store.close();
  return { added, probes };
}

describe('hashing threads', () => {
  test('hashThreads 2 gives exactly the answers of one thread (same seeds), also for non-ASCII URLs', async () => {
    const inserted = [...urls.slice(0, 40_000), 'https://例え.テスト/パス?q=ü', 'https://x.example/😀'];
    const batches = [inserted.slice(0, 10_000), inserted.slice(10_000, 13_000), inserted.slice(13_000)];
    const one = await answers(1, batches);
    const two = await answers(2, batches);
    assert.deepEqual(two.added, one.added);
    assert.deepEqual(two.probes, one.probes);
    assert.ok(one.added.filter(Boolean).length > 39_000);
  });

  test('concurrent adds on one scope with hashing threads: every URL new exactly once', async () => {
    const store = await SeenStore.open(tempDir(), { hashThreads: 2 });
    const scope = store.scope('race', { capacityUrls: 100_000 });
    const a = urls.slice(0, 30_000);
    const b = urls.slice(15_000, 45_000);
    const [ra, rb] = await Promise.all([scope.addIfAbsent(a), scope.addIfAbsent(b)]);
    const newCount = new Map<string, number>();
    a.forEach((url, i) => ra[i] && newCount.set(url, (newCount.get(url) ?? 0) + 1));
    b.forEach((url, i) => rb[i] && newCount.set(url, (newCount.get(url) ?? 0) + 1));
    assert.ok([...newCount.values()].every((n) => n === 1), 'a URL reported new twice');
    assert.ok(newCount.size > 44_000, `${newCount.size} new of 45,000`);
    assert.ok(scope.has(urls.slice(0, 45_000)).every(Boolean));
    await store.close();
  });

  test('bad thread counts are USAGE errors; the CLI takes --threads and exits when done', async () => {
    for (const hashThreads of [0, 17, 1.5]) await expectCode('USAGE', () => SeenStore.open(tempDir(), { hashThreads }));
    const dir = tempDir();
    const input = `${urls.slice(0, 20_000).join('\n')}\n`;
    const run = await runCli(['filter-new', '--store', dir, '--threads', '2', '--batch-size', '5000'], input);
    assert.equal(run.code, 0, run.stderr);
    const printed = run.stdout.split('\n').filter(Boolean);
    assert.equal(new Set(printed).size, printed.length);
    assert.ok(printed.length > 19_700);
    const bad = await runCli(['add', '--store', dir, '--threads', '0'], input);
    assert.equal(bad.code, 2);
  });
});
