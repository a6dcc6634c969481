import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { mergeExportFiles } from '../../epochs/seen-store.js';
import { epochSpec, openStore, openStoreReadOnly, parseCount, requireScope, type GlobalOptions } from '../context.js';
import { stopOnSignals } from '../interrupt.js';
import { formatCount } from '../output.js';

/** `export --epoch N --out FILE`: one epoch to a portable, checksummed file. */
export async function exportCommand(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { epoch?: string; out?: string }>();
  if (options.out === undefined) throw new SeenStoreError('USAGE', 'export needs --out FILE');
  const signal = stopOnSignals();
  const store = await openStoreReadOnly(options);
  try {
    const result = await (await requireScope(store, options)).export(options.out, epochSpec(options.epoch, 'current'), {
      signal,
    });
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      const ratio = result.rawBytes === 0 ? 0 : (100 * result.fileBytes) / result.rawBytes;
      process.stdout.write(
        `exported ${result.scope}/${result.epoch} to ${result.path}: ${formatCount(result.fileBytes)} bytes (${ratio.toFixed(1)}% of the ${formatCount(result.rawBytes)} filter bytes)\n`,
      );
    }
  } finally {
    await store.close();
  }
}

/** `import FILE [--scope S] [--open]`: a new scope from an export file. */
export async function importCommand(file: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { open?: boolean }>();
  const signal = stopOnSignals();
  const store = await openStore(options, true);
  try {
    const result = await store.import(file, {
      signal,
      ...(options.scope === undefined ? {} : { scope: options.scope }),
      ...(options.open ? { open: true } : {}),
    });
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(
        `imported epoch ${result.imported} as scope ${result.scope}${result.openEpoch === result.imported ? ' (open, same seeds)' : ` (sealed; epoch ${result.openEpoch} is open)`}\n`,
      );
    }
  } finally {
    await store.close();
  }
}

/** `merge FILE... --into-epoch N` (into the store) or `merge FILE... --out FILE` (into a new export file). */
export async function mergeCommand(files: string[], command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { intoEpoch?: string; out?: string }>();
  if ((options.intoEpoch === undefined) === (options.out === undefined)) {
    throw new SeenStoreError(
      'USAGE',
      'merge needs exactly one of --into-epoch N (the open epoch of --scope) or --out FILE',
    );
  }
  const signal = stopOnSignals();
  if (options.out !== undefined) {
    const result = await mergeExportFiles(files, options.out, { signal });
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(
        `merged ${result.files} files into ${result.path}: ~${formatCount(result.estimatedDistinct)} distinct URLs, estimated FPR ${result.estimatedFpr.toExponential(2)}, ${formatCount(result.fileBytes)} bytes\n`,
      );
    }
    return;
  }
  const epoch = parseCount('into-epoch', options.intoEpoch)!;
  const store = await openStore(options, false);
  try {
    const result = await (await requireScope(store, options)).merge(files, epoch, { signal });
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(
        `merged ${result.files} files into ${result.scope}/${result.epoch}: ~${formatCount(result.estimatedNewUrls)} new URLs, ~${formatCount(result.estimatedDistinct)} distinct, estimated FPR ${result.estimatedFpr.toExponential(2)}\n`,
      );
    }
  } finally {
    await store.close();
  }
}
