import type { MigrationStep } from './steps.js';

/**
 * Format 2 → 3: epoch headers may give a slice a `keying` (the eigen and multilayer strategies hash
 * keys derived from the URL). A format-2 store has none, so no record changes; the version bump
 * is what matters: a format-2 binary must refuse a store that may hold keyed slices rather than
 * answer from them as if every filter hashed the whole URL.
 */
export const formatTwoToThree: MigrationStep = {
  from: 2,
  to: 3,
  summary: 'slices may carry a keying (eigen, multilayer strategies); existing records are unchanged',
  apply() {
    return 0;
  },
};
