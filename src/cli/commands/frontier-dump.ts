import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { DUMP_BATCH_LINES_DEFAULT, exportDumpLines, importDump } from '../../urlfrontier/dump.js';
import { inform, openStore, parseCount, parseFpr, warn, type GlobalOptions } from '../context.js';
import { openInput } from '../input.js';
import { stopOnSignals } from '../interrupt.js';
import { formatCount, summaryText } from '../output.js';

type ImportOptions = GlobalOptions & {
  readonly onInvalid?: string;
  readonly batchSize?: string;
  readonly capacity?: string;
  readonly fpr?: string;
};

/**
 * `frontier import [FILE]`: a DumpURLs file of the reference URLFrontier client (gzipped or not)
 * into the store's frontiers, each line into the scope of its crawl (or all into --scope).
 */
export async function frontierImport(file: string | undefined, command: Command): Promise<void> {
  const startMs = Date.now();
  const options = command.optsWithGlobals<ImportOptions>();
  const batchLines = parseCount('batch-size', options.batchSize) ?? DUMP_BATCH_LINES_DEFAULT;
  const capacityUrls = parseCount('capacity', options.capacity);
  const fprTarget = parseFpr(options.fpr);
  const signal = stopOnSignals();
  const store = await openStore(options, true, file);
  const input = openInput(file);
  try {
    const counts = await importDump(store, input, {
      batchLines,
      onInvalid: options.onInvalid === 'skip' ? 'skip' : 'fail',
      ...(options.scope === undefined ? {} : { scope: options.scope }),
      scopeOptions: {
        create: options.create !== false,
        ...(capacityUrls === undefined ? {} : { capacityUrls }),
        ...(fprTarget === undefined ? {} : { fprTarget }),
      },
      warn,
      signal,
    });
    const { scopes, ...numbers } = counts;
    if (options.json) process.stdout.write(`${JSON.stringify(counts)}\n`);
    else
      inform(
        options,
        `frontier import: ${summaryText(numbers, Date.now() - startMs)} (scopes: ${scopes.join(', ') || 'none'})`,
      );
  } finally {
    input.destroy();
    await store.close();
  }
}

/**
 * `frontier export [--out FILE]`: the frontiers of every scope (or of --scope) as a DumpURLs
 * file, gzipped when FILE ends in .gz; stdout without --out. A file is written beside its name and
 * renamed into place once complete, so a failed export leaves no file that looks whole.
 */
export async function frontierExport(command: Command): Promise<void> {
  const startMs = Date.now();
  const options = command.optsWithGlobals<GlobalOptions & { readonly out?: string }>();
  const signal = stopOnSignals();
  const store = await openStore(options, false);
  let lines = 0;
  try {
    if (options.scope !== undefined && !(await store.scopeNames()).includes(options.scope)) {
      throw new SeenStoreError('NOT_FOUND', `scope ${options.scope} does not exist (nothing was ever added to it)`);
    }
    const source = Readable.from(
      counted(
        exportDumpLines(store, { ...(options.scope === undefined ? {} : { scopes: [options.scope] }), signal }),
        (n) => (lines += n),
      ),
    );
    if (options.out === undefined) await pipeline(source, process.stdout as Writable, { end: false });
    else await writeFileAtomically(source, options.out);
  } finally {
    await store.close();
  }
  inform(
    options,
    `frontier export: ${formatCount(lines)} URLs in ${((Date.now() - startMs) / 1000).toFixed(2)} s${options.out === undefined ? '' : ` to ${options.out}`}`,
  );
}

async function* counted(pages: AsyncIterable<string>, add: (lines: number) => void): AsyncGenerator<string> {
  for await (const page of pages) {
    let n = 0;
    for (let i = page.indexOf('\n'); i >= 0; i = page.indexOf('\n', i + 1)) n++;
    add(n);
    yield page;
  }
}

async function writeFileAtomically(source: Readable, path: string): Promise<void> {
  const partial = `${path}.partial-${process.pid}`;
  try {
    if (path.endsWith('.gz')) await pipeline(source, createGzip(), createWriteStream(partial, { flags: 'wx' }));
    else await pipeline(source, createWriteStream(partial, { flags: 'wx' }));
    renameSync(partial, path);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
}
