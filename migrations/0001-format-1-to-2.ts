import type { MigrationStep } from './steps.js';

/**
 * Format 1 → 2: checkpoint records (meta key ['ckpt', scope, epoch]) go from record version 1 to
 * 2, gaining `merges` (the generation of changes merged into the chunks without the journal, so
 * other processes know to reload them) and `mergedSliceAdded` (new URLs per slice that merges
 * brought in). A format-1 store has never been merged into: both start at zero.
 */
export const formatOneToTwo: MigrationStep = {
  from: 1,
  to: 2,
  summary: 'checkpoint records gain the merge generation (merges) and merged URL counts (mergedSliceAdded)',
  apply(txn) {
    let changed = 0;
    for (const { key, value } of txn.metaRecords()) {
      if (!Array.isArray(key) || key[0] !== 'ckpt') continue;
      const record = value as { v: number; sliceAdded?: unknown };
      if (record.v !== 1) continue;
      const slices = Array.isArray(record.sliceAdded) ? record.sliceAdded.length : 1;
      txn.putMeta(key, { ...record, v: 2, merges: 0, mergedSliceAdded: new Array<number>(slices).fill(0) });
      changed++;
    }
    return changed;
  },
};
