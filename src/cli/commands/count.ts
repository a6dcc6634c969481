import type { Command } from 'commander';
import {
  batchOptions,
  epochSpec,
  inputProgress,
  openStore,
  openStoreReadOnly,
  requireScope,
  type GlobalOptions,
  type InputOptions,
} from '../context.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, writeAll } from '../output.js';

type CountOptions = GlobalOptions & InputOptions & { readonly epochs?: string };

/**
 * `count`: for a scope of the counting strategy, prints `N<TAB>URL` for each input URL: how many
 * times it was added (minus deletes) in the chosen epochs (default: the open one).
 */
export async function countCommand(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<CountOptions>();
  const epochs = epochSpec(options.epochs, 'current');
  const store = await openStoreReadOnly(options);
  try {
    const scope = await requireScope(store, options);
    let held = 0;
    const progress = inputProgress('count', file, () => `${formatCount(held)} held`);
    await forEachBatch(
      openInputChunks(file),
      { ...batchOptions(options, await scope.normalizeMode()), progress },
      async (lines) => {
        const counts = await scope.count(lines, { epochs });
        let out = '';
        for (let i = 0; i < lines.length; i++) {
          if (counts[i]! > 0) held++;
          out += `${counts[i]}\t${lines[i]}\n`;
        }
        await writeAll(process.stdout, out);
      },
    );
  } finally {
    await store.close();
  }
}

/** `delete`: takes one occurrence of each input URL out of a counting scope's open epoch. */
export async function deleteCommand(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & InputOptions>();
  const store = await openStore(options, false);
  try {
    const scope = await requireScope(store, options);
    let deleted = 0;
    const progress = inputProgress('delete', file, () => `${formatCount(deleted)} deleted`);
    const counts = await forEachBatch(
      openInputChunks(file),
      { ...batchOptions(options, await scope.normalizeMode()), progress },
      async (lines) => {
        deleted += await scope.delete(lines);
      },
    );
    const summary = { read: counts.read, deleted, absent: counts.read - deleted, invalid: counts.invalid };
    if (options.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else
      process.stderr.write(
        `read ${formatCount(summary.read)}, deleted ${formatCount(deleted)}, not held ${formatCount(summary.absent)}, invalid ${formatCount(summary.invalid)}\n`,
      );
  } finally {
    await store.close();
  }
}
