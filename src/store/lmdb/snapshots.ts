import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { StoreEnv } from './env.js';
import { faultPoint } from '../faults.js';
import { fsyncPath } from '../file-open.js';
import { JOURNAL_FILE } from './journal-file.js';
import { EXCLUSIVE_LOCK, tryLock } from './lock.js';
import { OpenGuard } from './open-guard.js';
import { safePoint } from '../interruption.js';
import { removeStoreLeftovers } from '../leftovers.js';
import { SNAPSHOTS_DIR } from './data-file.js';
import type { RestoreResult, SnapshotInfo } from '../backend.js';

export type { RestoreResult, SnapshotInfo };

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

interface SnapshotManifest {
  readonly v: 1;
  readonly name: string;
  readonly createdAtMs: number;
  readonly formatVersion: number;
  readonly reason: string;
}

function checkName(name: string): void {
  if (!NAME_PATTERN.test(name)) {
    throw new SeenStoreError(
      'USAGE',
      `invalid snapshot name ${JSON.stringify(name)}: use 1-64 of A-Z a-z 0-9 . _ - (not starting with . _ -)`,
    );
  }
}

/** A sortable UTC time stamp for default snapshot names: 20261122T181500Z-123 (ms). */
export function defaultSnapshotName(prefix: string, nowMs = Date.now()): string {
  const iso = new Date(nowMs).toISOString();
  return `${prefix}${iso.slice(0, 19).replace(/[-:]/g, '')}Z-${iso.slice(20, 23)}`;
}

/**
 * A consistent, point-in-time copy of the whole store while writers keep running: the journal file
 * is copied, then LMDB's whole-file copy reads everything in one read transaction, so every add
 * acknowledged before the snapshot started is in it (in the copied journal, or in the chunks of a
 * checkpoint that folded it), and none is half in (StoreEnv.backup).
 * Written under a temporary name, fsynced and renamed, so a listed snapshot is always complete.
 * The files are made read-only.
 */
export async function createSnapshot(
  env: StoreEnv,
  name: string,
  reason = 'user',
  formatVersion = env.header.formatVersion,
  signal?: AbortSignal,
): Promise<SnapshotInfo> {
  checkName(name);
  const root = join(env.dir, SNAPSHOTS_DIR);
  if (existsSync(join(root, name))) throw new SeenStoreError('USAGE', `snapshot ${name} exists`);
  const temporary = join(root, `.tmp-${name}-${process.pid}`);
  removeStoreLeftovers(env.dir, root);
  try {
    makeDirectory(root, temporary);
    const createdAtMs = Date.now();
    // Without MDB_NOSUBDIR, LMDB's copy writes data.mdb inside the directory it is given.
    await env.backup(temporary);
    faultPoint('snapshot:after-copy');
    // LMDB's copy cannot be stopped midway; its end is the safe point.
    await safePoint(signal, `creating snapshot ${name}`);
    return seal(root, temporary, { v: 1, name, createdAtMs, formatVersion, reason });
  } catch (error) {
    removeTemporary(temporary);
    throw asStoreError(error, `creating snapshot ${name}`);
  }
}

/**
 * Makes `temporary` inside `root`, and `root` first when it is missing: one level each, never
 * `recursive` (Node's recursive mkdir retries forever where mkdir answers ENOENT under a parent
 * that exists, as in /proc), so a path that cannot hold a directory fails at once.
 */
function makeDirectory(root: string, temporary: string): void {
  if (!existsSync(root)) mkdirSync(root);
  mkdirSync(temporary);
}

/**
 * Removes what a failed snapshot left. It never throws: the failure that got here is the one to
 * report (a temporary path under a regular file cannot even be unlinked, ENOTDIR).
 */
function removeTemporary(temporary: string): void {
  try {
    rmSync(temporary, { recursive: true, force: true });
  } catch {
    // Left for removeStoreLeftovers, which removes a dead process's temporary folders.
  }
}

