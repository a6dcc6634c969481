import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { differential, type DifferentialSubject } from './helpers/frontier-differential.js';
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
