import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { collectCli, runCrashChild, spawnCli } from './helpers/cli.js';
import { allSharedUrls, sharedUrls } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

/** A deterministic shuffle, so both processes meet the shared URLs in different orders. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Resolves once process `pid` has mapped the store's data file, i.e. has opened the store (Linux:
 * /proc/PID/maps). Feeding two processes only then makes them contend from their first batch,
 * however unequal their start-up times.
 */
async function storeOpened(pid: number, dir: string): Promise<void> {
  const data = join(dir, 'data.mdb');
  for (let waited = 0; waited < 30_000; waited += 10) {
    try {
      if (readFileSync(`/proc/${pid}/maps`, 'utf8').includes(data)) return;
    } catch {
      // not started yet, or already gone: keep polling until the deadline
    }
    await sleep(10);
  }
  throw new Error(`process ${pid} did not open the store at ${dir} within 30 s`);
}

describe('several processes, one store', () => {
  test('two filter-new processes on overlapping inputs: each URL printed exactly once across both', async () => {
    const dir = tempDir();
    const urls = allSharedUrls();
    // Both get every URL, in different orders: they contend from their first batch to their last
    // (half-overlapping inputs let the faster process finish the shared part alone).
    const a = shuffled(urls, 1);
    const b = shuffled(urls, 2);
    // Both read stdin, fed only once both have the store open.
    const args = ['filter-new', '--store', dir, '--capacity', '200000', '--fpr', '1e-9', '--batch-size', '500'];
    const childA = spawnCli(args);
    const childB = spawnCli(args);
    const results = Promise.all([collectCli(childA), collectCli(childB)]);
    await Promise.all([storeOpened(childA.pid!, dir), storeOpened(childB.pid!, dir)]);
    childA.stdin!.end(`${a.join('\n')}\n`);
    childB.stdin!.end(`${b.join('\n')}\n`);
    const [outA, outB] = await results;
    assert.equal(outA.code, 0, outA.stderr);
    assert.equal(outB.code, 0, outB.stderr);
    const printedA = outA.stdout.split('\n').filter(Boolean);
    const printedB = outB.stdout.split('\n').filter(Boolean);
    const union = new Set([...printedA, ...printedB]);
    assert.equal(union.size, printedA.length + printedB.length, 'a URL was printed twice');
    // With FPR 1e-9 no URL is wrongly skipped: the union is every distinct input URL.
    assert.equal(union.size, urls.length);
    // The overlap really was contended: each process printed a good share.
    assert.ok(
      Math.min(printedA.length, printedB.length) > urls.length / 10,
      `printed ${printedA.length} and ${printedB.length}`,
    );
  });

  test('concurrent checkpoints of two writers never lose bits', async () => {
    const dir = tempDir();
    const urls = sharedUrls('crawl-benign-35k.txt');
    const fileA = join(dir, 'a.txt');
    const fileB = join(dir, 'b.txt');
    writeFileSync(fileA, `${urls.slice(0, 17_000).join('\n')}\n`);
    writeFileSync(fileB, `${urls.slice(17_000).join('\n')}\n`);
    await Promise.all([
      runCrashChild([dir, 'default', fileA, '1000', 'none', 'checkpoint-each']),
      runCrashChild([dir, 'default', fileB, '1000', 'none', 'checkpoint-each']),
    ]);
    const store = await SeenStore.open(dir);
    const stats = (await store.scope().stats()).epochs[0]!;
    // A checkpoint that finds the other process holding the lock skips, so a short journal tail may
    // remain; everything before it was trimmed and must be in the chunks, which has() then proves.
    assert.ok(
      stats.journalRecords < 10,
      `${stats.journalRecords} of 35 journal records left: checkpoints did not trim`,
    );
    assert.equal((await store.scope().has(urls)).filter((s) => !s).length, 0);
    assert.equal(stats.added, urls.length);
    await store.close();
  });

  test('a reader in another process sees new adds without reopening', async () => {
    const dir = tempDir();
    const urls = sharedUrls('crawl-sitelist-15k.txt');
    const file = join(dir, 'u.txt');
    writeFileSync(file, `${urls.join('\n')}\n`);
    const reader = await SeenStore.open(dir);
    assert.deepEqual(await reader.scope().has(urls.slice(0, 3)), [false, false, false]);
    await runCrashChild([dir, 'default', file, '5000', 'none']);
    assert.equal((await reader.scope().has(urls)).filter((s) => !s).length, 0);
    assert.equal((await reader.scope().stats()).epochs[0]!.added, urls.length);
    await reader.close();
  });
});
