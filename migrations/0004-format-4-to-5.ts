import type { MigrationStep } from './steps.js';

/**
 * Format 4 → 5: durable adds are journaled in `journal.log` beside the LMDB data file instead of
 * as records in LMDB's `journal` database (which adds that enqueue still use, and which format-5
 * stores keep replaying, so a format-4 store's journal tail is read as it is). No record changes;
 * the bump makes a format-4 binary refuse the store instead of answering without the file's adds.
 */
export const formatFourToFive: MigrationStep = {
  from: 4,
  to: 5,
  summary: 'adds are journaled in the file journal.log beside data.mdb (LMDB journal records are still replayed)',
  apply() {
    return 0;
  },
};
