import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { differential, type DifferentialSubject } from './helpers/frontier-differential.js';
import { memoryStore } from './helpers/memory.js';
import { tempDir } from './helpers/tmp.js';

const LMDB: DifferentialSubject = {
  name: 'lmdb',
  open: (clock) => SeenStore.open(tempDir('seenstore-frontier-diff-'), { clock }),
  // LMDB's ids are `SEQ-HASH`: this one names no entry.
  noId: '999999-0',
};

describe('LMDB frontier v2 answers as the memory reference does', () => {
  for (const seed of [1, 2, 3, 4]) {
    test(`random operations, seed ${seed}: every answer equal to the reference's`, async () => {
      await differential(LMDB, seed, 400);
    });
  }
});

describe('LMDB frontier: one write, one URL twice', () => {
  test('schedule given the same URL twice (new to the frontier) answers as the reference does', async () => {
    const nowMs = 1_700_000_000_000;
    const clock = (): number => nowMs;
    const memory = await SeenStore.open(memoryStore('frontier-twice'), { clock });
    const lmdb = await SeenStore.open(tempDir('seenstore-frontier-twice-'), { clock });
    try {
      const answers = [];
      for (const store of [memory, lmdb]) {
        const frontier = store.scope('d', { capacityUrls: 1_000 }).frontier();
        // The first is queued by this call; the second finds it in a block not yet stored (due in
        // take order, nothing makes the transaction store its blocks before the end).
        const waiting = await frontier.schedule(
          ['https://a.example/x', 'https://a.example/y', 'https://a.example/x'],
          [nowMs + 1_000, nowMs + 2_000, nowMs + 3_000],
        );
        const status = await frontier.urlStatus('https://a.example/x');
        answers.push({ waiting, stats: await frontier.stats(), atMs: status?.atMs, state: status?.state });
      }
      assert.deepEqual(answers[1], answers[0]);
      assert.equal(answers[0]!.stats.pending, 2);
    } finally {
      await memory.close();
      await lmdb.close();
    }
  });
});
