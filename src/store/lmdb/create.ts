import { existsSync, linkSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { asStoreError } from '../../errors.js';
import { faultPoint } from '../faults.js';
import { fsyncPath } from '../file-open.js';
import { removeDeadEntries, STAGING_LEFTOVER } from '../leftovers.js';
import { storeTraces } from './data-file.js';
import { StoreEnv } from './env.js';

/** A store being made by process PID inside its directory: `.seenstore-creating-PID-N`. */
const STAGING_PREFIX = '.seenstore-creating-';
let stagings = 0;

/** What link(2) answers on a file system without hard links (FAT, some FUSE and network mounts). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Makes a new store whole or not at all. LMDB creates `lock.mdb`, then `data.mdb`, then writes
 * its meta pages, and seenstore then writes the store header: a process killed in between would
 * leave an empty data file beside a lock file, or an environment without a header, which a later
 * open cannot tell from a store whose data was lost. So a store is built in a staging directory
 * inside its own directory — LMDB environment, open guard and header, committed and synced — and
 * its data file is hard-linked into place, which makes it appear whole or not at all; the link
 * is made durable by syncing the directory. The lock file and the open guard are not carried
 * over: LMDB and the guard create their own on the first open.
 *
 * Hence the rule that tells a half-made store from a damaged one: a store's `data.mdb` never
 * exists under its final name until it is complete. A staging directory is a creation in
 * progress, or a creator killed: the next open or creation removes it once its pid is dead.
 * An empty or missing `data.mdb` beside a store's other files is always damage
 * (data-file.ts refuses it), never a creation to finish.
 *
 * The directory may be missing (it is made, with its parents: an empty directory is not a store),
 * empty, or hold other files (a crawl's folder); it is never renamed, so it may be a mount point
 * or sit in a parent this process cannot write. Several processes creating one store each stage
 * their own; link(2) refuses to replace an existing name, so the first link wins and the others
 * drop their staging and open the winner's store.
 */
export async function createStoreWhole(dir: string, mapSizeBytes: number): Promise<void> {
  if (!needsCreation(dir)) return;
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw asStoreError(error, `creating the store directory ${dir}`);
  }
  removeDeadEntries(dir, STAGING_LEFTOVER);
  // Earlier builds staged beside the directory: their killed creators' leftovers go too.
  removeDeadEntries(dirname(dir), STAGING_LEFTOVER);
  const staging = join(dir, `${STAGING_PREFIX}${process.pid}-${stagings++}`);
  try {
    // Made here without `recursive`: Node's recursive mkdir loops for ever where the parent exists
    // and refuses new entries with ENOENT (/proc).
    mkdirSync(staging);
    await StoreEnv.open(staging, { create: true, mapSizeBytes }).close();
    faultPoint('create:before-link');
    linkIntoPlace(join(staging, 'data.mdb'), join(dir, 'data.mdb'));
    fsyncPath(dir);
  } catch (error) {
    throw asStoreError(error, `creating the store at ${dir}`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Whether `dir` holds no store yet: it is missing, or a directory without a data file and without
 * the files only a store that was opened has (data-file.ts refuses those as lost data).
 */
function needsCreation(dir: string): boolean {
  try {
    // stat, not lstat: --store may name a symbolic link to the directory.
    if (!statSync(dir).isDirectory()) return false;
  } catch (error) {
    return (error as { code?: string }).code === 'ENOENT';
  }
  return !existsSync(join(dir, 'data.mdb')) && storeTraces(dir).length === 0;
}

/**
 * Gives the staged data file its final name, unless another creator's store took it first. Where
 * the file system has no hard links, a rename does it: a rename replaces an existing name, so of
 * two creators racing there within the moment between the check and the rename, the one whose
 * file was replaced fails at its first write (STORE_LOCKED: env.ts checks the data file is the
 * one it opened), having acknowledged nothing.
 */
function linkIntoPlace(staged: string, final: string): void {
  try {
    linkSync(staged, final);
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    if (code === 'EEXIST') return;
    if (!NO_HARD_LINKS.has(code)) throw error;
    if (!existsSync(final)) renameSync(staged, final);
  }
}
