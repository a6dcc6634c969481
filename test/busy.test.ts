import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { ERROR_CODES } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { sharedUrls } from './helpers/data.js';
import { runHeld, type HeldCommand } from './helpers/held.js';
import { tempDir } from './helpers/tmp.js';

/** Slots of the small reader table the second test forces on the store. */
const SMALL_TABLE_SLOTS = 4;

/** Reader slots of the store's lock file as LMDB reads them (the table is sized by the file). */
async function readerSlots(dir: string): Promise<number> {
  const root = open({ path: dir, noSubdir: false, maxDbs: 8 });
  try {
    return (root.getStats() as { maxReaders: number }).maxReaders;
  } finally {
    await root.close();
  }
}

describe('many processes on one store', () => {
  test("a store seenstore opens first has 1024 reader slots, not LMDB's 126", async () => {
    const dir = tempDir();
    const created = await runCli(['add', '--store', dir], 'https://example.com/a\n');
    assert.equal(created.code, 0, created.stderr);
    assert.equal(await readerSlots(dir), 1024);
  });

  test('past the last reader slot: STORE_BUSY with one line, never INTERNAL; everything printed is stored', async () => {
    const dir = tempDir();
    const urls = sharedUrls('crawl-benign-35k.txt');
    const seed = urls[0]!;
    const created = await runCli(['add', '--store', dir], `${seed}\n`);
    assert.equal(created.code, 0, created.stderr);
    // A process that opens the store while no other has it sizes the reader table, as an older
    // seenstore (LMDB's default of 126) would: here a small one, held open by this process.
    rmSync(join(dir, 'lock.mdb'));
    const holder = open({ path: dir, noSubdir: false, maxDbs: 8, maxReaders: SMALL_TABLE_SLOTS });
    try {
      // Twice as many processes as slots, every one held open until all are in or refused.
      const commands: HeldCommand[] = Array.from({ length: 2 * SMALL_TABLE_SLOTS }, (_, i) => {
        const mine = urls.slice(1 + i * 10, 11 + i * 10);
        return i % 2 === 0
          ? {
              args: ['filter-new', '--store', dir, '--quiet', '--batch-size', '3', '--batch-delay-ms', '5'],
              lines: mine,
            }
          : { args: ['has', '--store', dir, '--batch-size', '3', '--batch-delay-ms', '5'], lines: [seed, ...mine] };
      });
      const { results, allReady } = await runHeld(commands, 60_000, 90_000);
      assert.ok(allReady, 'every process answered its first line or exited');
      let answered = 0;
      let busy = 0;
      const printed: string[] = [];
      results.forEach((run, i) => {
        const what = `${commands[i]!.args[0]} ${i}: exit ${run.code} ${run.signal ?? ''}\n${run.stderr}`;
        if (run.code === 0) {
          answered++;
          assert.equal(run.stderr, '', what);
          const lines = run.stdout.split('\n').filter((line) => line.length > 0);
          // Distinct fresh URLs in a filter sized for a million: each filter-new prints all of its own.
          if (i % 2 === 0) assert.deepEqual(lines, commands[i]!.lines, what);
          else assert.equal(lines[0], seed, what);
          if (i % 2 === 0) printed.push(...lines);
        } else {
          busy++;
          assert.equal(run.code, ERROR_CODES.STORE_BUSY, what);
          assert.match(run.stderr, /^seenstore: error STORE_BUSY: [^\n]+\n$/, what);
          assert.equal(run.stdout, '', what);
        }
      });
      assert.equal(answered, SMALL_TABLE_SLOTS);
      assert.equal(busy, SMALL_TABLE_SLOTS);
      const missing = await runCli(['has', '--store', dir, '--invert'], `${printed.join('\n')}\n`);
      assert.equal(missing.code, 0, missing.stderr);
      assert.equal(missing.stdout, '', 'printed as new but not in the store');
    } finally {
      await holder.close();
    }
  });
});
