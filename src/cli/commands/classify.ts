import type { Command } from 'commander';
import {
  batchOptions,
  inputProgress,
  openStoreReadOnly,
  requireScope,
  type GlobalOptions,
  type InputOptions,
} from '../context.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, writeAll } from '../output.js';

/** Prints `new<TAB>URL` or `revisit<TAB>URL`: against the previous epoch (the last crawl). */
export async function classify(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & InputOptions>();
  const store = await openStoreReadOnly(options);
  try {
    const scope = await requireScope(store, options);
    const totals = { new: 0, revisit: 0 };
    const progress = inputProgress(
      'classify',
      file,
      () => `${formatCount(totals.new)} new, ${formatCount(totals.revisit)} revisits`,
    );
    const counts = await forEachBatch(
      openInputChunks(file),
      { ...batchOptions(options, await scope.normalizeMode()), progress },
      async (lines) => {
        const classes = await scope.classify(lines);
        let out = '';
        for (let i = 0; i < lines.length; i++) {
          totals[classes[i]!]++;
          if (!options.json) out += `${classes[i]}\t${lines[i]}\n`;
        }
        await writeAll(process.stdout, out);
      },
    );
    if (options.json)
      await writeAll(process.stdout, `${JSON.stringify({ read: counts.read, invalid: counts.invalid, ...totals })}\n`);
  } finally {
    await store.close();
  }
}