/**
 * Completes a snapshot written in `temporary` (its data.mdb in place): writes its manifest, makes
 * both files durable and read-only, and renames the folder to the snapshot's name, so a listed
 * snapshot is always complete.
 */
function seal(
  root: string,
  temporary: string,
  manifest: SnapshotManifest & { readonly damage?: string },
): SnapshotInfo {
  writeFileSync(join(temporary, 'snapshot.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const file of ['data.mdb', 'snapshot.json', JOURNAL_FILE]) {
    if (file === JOURNAL_FILE && !existsSync(join(temporary, file))) continue;
    fsyncPath(join(temporary, file));
    chmodSync(join(temporary, file), 0o444);
  }
  renameSync(temporary, join(root, manifest.name));
  fsyncPath(root);
  return info(root, manifest.name);
}

/**
 * Keeps a damaged data file as snapshot `name`, byte for byte (LMDB's copy would follow its
 * damaged pages): a restore replaces a store that cannot be opened, and what it replaced stays for
 * inspection. Its manifest says `damaged` and format 0 (unknown); restoring it restores the damage.
 */
export function keepDamagedData(dir: string, name: string, problem: string): SnapshotInfo {
  checkName(name);
  const root = join(dir, SNAPSHOTS_DIR);
  const temporary = join(root, `.tmp-${name}-${process.pid}`);
  try {
    makeDirectory(root, temporary);
    const data = join(dir, 'data.mdb');
    if (existsSync(data)) copyFileSync(data, join(temporary, 'data.mdb'));
    else writeFileSync(join(temporary, 'data.mdb'), '');
    if (existsSync(join(dir, JOURNAL_FILE))) copyFileSync(join(dir, JOURNAL_FILE), join(temporary, JOURNAL_FILE));
    return seal(root, temporary, {
      v: 1,
      name,
      createdAtMs: Date.now(),
      formatVersion: 0,
      reason: 'pre-restore (damaged)',
      damage: problem,
    });
  } catch (error) {
    removeTemporary(temporary);
    throw asStoreError(error, `keeping the damaged data as snapshot ${name}`);
  }
}

function info(root: string, name: string): SnapshotInfo {
  const path = join(root, name);
  let manifest: SnapshotManifest;
  try {
    manifest = JSON.parse(readFileSync(join(path, 'snapshot.json'), 'utf8')) as SnapshotManifest;
  } catch (error) {
    throw new SeenStoreError('STORE_CORRUPT', `snapshot ${name} has no readable snapshot.json`, { cause: error });
  }
  return {
    name,
    createdAtMs: manifest.createdAtMs,
    formatVersion: manifest.formatVersion,
    reason: manifest.reason,
    bytes: statSync(join(path, 'data.mdb')).size,
    path,
  };
}

/** Complete snapshots of the store at `dir`, oldest first. */
export function listSnapshots(dir: string): SnapshotInfo[] {
  const root = join(dir, SNAPSHOTS_DIR);
  if (!existsSync(root)) return [];
  removeStoreLeftovers(dir, root);
  return readdirSync(root)
    .filter((name) => NAME_PATTERN.test(name))
    .map((name) => info(root, name))
    .sort((a, b) => a.createdAtMs - b.createdAtMs || a.name.localeCompare(b.name));
}

export function findSnapshot(dir: string, name: string): SnapshotInfo {
  checkName(name);
  const root = join(dir, SNAPSHOTS_DIR);
  if (!existsSync(join(root, name, 'data.mdb'))) throw new SeenStoreError('NOT_FOUND', `no snapshot ${name} in ${dir}`);
  return info(root, name);
}

/** Removes a snapshot: renamed away first, so it is never listed half-deleted. */
export function deleteSnapshot(dir: string, name: string): void {
  const snapshot = findSnapshot(dir, name);
  const doomed = join(dir, SNAPSHOTS_DIR, `.deleting-${name}-${process.pid}`);
  try {
    renameSync(snapshot.path, doomed);
    rmSync(doomed, { recursive: true, force: true });
  } catch (error) {
    throw asStoreError(error, `deleting snapshot ${name}`);
  }
}

/** Refuses (STORE_LOCKED) when another process has the store open. */
export function requireAlone(env: StoreEnv, doing: string): void {
  const others = env.otherProcessIds();
  if (others.length > 0) {
    throw new SeenStoreError(
      'STORE_LOCKED',
      `cannot ${doing}: the store is open in ${others.length === 1 ? 'process' : 'processes'} ${others.join(', ')}; close ${others.length === 1 ? 'it' : 'them'} first`,
    );
  }
}

/**
 * Replaces the store's data with snapshot `name`, refusing while any other process has the store
 * open. `openEnv` opens the store (any format). The current data is first saved as a
 * `pre-restore` snapshot and the snapshot's file copied beside the data file and fsynced; then,
 * holding the store's open guard (no process can open the store or commit to it, whatever this
 * process's event loop does), the restore checks that no other process has the store open and that
 * nothing was committed since the pre-restore snapshot began, and only then renames the copy over
 * the data file: a crash leaves either the old store or the restored one, and a writer that got in
 * while the restore ran (its `locks/exclusive` gone stale during a long copy) makes the restore
 * refuse rather than lose the writer's batches. The store must not be open in this process.
 */
export async function restoreSnapshot(
  dir: string,
  name: string,
  lockStaleMs: number,
  openEnv: () => StoreEnv,
): Promise<RestoreResult> {
  const snapshot = findSnapshot(dir, name);
  removeStoreLeftovers(dir, join(dir, SNAPSHOTS_DIR));
  const lock = await tryLock(dir, EXCLUSIVE_LOCK, lockStaleMs);
  if (lock === undefined) throw new SeenStoreError('STORE_LOCKED', `a restore or migration of ${dir} is running`);
  const incoming = join(dir, `data.mdb.restoring-${process.pid}`);
  const doing = `restore snapshot ${name}`;
  try {
    let env: StoreEnv;
    try {
      env = openEnv();
    } catch (error) {
      // A damaged store is what a restore is for.
      if (!(error instanceof SeenStoreError) || error.code !== 'STORE_CORRUPT') throw error;
      return { ...snapshot, preRestore: await replaceDamaged(dir, snapshot, incoming, error.message) };
    }
    try {
      requireAlone(env, doing);
      const savedAtTxnId = env.lastCommittedTxnId();
      const savedJournal = journalState(dir);
      const preRestore = await createSnapshot(env, defaultSnapshotName('pre-restore-'), 'pre-restore');
      copyDurably(join(snapshot.path, 'data.mdb'), incoming);
      copyJournalIn(snapshot.path, incoming);
      faultPoint('restore:before-swap');
      env.holdGuard(() => {
        requireAlone(env, doing);
        if (env.lastCommittedTxnId() !== savedAtTxnId || journalState(dir) !== savedJournal) {
          throw new SeenStoreError(
            'STORE_LOCKED',
            `cannot ${doing}: the store was written while the restore ran (by a process that has finished); nothing was replaced, the restore can be run again`,
          );
        }
        swapIn(dir, incoming);
      });
      return { ...snapshot, preRestore };
    } finally {
      await env.close();
    }
  } catch (error) {
    throw asStoreError(error, doing);
  } finally {
    rmSync(incoming, { force: true });
    rmSync(`${incoming}.${JOURNAL_FILE}`, { force: true });
    await lock.release();
  }
}

/**
 * The restore of a store that open refuses as damaged: no seenstore process can open it, so no
 * reader table or transaction id is read from it (LMDB would follow its damaged pages). Its file is
 * kept byte for byte as the pre-restore snapshot, and the copy swapped in holding the open guard. A
 * process that opened the store before the damage and still runs is not seen (docs/reliability.md).
 */
async function replaceDamaged(
  dir: string,
  snapshot: SnapshotInfo,
  incoming: string,
  problem: string,
): Promise<SnapshotInfo> {
  const preRestore = keepDamagedData(dir, defaultSnapshotName('pre-restore-'), problem);
  copyDurably(join(snapshot.path, 'data.mdb'), incoming);
  copyJournalIn(snapshot.path, incoming);
  const guard = OpenGuard.open(dir);
  try {
    guard.hold(() => swapIn(dir, incoming));
  } finally {
    await guard.close();
  }
  return preRestore;
}

/**
 * Replaces the data file with `incoming`, and the journal file with the snapshot's (or none, when
 * the snapshot has none), holding the open guard. The journal goes first: a crash between the
 * two renames leaves the old data with the snapshot's journal, whose frames the old checkpoints
 * mostly cover; running the restore again finishes it.
 */
function swapIn(dir: string, incoming: string): void {
  // The lock file holds the old data's transaction ids and reader slots: LMDB makes a new one.
  rmSync(join(dir, 'lock.mdb'), { force: true });
  const journal = `${incoming}.${JOURNAL_FILE}`;
  if (existsSync(journal)) renameSync(journal, join(dir, JOURNAL_FILE));
  else rmSync(join(dir, JOURNAL_FILE), { force: true });
  renameSync(incoming, join(dir, 'data.mdb'));
  fsyncPath(dir);
}

/** The snapshot's journal file, copied beside `incoming` (when it has one). */
function copyJournalIn(snapshotPath: string, incoming: string): void {
  const journal = join(snapshotPath, JOURNAL_FILE);
  if (existsSync(journal)) copyDurably(journal, `${incoming}.${JOURNAL_FILE}`);
}

/**
 * The journal file's identity and a digest of its bytes: a restore refuses when it changed
 * meanwhile (an add was journaled). Its size says nothing: frames are written into space the file
 * holds already.
 */
function journalState(dir: string): string {
  const path = join(dir, JOURNAL_FILE);
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats === undefined ? 'none' : `${stats.ino}:${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
}

/** Copies `from` to `to` (writable) and fsyncs it. */
function copyDurably(from: string, to: string): void {
  copyFileSync(from, to);
  chmodSync(to, 0o644);
  fsyncPath(to);
}

/**
 * A snapshot written outside the store, at `out` (which must not exist): a backup on another disk.
 * The same consistent copy as createSnapshot, written beside `out` under a temporary name on the
 * target's own file system, then sealed (manifest, fsync, read-only) and renamed to `out`, so
 * `out` is always complete or absent. To restore it, copy the folder into the store's
 * `snapshots/` and run `snapshot restore` with its name. `out`'s last path component is the
 * snapshot's name and follows the same rule.
 */
export async function createSnapshotAt(
  env: StoreEnv,
  out: string,
  formatVersion = env.header.formatVersion,
  signal?: AbortSignal,
): Promise<SnapshotInfo> {
  const name = basename(out);
  checkName(name);
  const root = dirname(out);
  if (!existsSync(root)) throw new SeenStoreError('NOT_FOUND', `no directory ${root} to write snapshot ${name} into`);
  if (existsSync(out)) throw new SeenStoreError('USAGE', `${out} exists: a snapshot is written to a new directory`);
  const temporary = join(root, `.tmp-${name}-${process.pid}`);
  try {
    mkdirSync(temporary);
    const createdAtMs = Date.now();
    await env.backup(temporary);
    await safePoint(signal, `creating snapshot ${out}`);
    return seal(root, temporary, { v: 1, name, createdAtMs, formatVersion, reason: 'user (outside the store)' });
  } catch (error) {
    removeTemporary(temporary);
    throw asStoreError(error, `creating snapshot ${out}`);
  }
}
