import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import type { VerifyReport } from '../../store/verify.js';
import { openStore, storeDir, type GlobalOptions } from '../context.js';

/**
 * Checks the whole store and reports every damage with its place; exits with STORE_CORRUPT's code
 * (6) when anything is damaged, 0 when the store is sound.
 */
export async function verify(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  let report: VerifyReport;
  try {
    const store = await openStore(options, false);
    try {
      report = store.verify();
    } finally {
      await store.close().catch(() => undefined);
    }
  } catch (error) {
    if (!(error instanceof SeenStoreError) || (error.code !== 'STORE_CORRUPT' && error.code !== 'FORMAT_UNSUPPORTED')) throw error;
    report = { ok: false, scopes: 0, epochs: 0, chunks: 0, journalRecords: 0, damage: [{ where: storeDir(options), problem: error.message, code: error.code }], notes: [] };
  }
  if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    for (const d of report.damage) process.stdout.write(`DAMAGE ${d.where}: ${d.problem}\n`);
    for (const note of report.notes) process.stdout.write(`note: ${note}\n`);
    process.stdout.write(
      `${report.ok ? 'ok' : 'DAMAGED'}: ${report.scopes} scopes, ${report.epochs} epochs, ${report.chunks} chunks, ${report.journalRecords} journal records checked, ${report.damage.length} damaged\n`,
    );
  }
  if (!report.ok) process.exitCode = 6;
}
