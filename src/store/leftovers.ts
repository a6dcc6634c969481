import { readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Temporary files of killed processes: a snapshot being written (`snapshots/.tmp-NAME-PID`) or
 * deleted (`snapshots/.deleting-NAME-PID`), a restore's incoming data and journal files
 * (`data.mdb.restoring-PID`, `data.mdb.restoring-PID.journal.log`), a compacted journal file being
 * written (`journal.log.new-PID`), an export file being written (`FILE.tmp-PID`), a store being
 * created (`.seenstore-creating-PID-N` in its directory, lmdb/create.ts). Each carries the pid
 * of its writer; the next command that meets one removes it when that process is gone, never
 * while it lives. Like LMDB's own reader table, this takes pids to mean the same processes for
 * every user of the store (one pid namespace).
 */
const STORE_LEFTOVER = /^(?:data\.mdb\.restoring|journal\.log\.new)-(\d+)(?:\.journal\.log)?$/;
/** A store being created (lmdb/create.ts): inside its directory (beside it in earlier builds). */
export const STAGING_LEFTOVER = /^\.seenstore-creating-(\d+)-\d+$/;
const SNAPSHOT_LEFTOVER = /^\.(?:tmp|deleting)-.+-(\d+)$/;

/** Whether process `pid` exists (EPERM: it does, under another user). */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/** Removes the entries of `dir` whose name matches `pattern` and whose pid (group 1) is dead. */
export function removeDeadEntries(dir: string, pattern: RegExp): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const pid = pattern.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || processAlive(Number(pid))) continue;
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
      removed.push(join(dir, name));
    } catch {
      // Removing a leftover is housekeeping: one that cannot be removed now is tried next time.
    }
  }
  return removed;
}

/** Removes the store's leftovers of dead processes (restores, snapshots, creations); returns their paths. */
export function removeStoreLeftovers(storeDir: string, snapshotsDir: string): string[] {
  return [
    ...removeDeadEntries(storeDir, STORE_LEFTOVER),
    ...removeDeadEntries(storeDir, STAGING_LEFTOVER),
    ...removeDeadEntries(snapshotsDir, SNAPSHOT_LEFTOVER),
  ];
}

/** Removes the temporary files that dead writers of export file `path` left beside it. */
export function removeExportLeftovers(path: string): string[] {
  const prefix = basename(path).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return removeDeadEntries(dirname(path), new RegExp(`^${prefix}\\.tmp-(\\d+)$`));
}
