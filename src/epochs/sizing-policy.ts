import type { EpochHeader, SizingDecision } from '../store/records.js';

/**
 * Sizing policy `history-v1` for the next epoch of a scope, from the epochs before it:
 *
 *   d1 = estimated distinct URLs of the epoch being sealed (from its fill)
 *   d0 = the same for the epoch before it, when there is one with d0 > 0
 *   growth = clamp(d1 / d0, 0.5, 2), or 1 without d0
 *   capacity = clamp(ceil(d1 * growth * 1.25), 1,000, 1,000,000,000)
 *
 * An empty sealed epoch (d1 = 0) passes its capacity on unchanged. The target FPR is inherited.
 * docs/epochs.md explains the choice of constants.
 */
export const HISTORY_HEADROOM = 1.25;
export const HISTORY_GROWTH_MIN = 0.5;
export const HISTORY_GROWTH_MAX = 2;
export const HISTORY_CAPACITY_MIN = 1_000;
export const HISTORY_CAPACITY_MAX = 1_000_000_000;

export interface CapacityChoice {
  readonly capacityUrls: number;
  readonly sizing: SizingDecision;
}

function distinct(header: EpochHeader | undefined): number | undefined {
  return header?.final?.estimatedDistinct;
}

/** Policy `carry-over`: the epoch after one emptied by a deletion keeps its capacity (nothing to learn from an epoch cut short). */
export const CARRY_OVER_POLICY = 'carry-over';

export function carriedOver(sealing: EpochHeader): CapacityChoice {
  return {
    capacityUrls: sealing.capacityUrls,
    sizing: {
      policy: CARRY_OVER_POLICY,
      reason: `epoch ${sealing.epoch} was emptied by a deletion: its capacity ${sealing.capacityUrls} carries over`,
      inputs: { previousEpoch: sealing.epoch, previousCapacity: sealing.capacityUrls },
    },
  };
}

/**
 * `before` is ignored when `sealing` was opened by a deletion (policy carry-over): growth is not
 * measured against an epoch cut short.
 */
export function capacityFromHistory(
  sealing: EpochHeader,
  distinctNow: number,
  before: EpochHeader | undefined,
): CapacityChoice {
  const d1 = distinctNow;
  const d0 = sealing.sizing.policy === CARRY_OVER_POLICY ? undefined : distinct(before);
  const inputs = {
    previousEpoch: sealing.epoch,
    previousDistinct: d1,
    previousCapacity: sealing.capacityUrls,
    earlierEpoch: sealing.sizing.policy === CARRY_OVER_POLICY ? null : (before?.epoch ?? null),
    earlierDistinct: d0 ?? null,
    headroom: HISTORY_HEADROOM,
  };
  if (d1 === 0) {
    return {
      capacityUrls: sealing.capacityUrls,
      sizing: {
        policy: 'history-v1',
        reason: `epoch ${sealing.epoch} stayed empty: its capacity ${sealing.capacityUrls} carries over`,
        inputs,
      },
    };
  }
  const rawGrowth = d0 !== undefined && d0 > 0 ? d1 / d0 : 1;
  const growth = Math.min(HISTORY_GROWTH_MAX, Math.max(HISTORY_GROWTH_MIN, rawGrowth));
  const wanted = Math.ceil(d1 * growth * HISTORY_HEADROOM);
  const capacityUrls = Math.min(HISTORY_CAPACITY_MAX, Math.max(HISTORY_CAPACITY_MIN, wanted));
  const growthText =
    d0 !== undefined && d0 > 0
      ? `growth x${growth.toFixed(3)} over epoch ${before!.epoch} (${d0} distinct${growth !== rawGrowth ? `, clamped from x${rawGrowth.toFixed(3)}` : ''})`
      : 'no earlier epoch to measure growth: x1';
  const clamped = capacityUrls !== wanted ? `, clamped to [${HISTORY_CAPACITY_MIN}, ${HISTORY_CAPACITY_MAX}]` : '';
  return {
    capacityUrls,
    sizing: {
      policy: 'history-v1',
      reason: `epoch ${sealing.epoch} had ~${d1} distinct URLs; ${growthText}; headroom x${HISTORY_HEADROOM} -> ${capacityUrls}${clamped}`,
      inputs: { ...inputs, growth },
    },
  };
}
