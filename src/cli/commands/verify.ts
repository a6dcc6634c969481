import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { ExportedEpoch } from '../../epochs/exported.js';
import { SeenStore } from '../../epochs/seen-store.js';
import { storeDir, type GlobalOptions } from '../context.js';
import { stopOnSignals } from '../interrupt.js';

/**
 * Checks the whole store and reports every damage with its place; exits with STORE_CORRUPT's code
 * (6) when anything is damaged, 0 when the store is sound.
 */
export async function verify(files: string[], command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  if (files.length > 0) return verifyFiles(files, options);
  const report = await SeenStore.verify(storeDir(options));
  if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    for (const d of report.damage) process.stdout.write(`DAMAGE ${d.where}: ${d.problem}\n`);
    for (const note of report.notes) process.stdout.write(`note: ${note}\n`);
    process.stdout.write(
      `${report.ok ? 'ok' : 'DAMAGED'}: ${report.pages ?? 0} LMDB pages, ${report.scopes} scopes, ${report.epochs} epochs, ${report.chunks} chunks, ${report.journalRecords} journal records checked, ${report.damage.length} damaged\n`,
    );
  }
  if (!report.ok) process.exitCode = 6;
}

/** Checks export files whole (magic, version, header, every block's checksum, the file checksum). */
async function verifyFiles(files: readonly string[], options: GlobalOptions): Promise<void> {
  const results: { file: string; ok: boolean; code?: string; problem?: string; scope?: string; epoch?: number }[] = [];
  const signal = stopOnSignals();
  for (const file of files) {
    try {
      const exported = await ExportedEpoch.open(file, { signal });
      results.push({ file, ok: true, scope: exported.epoch.scope, epoch: exported.epoch.epoch });
    } catch (error) {
      if (
        !(error instanceof SeenStoreError) ||
        error.code === 'NOT_FOUND' ||
        error.code === 'INTERRUPTED' ||
        error.code === 'USAGE'
      )
        throw error;
      results.push({ file, ok: false, code: error.code, problem: error.message });
    }
  }
  const ok = results.every((r) => r.ok);
  if (options.json) process.stdout.write(`${JSON.stringify({ ok, files: results })}\n`);
  else {
    for (const r of results) {
      process.stdout.write(
        r.ok ? `ok ${r.file}: epoch ${r.scope}/${r.epoch}\n` : `DAMAGE ${r.file}: ${r.code} ${r.problem}\n`,
      );
    }
  }
  if (!ok) process.exitCode = 6;
}
