import type { Command } from 'commander';
import { batchOptions, inform, inputProgress, openStore, pinnedEpoch, scopeOptions, warn, type GlobalOptions, type InputOptions, type PlanOptions } from '../context.js';
import { forEachBatch, forEachUtf8Batch, openInputChunks, type InputCounts } from '../input.js';
import { formatCount, compactSelectedLines, summaryText, writeAll } from '../output.js';
import { addingScope, noteGrowth } from '../scope-notes.js';

type Options = GlobalOptions & InputOptions & PlanOptions & { readonly epoch?: string };

/**
 * The main job: print each input URL not seen before, and record it. A URL is printed only after
 * its batch is durable, so what was printed is in the store even if the process is killed. When
 * the epoch hashes lines as they are (normalisation `none`, or `url`: trimmed), lines stay bytes
 * from input to output: no string is made per line. Ends with its summary on stderr (JSON with --json, none with --quiet).
 */
export async function filterNew(file: string | undefined, command: Command): Promise<void> {
  const startMs = Date.now();
  const options = command.optsWithGlobals<Options>();
  const store = await openStore(options, true, file);
  try {
    const requested = scopeOptions(options);
    const { scope, watch, ready } = await addingScope(store, options, requested);
    const pin = pinnedEpoch(options.epoch);
    let printed = 0;
    const mode = await scope.normalizeMode();
    const progress = inputProgress('filter-new', file, () => `${formatCount(printed)} new`);
    let counts: InputCounts;
    if (mode === 'none' || mode === 'url') {
      // Two batches in flight: the next one is decided and committed while this one is printed.
      counts = await forEachUtf8Batch(openInputChunks(file), { ...batchOptions(options, mode), urlKeys: mode === 'url', inFlight: 2, progress }, async (lines, previous) => {
        await ready();
        const answers = await scope.addIfAbsentUtf8(lines, pin);
        await previous;
        for (const isNew of answers) if (isNew) printed++;
        await writeAll(process.stdout, compactSelectedLines(lines, answers));
      });
    } else {
      counts = await forEachBatch(openInputChunks(file), { ...batchOptions(options, mode), progress }, async (lines) => {
        await ready();
        const answers = await scope.addIfAbsent(lines, pin);
        let out = '';
        for (let i = 0; i < lines.length; i++) {
          if (answers[i]) {
            out += `${lines[i]}\n`;
            printed++;
          }
        }
        await writeAll(process.stdout, out);
      });
    }
    // An input read whole without a batch (empty) still creates the scope with the plan given.
    await ready();
    await noteGrowth(scope, watch, warn);
    const summary = { read: counts.read, new: printed, seen: counts.read - printed, invalid: counts.invalid };
    if (options.json) process.stderr.write(`${JSON.stringify(summary)}\n`);
    else inform(options, `filter-new: ${summaryText(summary, Date.now() - startMs)}`);
  } finally {
    await store.close();
  }
}
