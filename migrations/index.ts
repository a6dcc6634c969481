import { formatOneToTwo } from './0001-format-1-to-2.js';
import { formatTwoToThree } from './0002-format-2-to-3.js';
import { formatThreeToFour } from './0003-format-3-to-4.js';
import { formatFourToFive } from './0004-format-4-to-5.js';
import { formatFiveToSix } from './0005-format-5-to-6.js';
import { formatSixToSeven } from './0006-format-6-to-7.js';
import type { MigrationStep } from './steps.js';

export type { MigrationStep, MigrationTxn } from './steps.js';

/** Every migration step, in order: step i takes format i + 1 to i + 2. */
export const MIGRATIONS: readonly MigrationStep[] = [
  formatOneToTwo,
  formatTwoToThree,
  formatThreeToFour,
  formatFourToFive,
  formatFiveToSix,
  formatSixToSeven,
];
