import type { MigrationStep } from './steps.js';

/**
 * Format 3 → 4: an epoch header's `normalize` may be `url` (keys are URLs: a line is trimmed of
 * surrounding whitespace and must start like `scheme://host`), the default of scopes created from
 * format 4 on. A format-3 store has only `none`, `whatwg` and `crawler` epochs, and they keep their
 * mode (a `none` scope stays any-line, `keys: 'raw'`, through rotations), so no record changes; the
 * version bump is what matters: a format-3 binary must refuse a store whose scopes it would take
 * for any-line scopes.
 */
export const formatThreeToFour: MigrationStep = {
  from: 3,
  to: 4,
  summary:
    "epochs may normalise with `url` (keys are URLs, the default of new scopes); existing scopes keep their mode ('none' stays any-line)",
  apply() {
    return 0;
  },
};
