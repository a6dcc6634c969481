import type { Command } from 'commander';
import { SeenStore } from '../../epochs/seen-store.js';
import { storeDir, type GlobalOptions } from '../context.js';
import { SALVAGED_IN_PART_EXIT } from '../../errors.js';

/**
 * Copies everything readable of the store (damaged or not) into a new store at --to. The report
 * goes to stderr, one line per thing skipped and a summary (with --json, one JSON object on
 * stdout); exits 0 when everything was copied, SALVAGED_IN_PART_EXIT (20) when the copy was made
 * without something (docs/errors.md).
 */
export async function salvage(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { to: string }>();
  const report = await SeenStore.salvage(storeDir(options), options.to);
  if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  for (const s of report.skipped) process.stderr.write(`seenstore: skipped ${s.kind} ${s.where}: ${s.problem}\n`);
  for (const note of report.notes) process.stderr.write(`seenstore: note: ${note}\n`);
  process.stderr.write(
    `seenstore: salvaged ${report.from} into ${report.to}${report.complete ? ', complete' : `, IN PART (${report.skipped.length} skipped)`}: ` +
      `${report.scopes} scopes, ${report.epochs} epochs, ${report.chunks} chunks (${report.chunksFilled} filled with ones), ${report.journalRecords} journal records, ` +
      `${report.frontierUrls} frontier URLs (${report.leasesGivenBack} leases given back), ${report.deliveryRecords} undelivered batches\n`,
  );
  if (!report.complete) process.exitCode = SALVAGED_IN_PART_EXIT;
}
