import type { Command } from 'commander';
import { DEFAULT_CAPACITY_URLS, DEFAULT_FPR_TARGET } from '../../epochs/create.js';
import { DEFAULT_PLANNED_SLICES, planSizing, type SizingPlan } from '../../epochs/plan.js';
import { parseStrategy } from '../../filters/strategy.js';
import { parseCount, parseFpr, storeDir, type GlobalOptions } from '../context.js';
import { driverFor } from '../../store/open.js';
import { formatCount, table } from '../output.js';

interface PlanCommandOptions extends GlobalOptions {
  readonly capacity?: string;
  readonly fpr?: string;
  readonly strategy?: string;
  readonly slices?: string;
}

/** The sizing calculator: what an epoch of this plan takes, and what each growth slice adds. */
export async function plan(command: Command): Promise<void> {
  const options = command.optsWithGlobals<PlanCommandOptions>();
  const result = planSizing(
    parseCount('capacity', options.capacity) ?? DEFAULT_CAPACITY_URLS,
    parseFpr(options.fpr) ?? DEFAULT_FPR_TARGET,
    parseStrategy(options.strategy ?? 'classic'),
    parseCount('slices', options.slices) ?? DEFAULT_PLANNED_SLICES,
    driverFor(storeDir(options)).capabilities.storedBytes,
  );
  process.stdout.write(options.json ? `${JSON.stringify(result)}\n` : render(result));
}

function render(plan: SizingPlan): string {
  const rows = plan.slices.map((s) => [
    String(s.index + 1),
    formatCount(s.capacityUrls),
    formatCount(s.totalCapacityUrls),
    String(s.k),
    formatCount(s.bits),
    formatCount(s.storedBytes),
    formatCount(s.totalStoredBytes),
    s.bitsPerUrl.toFixed(1),
    s.fprTarget.toExponential(2),
    s.totalFpr.toExponential(2),
  ]);
  return (
    `${plan.strategy}${plan.partitions === undefined ? '' : ` (${plan.partitions} partitions)`}, ${formatCount(plan.capacityUrls)} URLs at FPR ${plan.fprTarget}; past the capacity each new slice ` +
    `takes x${plan.growth.factor} the URLs at x${plan.growth.tightening} the error, so the epoch keeps its promise at any size\n` +
    table(
      ['slice', 'urls', 'total urls', 'k', 'bits', 'bytes', 'total bytes', 'bits/url', 'slice fpr', 'epoch fpr'],
      rows,
      1,
    )
  );
}
