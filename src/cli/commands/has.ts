import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { batchOptions, openStore, scopeName, type GlobalOptions, type InputOptions } from '../context.js';
import { forEachBatch, openInput } from '../input.js';
import { writeAll } from '../output.js';

interface HasOptions extends GlobalOptions, InputOptions {
  readonly invert?: boolean;
  readonly count?: boolean;
}

/** Prints the input URLs that are (probably) seen; --invert prints the unseen ones; --count only counts. */
export async function has(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<HasOptions>();
  const store = await openStore(options, false);
  try {
    const name = scopeName(options);
    if (!store.scopeNames().includes(name)) {
      throw new SeenStoreError('NOT_FOUND', `scope ${name} does not exist in ${store.dir} (nothing was ever added to it)`);
    }
    const scope = store.scope(name);
    let seen = 0;
    const counts = await forEachBatch(openInput(file), batchOptions(options, scope), async (lines) => {
      const answers = scope.has(lines);
      let out = '';
      for (let i = 0; i < lines.length; i++) {
        if (answers[i]) seen++;
        if (!options.count && answers[i] !== Boolean(options.invert)) out += `${lines[i]}\n`;
      }
      await writeAll(process.stdout, out);
    });
    if (options.count || options.json) {
      const summary = { read: counts.read, seen, unseen: counts.read - seen, invalid: counts.invalid };
      const text = options.json ? JSON.stringify(summary) : `seen ${seen}\nunseen ${summary.unseen}\ninvalid ${summary.invalid}`;
      const stream = options.count ? process.stdout : process.stderr;
      await writeAll(stream, `${text}\n`);
    }
  } finally {
    await store.close();
  }
}
