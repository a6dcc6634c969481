import type { Command } from 'commander';
import { batchOptions, inputProgress, openStore, pinnedEpoch, scopeName, scopeOptions, warn, type GlobalOptions, type InputOptions, type PlanOptions } from '../context.js';
import { forEachBatch, openInput } from '../input.js';
import { formatCount } from '../output.js';
import { noteGrowth, noteIgnoredPlan } from '../scope-notes.js';

type Options = GlobalOptions & InputOptions & PlanOptions & { readonly epoch?: string };

/** Records URLs; prints a summary (stderr, or JSON on stdout). */
export async function add(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<Options>();
  const store = await openStore(options, true);
  try {
    const requested = scopeOptions(options);
    const scope = store.scope(scopeName(options), requested);
    const pin = pinnedEpoch(options.epoch);
    const watch = await noteIgnoredPlan(scope, requested, warn);
    let added = 0;
    const progress = inputProgress('add', file, () => `${formatCount(added)} new`);
    const counts = await forEachBatch(openInput(file), { ...batchOptions(options, await scope.normalizeMode()), progress }, async (lines) => {
      added += (await scope.add(lines, pin)).added;
    });
    await noteGrowth(scope, watch, warn);
    const summary = { read: counts.read, new: added, seen: counts.read - added, invalid: counts.invalid };
    if (options.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      process.stderr.write(
        `read ${formatCount(summary.read)}, new ${formatCount(summary.new)}, already seen ${formatCount(summary.seen)}, invalid ${formatCount(summary.invalid)}\n`,
      );
    }
  } finally {
    await store.close();
  }
}
