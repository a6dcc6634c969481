import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { asStoreError } from '../../errors.js';
import { faultPoint } from '../faults.js';
import { fsyncPath } from '../file-open.js';
import { removeDeadEntries } from '../leftovers.js';
import { StoreEnv } from './env.js';

/** A store being made by process PID, beside the path it will have: `.seenstore-creating-PID-N`. */
const STAGING_PREFIX = '.seenstore-creating-';
const STAGING_LEFTOVER = /^\.seenstore-creating-(\d+)-\d+$/;
let stagings = 0;

/**
 * Makes a new store whole or not at all. LMDB creates `lock.mdb`, then `data.mdb`, then writes
 * its meta pages, and seenstore then writes the store header: a process killed in between left an
 * empty data file beside a lock file, or an environment without a header, and every later open
 * had to refuse it as lost data (it cannot tell a creator killed in its first moment from a store
 * whose data file was lost). So a store is built in a staging directory beside its path — LMDB
 * environment, open guard and header, committed and synced — and renamed into place, and the
 * rename is made durable by syncing the parent directory. A kill leaves only the staging
 * directory, which the next creation in that parent removes once its pid is dead.
 *
 * Only a path that does not exist or is an empty directory is created this way (rename replaces
 * an empty directory whole). Two processes creating the same store at once each build one; the
 * first rename wins and the other finds the path taken, drops its own and opens the winner's.
 * A non-empty directory without a data file is left to StoreEnv.open (created in place, or
 * refused as lost data when it holds a store's other files).
 */
export async function createStoreWhole(dir: string, mapSizeBytes: number): Promise<void> {
  if (!needsCreation(dir)) return;
  const parent = dirname(dir);
  try {
    mkdirSync(parent, { recursive: true });
  } catch (error) {
    throw asStoreError(error, `creating the directory ${parent} for the store ${dir}`);
  }
  removeDeadEntries(parent, STAGING_LEFTOVER);
  const staging = join(parent, `${STAGING_PREFIX}${process.pid}-${stagings++}`);
  try {
    await StoreEnv.open(staging, { create: true, mapSizeBytes }).close();
    faultPoint('create:before-rename');
    if (!renamedInPlace(staging, dir)) return;
    fsyncPath(parent);
  } catch (error) {
    throw asStoreError(error, `creating the store at ${dir}`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Whether `dir` is missing or an empty directory (anything else is not ours to replace). */
function needsCreation(dir: string): boolean {
  try {
    return statSync(dir).isDirectory() && readdirSync(dir).length === 0;
  } catch (error) {
    return (error as { code?: string }).code === 'ENOENT';
  }
}

/** Renames `staging` to `dir`; false when another creator's store (or anything else) took `dir` first. */
function renamedInPlace(staging: string, dir: string): boolean {
  try {
    renameSync(staging, dir);
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR') return false;
    throw error;
  }
}
