/**
 * How much work the heaviest tests do. `npm test` (CI, and the README's test command) runs each of
 * them at the smallest size at which its assertion still means what it says; `npm run test:full`
 * (SEENSTORE_TEST_FULL=1) runs the sizes the issues named: a million URLs on the Redis cluster,
 * every bad input through every command, 600-page crawls, 25 kills. The same assertions hold in
 * both; only counts change (README, "Tests").
 */
export const FULL = process.env.SEENSTORE_TEST_FULL === '1';

/** `full` under `npm run test:full`, else `quick`. */
export function sized<T>(full: T, quick: T): T {
  return FULL ? full : quick;
}

/**
 * Whether pair (`i`, `j`) of a grid runs: all of them under `npm run test:full`, else one in
 * `stride`, spread so that every row and every column keeps some (a diagonal pattern over i + j).
 */
export function gridPairRuns(i: number, j: number, stride: number): boolean {
  return FULL || (i + j) % stride === 0;
}
