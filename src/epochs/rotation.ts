import type { EpochSummary } from '../store/backend.js';
import type { EpochHeader } from '../store/records.js';
import type { NormalizeMode } from '../url/normalize.js';
import { parseStrategy, strategyOf } from '../filters/strategy.js';
import { newEpochHeader, type EpochPlan } from './create.js';
import { capacityFromHistory, carriedOver } from './sizing-policy.js';

export interface RotateOptions {
  /** Capacity of the new epoch; default: chosen from history (docs/epochs.md). */
  readonly capacityUrls?: number;
  /** Target FPR of the new epoch; default: the sealed epoch's. */
  readonly fprTarget?: number;
  /** Strategy of the new epoch (`classic`, `blocked`, `spatial:S`); default: the sealed epoch's. */
  readonly strategy?: string;
  /** Seeds of the new epoch instead of fresh ones (parallel crawlers that will merge; see ScopeOptions.seeds). */
  readonly seeds?: readonly string[];
  /**
   * Rotate only if epoch N is the open epoch, checked inside the rotation's atomic step, so
   * that two schedulers asking for the same rotation rotate once: the later one finds N sealed and
   * rotates nothing (Scope.rotate then returns null).
   */
  readonly ifEpoch?: number;
  /**
   * The rotation follows a deletion of the scope's contents (URLFrontier's DeleteCrawl): the
   * sealed epoch was cut short, so the new one keeps its capacity instead of being sized from
   * it (policy `carry-over`), and the rotation after it measures no growth against it.
   */
  readonly afterDeletion?: boolean;
}

/**
 * The next epoch of a rotation: fresh seeds (unless given), the sealed epoch's strategy and
 * target (unless given), and a capacity from the sizing policy over the sealed epoch's final
 * summary and the epoch before it (unless given). Pure: the backend calls it inside its atomic
 * rotation, with the counts of every add committed before it.
 */
export function planNextEpoch(
  options: RotateOptions,
  clock: () => number = Date.now,
): (current: EpochHeader, summary: EpochSummary, before: EpochHeader | undefined) => EpochHeader {
  return (current, summary, before) => {
    const fromHistory =
      options.afterDeletion === true
        ? carriedOver(current)
        : capacityFromHistory(current, summary.estimatedDistinct, before);
    const fprTarget = options.fprTarget ?? current.fprTarget;
    const plan: EpochPlan = {
      capacityUrls: options.capacityUrls ?? fromHistory.capacityUrls,
      fprTarget,
      strategy:
        options.strategy !== undefined
          ? parseStrategy(options.strategy)
          : strategyOf(current.slices[0]!, current.growth),
      normalize: current.normalize as NormalizeMode,
      sizing:
        options.capacityUrls === undefined
          ? fromHistory.sizing
          : {
              policy: 'explicit',
              reason: 'capacity given by the caller',
              inputs: { capacityUrls: options.capacityUrls, fprTarget },
            },
      ...(options.seeds === undefined ? {} : { seeds: options.seeds }),
    };
    return newEpochHeader(current.scope, current.epoch + 1, plan, clock());
  };
}
