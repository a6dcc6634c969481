import { renameSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { collectReport } from '../../report/collect.js';
import { renderReport } from '../../report/html.js';
import { openStoreReadOnly, requireScope, type GlobalOptions } from '../context.js';
import { packageVersion } from '../program.js';
import { writeAll } from '../output.js';

/**
 * `report [--scope S] [--out FILE.html]`: one self-contained HTML page of the store's epochs
 * (all scopes, or --scope's), on stdout or written to FILE (replaced whole, never half-written).
 */
export async function report(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { out?: string }>();
  const store = await openStoreReadOnly(options);
  let html: string;
  let summary: string;
  try {
    const scopes = options.scope === undefined ? undefined : [(await requireScope(store, options)).name];
    const data = await collectReport(store, packageVersion(), scopes);
    html = renderReport(data);
    const epochs = data.scopes.reduce((sum, s) => sum + s.epochs.length, 0);
    summary = `${data.scopes.length} scope${data.scopes.length === 1 ? '' : 's'}, ${epochs} epoch${epochs === 1 ? '' : 's'}`;
  } finally {
    await store.close();
  }
  if (options.out === undefined) {
    await writeAll(process.stdout, html);
    return;
  }
  const temporary = `${options.out}.tmp-${process.pid}`;
  writeFileSync(temporary, html);
  renameSync(temporary, options.out);
  process.stdout.write(
    options.json
      ? `${JSON.stringify({ out: options.out, bytes: Buffer.byteLength(html) })}\n`
      : `wrote ${options.out} (${summary}, ${Buffer.byteLength(html).toLocaleString('en-US')} bytes)\n`,
  );
}
