/**
 * Part 10, engine states (issue 43): the long form of test/engine-states.test.ts. Seeded rounds of
 * fresh child processes (two at once every third round) drive one LMDB store through every
 * operation of seen-sets, a counting scope and the frontier; after each round the page walk must
 * find nothing, and every other round verify and a reopen must hold every acknowledged URL.
 */
import { engineStates } from '../test/helpers/engine-states.js';
import type { SoakContext } from './context.js';

const STEPS_PER_CHILD = 60;

export interface EngineStatesResult {
  readonly seeds: number;
  readonly rounds: number;
  /** Overflow runs longer than their value seen by the walks (the state the old check refused). */
  readonly longRuns: number;
  readonly seconds: number;
}

export async function engineStatesPart(ctx: SoakContext, seeds: number, rounds: number): Promise<EngineStatesResult> {
  const started = Date.now();
  let longRuns = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    try {
      longRuns += (await engineStates(seed, rounds, STEPS_PER_CHILD)).longRuns;
    } catch (error) {
      ctx.fail(`engine states, seed ${seed}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { seeds, rounds, longRuns, seconds: Math.round((Date.now() - started) / 1000) };
}
