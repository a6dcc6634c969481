import type { Command } from 'commander';
import {
  batchOptions,
  inform,
  inputProgress,
  openStore,
  pinnedEpoch,
  scopeOptions,
  warn,
  type GlobalOptions,
  type InputOptions,
  type PlanOptions,
} from '../context.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, summaryText } from '../output.js';
import { addingScope, noteGrowth } from '../scope-notes.js';

type Options = GlobalOptions & InputOptions & PlanOptions & { readonly epoch?: string };

/** Records URLs; prints a summary (stderr, or JSON on stdout). */
export async function add(file: string | undefined, command: Command): Promise<void> {
  const startMs = Date.now();
  const options = command.optsWithGlobals<Options>();
  const store = await openStore(options, true, file);
  try {
    const requested = scopeOptions(options);
    const { scope, watch, ready } = await addingScope(store, options, requested);
    const pin = pinnedEpoch(options.epoch);
    let added = 0;
    const progress = inputProgress('add', file, () => `${formatCount(added)} new`);
    const counts = await forEachBatch(
      openInputChunks(file),
      { ...batchOptions(options, await scope.normalizeMode()), progress },
      async (lines) => {
        await ready();
        added += (await scope.add(lines, pin)).added;
      },
    );
    // An input read whole without a batch (empty) still creates the scope with the plan given.
    await ready();
    await noteGrowth(scope, watch, warn);
    const summary = { read: counts.read, new: added, seen: counts.read - added, invalid: counts.invalid };
    if (options.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else inform(options, `add: ${summaryText(summary, Date.now() - startMs)}`);
  } finally {
    await store.close();
  }
}
