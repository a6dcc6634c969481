import type { Command } from 'commander';
import { Delivery } from '../../epochs/delivery.js';
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
import { closeKeepingError, deliver, deliveringBatches, redeliver, stoppedRun } from '../delivered-output.js';
import { forEachBatch, forEachUtf8Batch, openInputChunks, type InputCounts } from '../input.js';
import { stopOnSignals } from '../interrupt.js';
import { formatCount, summaryText, withoutZero } from '../output.js';
import { addingScope, noteGrowth } from '../scope-notes.js';

type Options = GlobalOptions & InputOptions & PlanOptions & { readonly epoch?: string; readonly redeliver?: boolean };

/**
 * The main job: print each input URL not seen before, and record it, at least once whatever
 * happens (docs/reliability.md "Delivery"): each batch's new URLs are kept as undelivered in the
 * same durable commit that records them, and let go once the kernel took their bytes; a batch is
 * committed only once the output took the one before the batch in writing, so at most two are
 * recorded and not written. A run cut short (its reader gone, a signal, kill -9) leaves them, and
 * the next run on the scope prints them first. When the epoch hashes lines as they are
 * (normalisation `none`, or `url`: trimmed), lines stay bytes from input to output: no string is
 * made per line. Ends with its summary on stderr (JSON with --json, none with --quiet).
 */
export async function filterNew(file: string | undefined, command: Command): Promise<void> {
  const startMs = Date.now();
  const options = command.optsWithGlobals<Options>();
  const input = openInputChunks(file);
  const signal = stopOnSignals();
  const store = await openStore(options, true, file);
  let failing = false;
  let delivery: Delivery | undefined;
  let counts: InputCounts = { read: 0, invalid: 0 };
  let handled = 0;
  let printed = 0;
  let redelivered = 0;
  try {
    const requested = scopeOptions(options);
    const { scope, watch, ready } = await addingScope(store, options, requested);
    const pin = pinnedEpoch(options.epoch);
    const mode = await scope.normalizeMode();
    delivery = await Delivery.begin(scope, { redeliver: options.redeliver !== false });
    const run = delivery;
    redelivered = await redeliver(run, signal);
    const progress = inputProgress('filter-new', file, () => `${formatCount(printed)} new`);
    const batching = { ...deliveringBatches(batchOptions(options, mode)), progress, signal };
    if (mode === 'none' || mode === 'url') {
      // Two batches in flight: the next one is decided and committed while this one is written.
      counts = await forEachUtf8Batch(
        input,
        { ...batching, urlKeys: mode === 'url', inFlight: 2 },
        async (lines, previous) => {
          await ready();
          handled += lines.count;
          const { batch } = await run.addIfAbsentUtf8(lines, pin);
          await previous;
          await deliver(run, batch);
          printed += batch.urls;
        },
      );
    } else {
      counts = await forEachBatch(input, batching, async (lines) => {
        await ready();
        handled += lines.length;
        const { batch } = await run.addIfAbsent(lines, pin);
        await deliver(run, batch);
        printed += batch.urls;
      });
    }
    // An input read whole without a batch (empty) still creates the scope with the plan given.
    await ready();
    if (!(await run.finish()))
      warn(
        'warning: another run claimed some of the URLs this run printed while it waited on its reader: they will be printed again',
      );
    await noteGrowth(scope, watch, warn);
  } catch (error) {
    failing = true;
    throw await stoppedRun(
      error,
      delivery,
      `${formatCount(handled)} lines recorded, ${formatCount(printed + redelivered)} URLs written`,
    );
  } finally {
    input.destroy();
    await closeKeepingError(store, failing);
  }
  const summary = {
    read: counts.read,
    new: printed,
    seen: counts.read - printed,
    invalid: counts.invalid,
    redelivered,
  };
  if (options.json) process.stderr.write(`${JSON.stringify(summary)}\n`);
  else inform(options, `filter-new: ${summaryText(withoutZero(summary, 'redelivered'), Date.now() - startMs)}`);
}
