import { SeenStoreError } from '../errors.js';
import type { StoreEnv } from '../store/lmdb/env.js';
import { EpochFilters } from '../store/lmdb/epoch-filters.js';
import { faultPoint } from '../store/faults.js';
import { checkpointKey, epochKey, scopeKey } from '../store/lmdb/keys.js';
import { readEpochHeader, type EpochHeader } from '../store/records.js';
import type { NormalizeMode } from '../url/normalize.js';
import { parseStrategy, strategyOf } from '../filters/strategy.js';
import { emptyCheckpoint, newEpochHeader, type EpochPlan } from './create.js';
import { capacityFromHistory } from './sizing-policy.js';

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
   * Rotate only if epoch N is the open epoch, checked inside the rotation's write transaction, so
   * that two schedulers asking for the same rotation rotate once: the later one finds N sealed and
   * rotates nothing (Scope.rotate then returns null).
   */
  readonly ifEpoch?: number;
}

export interface Rotation {
  readonly sealed: EpochHeader;
  readonly opened: EpochHeader;
}

/**
 * Seals the open epoch and opens the next, with fresh seeds and a capacity from the sizing
 * policy, in one LMDB write transaction: a crash leaves either the old epoch open or the new one,
 * never both or neither. `open` must be the loaded open epoch; it is caught up inside the
 * transaction, so the sealed counts include every add committed before the rotation.
 */
export function rotate(env: StoreEnv, scope: string, open: EpochFilters, options: RotateOptions): Rotation | null {
  const rotation = env.write(() => {
    const record = EpochFilters.readScope(env, scope);
    if (record === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${scope} does not exist`);
    if (options.ifEpoch !== undefined && record.openEpoch !== options.ifEpoch) return null;
    open.catchUp();
    const current = open.header;
    if (current.state !== 'open' || record.openEpoch !== current.epoch) {
      throw new SeenStoreError('EPOCH_SEALED', `epoch ${scope}/${current.epoch} is no longer open`);
    }
    const summary = open.summary();
    const now = Date.now();
    const sealed: EpochHeader = {
      ...current,
      state: 'sealed',
      sealedAtMs: now,
      final: {
        submitted: summary.submitted,
        added: summary.added,
        estimatedDistinct: summary.estimatedDistinct,
        fillRatio: summary.fillRatio,
        estimatedFpr: summary.estimatedFpr,
      },
    };
    const beforeValue = env.getMeta(epochKey(scope, current.epoch - 1));
    const before = beforeValue === undefined ? undefined : readEpochHeader(beforeValue);
    const fromHistory = capacityFromHistory(current, summary.estimatedDistinct, before);
    const fprTarget = options.fprTarget ?? current.fprTarget;
    const plan: EpochPlan = {
      capacityUrls: options.capacityUrls ?? fromHistory.capacityUrls,
      fprTarget,
      strategy: options.strategy !== undefined ? parseStrategy(options.strategy) : strategyOf(current.slices[0]!, current.growth),
      normalize: current.normalize as NormalizeMode,
      sizing:
        options.capacityUrls === undefined
          ? fromHistory.sizing
          : { policy: 'explicit', reason: 'capacity given by the caller', inputs: { capacityUrls: options.capacityUrls, fprTarget } },
      ...(options.seeds === undefined ? {} : { seeds: options.seeds }),
    };
    const next = current.epoch + 1;
    const opened = newEpochHeader(scope, next, plan);
    env.putMeta(epochKey(scope, current.epoch), sealed);
    env.putMeta(epochKey(scope, next), opened);
    env.putMeta(checkpointKey(scope, next), emptyCheckpoint(now));
    env.putMeta(scopeKey(scope), { ...record, openEpoch: next });
    faultPoint('rotate:before-commit');
    return { sealed, opened };
  });
  faultPoint('rotate:after-commit');
  return rotation;
}
