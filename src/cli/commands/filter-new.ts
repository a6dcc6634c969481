import type { Command } from 'commander';
import { batchOptions, openStore, pinnedEpoch, scopeName, scopeOptions, type GlobalOptions, type InputOptions, type PlanOptions } from '../context.js';
import { forEachBatch, openInput } from '../input.js';
import { Progress, formatCount, writeAll } from '../output.js';

type Options = GlobalOptions & InputOptions & PlanOptions & { readonly epoch?: string };

/**
 * The main job: print each input URL not seen before, and record it. A URL is printed only after
 * its batch is durable, so what was printed is in the store even if the process is killed.
 */
export async function filterNew(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<Options>();
  const store = await openStore(options, true);
  try {
    const scope = store.scope(scopeName(options), scopeOptions(options));
    const pin = pinnedEpoch(options.epoch);
    const progress = new Progress(true);
    let printed = 0;
    const counts = await forEachBatch(openInput(file), batchOptions(options, scope.normalizeMode()), async (lines) => {
      const answers = await scope.addIfAbsent(lines, pin);
      let out = '';
      for (let i = 0; i < lines.length; i++) {
        if (answers[i]) {
          out += `${lines[i]}\n`;
          printed++;
        }
      }
      await writeAll(process.stdout, out);
      progress.update(() => `filter-new: ${formatCount(printed)} new`);
    });
    progress.done();
    if (options.json) {
      process.stderr.write(`${JSON.stringify({ read: counts.read, new: printed, seen: counts.read - printed, invalid: counts.invalid })}\n`);
    }
  } finally {
    await store.close();
  }
}
