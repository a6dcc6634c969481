import type { EpochDetails, EpochStats, SeenStore } from '../index.js';

/** One epoch as the report shows it: its stats (Scope.stats), sizing decision and slices (from Scope.epoch). */
export interface ReportEpoch extends EpochStats {
  readonly sliceCapacities: readonly number[];
  readonly sizing: EpochDetails['sizing'];
  /**
   * A lower bound of the URLs new since the previous epoch that still exists: a set B has at least
   * |B| − |A| members outside A. The store keeps no per-URL history across epochs (each epoch has
   * its own seeds), so this bound from the estimated distinct counts is all it can say; null for a
   * scope's first epoch and after a gap left by pruning.
   */
  readonly newSincePreviousAtLeast: number | null;
}

/** A run of epoch numbers that are gone: pruned (numbers are never reused). */
export interface PrunedRange {
  readonly from: number;
  readonly to: number;
}

export interface ReportScope {
  readonly name: string;
  readonly openEpoch: number | null;
  readonly epochs: readonly ReportEpoch[];
  readonly pruned: readonly PrunedRange[];
}

export interface ReportData {
  readonly storeDir: string;
  readonly generatedAtMs: number;
  readonly version: string;
  readonly scopes: readonly ReportScope[];
}

/**
 * Reads what the report shows, through the public API only: each scope's stats and each epoch's
 * details. `scopes`: the scopes to include (default all).
 */
export async function collectReport(
  store: SeenStore,
  version: string,
  scopes?: readonly string[],
): Promise<ReportData> {
  const names = scopes ?? (await store.scopeNames());
  const collected: ReportScope[] = [];
  for (const name of names) collected.push(await collectScope(store, name));
  return { storeDir: store.dir, generatedAtMs: Date.now(), version, scopes: collected };
}

async function collectScope(store: SeenStore, name: string): Promise<ReportScope> {
  const scope = store.scope(name);
  const stats = await scope.stats();
  const epochs: ReportEpoch[] = [];
  for (const e of stats.epochs) {
    const details = await scope.epoch(e.epoch);
    const previous = epochs.at(-1);
    const adjacent = previous !== undefined && previous.epoch === e.epoch - 1;
    epochs.push({
      ...e,
      sliceCapacities: details.sliceDetails.map((s) => s.capacityUrls),
      sizing: details.sizing,
      newSincePreviousAtLeast: adjacent ? Math.max(0, e.estimatedDistinct - previous.estimatedDistinct) : null,
    });
  }
  return { name, openEpoch: stats.openEpoch, epochs, pruned: prunedRanges(epochs.map((e) => e.epoch)) };
}

/** The gaps in a scope's epoch numbers, from 1: the epochs that were pruned. */
export function prunedRanges(numbers: readonly number[]): PrunedRange[] {
  const ranges: PrunedRange[] = [];
  let expected = 1;
  for (const n of numbers) {
    if (n > expected) ranges.push({ from: expected, to: n - 1 });
    expected = n + 1;
  }
  return ranges;
}
