import type { EpochStats, ScopeStats } from '../epochs/scope.js';

/** One thing `stats --check` found wrong. */
export interface Finding {
  readonly scope: string;
  readonly epoch: number;
  readonly problem: 'past-capacity' | 'fpr-above-target';
  readonly message: string;
}

/**
 * An epoch is past its capacity when it grew a slice or its estimated distinct URLs exceed the
 * plan. That needs action only while the epoch is open (rotate with a larger capacity; a sealed
 * epoch's size is history), so only open epochs are checked for it. An estimated false-positive
 * rate above the target breaks the epoch's promise wherever it is queried, sealed or open.
 */
export function pastCapacity(e: EpochStats): boolean {
  return e.slices > 1 || e.estimatedDistinct > e.capacityUrls;
}

export function checkScopes(scopes: readonly ScopeStats[]): Finding[] {
  const findings: Finding[] = [];
  for (const scope of scopes) {
    for (const e of scope.epochs) {
      if (e.state === 'open' && pastCapacity(e)) {
        findings.push({
          scope: scope.scope,
          epoch: e.epoch,
          problem: 'past-capacity',
          message: `~${e.estimatedDistinct} distinct URLs against a capacity of ${e.capacityUrls} (${e.slices} slice${e.slices === 1 ? '' : 's'}): rotate with a larger --capacity`,
        });
      }
      if (e.estimatedFpr > e.fprTarget) {
        findings.push({
          scope: scope.scope,
          epoch: e.epoch,
          problem: 'fpr-above-target',
          message: `estimated FPR ${e.estimatedFpr.toExponential(2)} above its target ${e.fprTarget}`,
        });
      }
    }
  }
  return findings;
}
