import type { Command } from 'commander';
import { batchOptions, openStore, pinnedEpoch, scopeName, scopeOptions, type GlobalOptions, type InputOptions, type PlanOptions } from '../context.js';
import { forEachBatch, openInput } from '../input.js';
import { Progress, formatCount } from '../output.js';

type Options = GlobalOptions & InputOptions & PlanOptions & { readonly epoch?: string };

/** Records URLs; prints a summary (stderr, or JSON on stdout). */
export async function add(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<Options>();
  const store = await openStore(options, true);
  try {
    const scope = store.scope(scopeName(options), scopeOptions(options));
    const pin = pinnedEpoch(options.epoch);
    const progress = new Progress(true);
    let added = 0;
    const counts = await forEachBatch(openInput(file), batchOptions(options, await scope.normalizeMode()), async (lines) => {
      added += (await scope.add(lines, pin)).added;
      progress.update(() => `add: ${formatCount(added)} new`);
    });
    progress.done();
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
