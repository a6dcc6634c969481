import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import type { DiffCategory } from '../../epochs/scope.js';
import {
  batchOptions,
  epochSpec,
  inputProgress,
  openStoreReadOnly,
  requireScope,
  type GlobalOptions,
  type InputOptions,
} from '../context.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, writeAll } from '../output.js';
import { diffAgainst } from './diff-against.js';

interface DiffOptions extends GlobalOptions, InputOptions {
  readonly from?: string;
  readonly to?: string;
  readonly print?: string;
  readonly against?: string;
}

const CATEGORIES: readonly DiffCategory[] = ['both', 'only-from', 'only-to', 'neither'];

/**
 * Compares two epochs over the input URLs. Prints `CATEGORY<TAB>URL` per URL, or only the URLs of
 * one category with --print; the counts go to stderr (or stdout with --json).
 */
export async function diff(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<DiffOptions>();
  if (options.against !== undefined) {
    if (options.from !== undefined || options.to !== undefined || options.print !== undefined) {
      throw new SeenStoreError('USAGE', 'diff --against takes no --from, --to or --print');
    }
    return diffAgainst(file, command);
  }
  if (options.from === undefined || options.to === undefined)
    throw new SeenStoreError('USAGE', 'diff needs --from A and --to B');
  const from = epochSpec(options.from, 'previous');
  const to = epochSpec(options.to, 'current');
  const only = options.print as DiffCategory | undefined;
  if (only !== undefined && !CATEGORIES.includes(only)) {
    throw new SeenStoreError(
      'USAGE',
      `--print must be one of ${CATEGORIES.join(', ')}, got ${JSON.stringify(options.print)}`,
    );
  }
  const store = await openStoreReadOnly(options);
  try {
    const scope = await requireScope(store, options);
    const totals: Record<DiffCategory, number> = { both: 0, 'only-from': 0, 'only-to': 0, neither: 0 };
    let epochs = { from: 0, to: 0 };
    const progress = inputProgress(
      'diff',
      file,
      () => `${formatCount(totals['only-to'])} only-to, ${formatCount(totals['only-from'])} only-from`,
    );
    const counts = await forEachBatch(
      openInputChunks(file),
      { ...batchOptions(options, await scope.normalizeMode()), progress },
      async (lines) => {
        const result = await scope.diff(lines, from, to);
        epochs = { from: result.from, to: result.to };
        let out = '';
        for (let i = 0; i < lines.length; i++) {
          const category = result.categories[i]!;
          totals[category]++;
          if (options.json) continue;
          if (only === undefined) out += `${category}\t${lines[i]}\n`;
          else if (category === only) out += `${lines[i]}\n`;
        }
        await writeAll(process.stdout, out);
      },
    );
    const summary = { ...epochs, read: counts.read, invalid: counts.invalid, counts: totals };
    if (options.json) await writeAll(process.stdout, `${JSON.stringify(summary)}\n`);
    else {
      process.stderr.write(
        `epoch ${epochs.from} vs ${epochs.to}: both ${totals.both}, only-from ${totals['only-from']}, only-to ${totals['only-to']}, neither ${totals.neither}\n`,
      );
    }
  } finally {
    await store.close();
  }
}
