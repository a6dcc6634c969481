import type { MigrationStep } from './steps.js';

/**
 * Format 2 → 3: epoch headers may give a slice a `keying` (the eigen and multilayer strategies hash
 * keys derived from the URL; counting slices hold counters) and counting epochs write journal
 * records of version 2. A format-2 store has neither, so no record changes; the version bump is
 * what matters: a format-2 binary must refuse such a store rather than answer from it as if every
 * filter held bits of the whole URL.
 */
export const formatTwoToThree: MigrationStep = {
  from: 2,
  to: 3,
  summary: 'slices may carry a keying (eigen, multilayer, counting strategies); existing records are unchanged',
  apply() {
    return 0;
  },
};
