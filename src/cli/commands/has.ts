import type { Command } from 'commander';
import {
  batchOptions,
  epochSpec,
  inputProgress,
  membershipMode,
  openStoreReadOnly,
  requireScope,
  type GlobalOptions,
  type InputOptions,
} from '../context.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, writeAll } from '../output.js';

interface HasOptions extends GlobalOptions, InputOptions {
  readonly invert?: boolean;
  readonly count?: boolean;
  readonly epochs?: string;
  readonly mode?: string;
}

/**
 * Prints the input URLs that are (probably) seen in the chosen epochs (default: the open one);
 * --invert prints the unseen ones; --count prints only counts.
 */
export async function has(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<HasOptions>();
  const epochs = epochSpec(options.epochs, 'current');
  const mode = membershipMode(options.mode);
  const store = await openStoreReadOnly(options);
  try {
    const scope = await requireScope(store, options);
    let seen = 0;
    const progress = inputProgress('has', file, () => `${formatCount(seen)} seen`);
    const counts = await forEachBatch(
      openInputChunks(file),
      { ...batchOptions(options, await scope.normalizeMode()), progress },
      async (lines) => {
        const answers = await scope.has(lines, { epochs, mode });
        let out = '';
        for (let i = 0; i < lines.length; i++) {
          if (answers[i]) seen++;
          if (!options.count && answers[i] !== Boolean(options.invert)) out += `${lines[i]}\n`;
        }
        await writeAll(process.stdout, out);
      },
    );
    if (options.count || options.json) {
      const summary = { read: counts.read, seen, unseen: counts.read - seen, invalid: counts.invalid };
      const text = options.json
        ? JSON.stringify(summary)
        : `seen ${seen}\nunseen ${summary.unseen}\ninvalid ${summary.invalid}`;
      await writeAll(options.count ? process.stdout : process.stderr, `${text}\n`);
    }
  } finally {
    await store.close();
  }
}
