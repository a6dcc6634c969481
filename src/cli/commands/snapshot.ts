import type { Command } from 'commander';
import { SeenStore } from '../../epochs/seen-store.js';
import { SeenStoreError } from '../../errors.js';
import { openStore, parseCount, storeDir, type GlobalOptions } from '../context.js';
import { formatCount, table } from '../output.js';
import { stopOnSignals } from '../interrupt.js';

/** `snapshot create [NAME]`: a consistent copy of the whole store while writers keep running. */
export async function snapshotCreate(name: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { out?: string }>();
  if (name !== undefined && options.out !== undefined)
    throw new SeenStoreError(
      'USAGE',
      'snapshot create takes a NAME or --out DIR, not both (the last part of DIR names the snapshot)',
    );
  const signal = stopOnSignals();
  const store = await openStore(options, false);
  try {
    const snapshot =
      options.out === undefined
        ? await store.snapshot(name, { signal })
        : await store.snapshotTo(options.out, { signal });
    if (options.json) process.stdout.write(`${JSON.stringify(snapshot)}\n`);
    else process.stdout.write(`snapshot ${snapshot.name}: ${formatCount(snapshot.bytes)} bytes at ${snapshot.path}\n`);
  } finally {
    await store.close();
  }
}

export async function snapshotList(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(options, false);
  try {
    const snapshots = await store.snapshots();
    if (options.json) {
      process.stdout.write(`${JSON.stringify(snapshots)}\n`);
      return;
    }
    const rows = snapshots.map((s) => [
      s.name,
      new Date(s.createdAtMs).toISOString(),
      s.reason,
      String(s.formatVersion),
      formatCount(s.bytes),
    ]);
    process.stdout.write(table(['name', 'created', 'reason', 'format', 'bytes'], rows, 3));
  } finally {
    await store.close();
  }
}

/**
 * `snapshot prune --keep-last N`: deletes all but the N newest snapshots in the store, whatever
 * made them (user, pre-restore, pre-migrate), so that automatic safety snapshots do not pile up.
 */
export async function snapshotPrune(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { keepLast?: string }>();
  const keepLast = parseCount('keep-last', options.keepLast, 0);
  if (keepLast === undefined) throw new SeenStoreError('USAGE', 'snapshot prune needs --keep-last N');
  const store = await openStore(options, false);
  try {
    const oldestFirst = await store.snapshots();
    const doomed = oldestFirst.slice(0, Math.max(0, oldestFirst.length - keepLast));
    for (const snapshot of doomed) await store.deleteSnapshot(snapshot.name);
    const kept = oldestFirst.length - doomed.length;
    if (options.json) {
      process.stdout.write(
        `${JSON.stringify({ deleted: doomed.map((s) => ({ name: s.name, reason: s.reason, createdAtMs: s.createdAtMs, bytes: s.bytes })), kept })}\n`,
      );
      return;
    }
    for (const s of doomed)
      process.stdout.write(
        `deleted snapshot ${s.name} (${s.reason}, ${new Date(s.createdAtMs).toISOString()}), freed ${formatCount(s.bytes)} bytes\n`,
      );
    process.stdout.write(`${formatCount(kept)} snapshot${kept === 1 ? '' : 's'} kept\n`);
  } finally {
    await store.close();
  }
}

/** `snapshot restore NAME`: refuses while another process has the store open. */
export async function snapshotRestore(name: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  // The copy and rename are not interrupted; a signal during them waits for them to finish.
  stopOnSignals();
  const snapshot = await SeenStore.restoreSnapshot(storeDir(options), name);
  if (options.json) process.stdout.write(`${JSON.stringify(snapshot)}\n`);
  else
    process.stdout.write(
      `restored snapshot ${snapshot.name} (taken ${new Date(snapshot.createdAtMs).toISOString()}); the data it replaced is snapshot ${snapshot.preRestore.name}\n`,
    );
}

export async function snapshotDelete(name: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(options, false);
  try {
    await store.deleteSnapshot(name);
    if (options.json) process.stdout.write(`${JSON.stringify({ deleted: name })}\n`);
    else process.stdout.write(`deleted snapshot ${name}\n`);
  } finally {
    await store.close();
  }
}

/** `migrate`: the store to this version's format, after a snapshot. */
export async function migrate(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { snapshot?: boolean }>();
  // The migration is one transaction after its snapshot; a signal waits for it to finish.
  stopOnSignals();
  const report = await SeenStore.migrate(storeDir(options), { snapshot: options.snapshot !== false });
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  if (report.steps.length === 0) {
    process.stdout.write(`store is at format ${report.to}: nothing to do\n`);
    return;
  }
  for (const step of report.steps)
    process.stdout.write(`format ${step.from} -> ${step.to}: ${step.summary} (${formatCount(step.changed)} records)\n`);
  process.stdout.write(
    `migrated from format ${report.from} to ${report.to}${report.snapshot === null ? ' (no snapshot taken)' : `; the old store is snapshot ${report.snapshot.name}`}\n`,
  );
}
