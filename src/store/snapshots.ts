import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { SeenStoreError, asStoreError } from '../errors.js';
import type { StoreEnv } from './env.js';
import { tryLock } from './lock.js';
import { LMDB_MAX_READERS } from './reader-slots.js';

/** Snapshots live in the store directory, one folder each: `snapshots/NAME/{data.mdb,snapshot.json}`. */
export const SNAPSHOTS_DIR = 'snapshots';
/** Held while a restore or a migration runs; SeenStore.open refuses while it is held. */
export const EXCLUSIVE_LOCK = 'exclusive';
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface SnapshotInfo {
  readonly name: string;
  readonly createdAtMs: number;
  /** The store format the snapshot holds (a migration's safety snapshot holds the old one). */
  readonly formatVersion: number;
  readonly bytes: number;
  /** Why it was made: `user`, `pre-migrate` or `pre-restore`. */
  readonly reason: string;
  readonly path: string;
}

interface SnapshotManifest {
  readonly v: 1;
  readonly name: string;
  readonly createdAtMs: number;
  readonly formatVersion: number;
  readonly reason: string;
}

function checkName(name: string): void {
  if (!NAME_PATTERN.test(name)) {
    throw new SeenStoreError('USAGE', `invalid snapshot name ${JSON.stringify(name)}: use 1-64 of A-Z a-z 0-9 . _ - (not starting with . _ -)`);
  }
}

/** A sortable UTC time stamp for default snapshot names: 20261122T181500Z-123 (ms). */
export function defaultSnapshotName(prefix: string, nowMs = Date.now()): string {
  const iso = new Date(nowMs).toISOString();
  return `${prefix}${iso.slice(0, 19).replace(/[-:]/g, '')}Z-${iso.slice(20, 23)}`;
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A consistent, point-in-time copy of the whole store while writers keep running: LMDB's
 * compacting copy reads everything in one read transaction, so every add acknowledged before the
 * snapshot started (its journal records and chunks, all in LMDB) is in it, and none is half in.
 * Written under a temporary name, fsynced and renamed, so a listed snapshot is always complete.
 * The files are made read-only.
 */
export async function createSnapshot(env: StoreEnv, name: string, reason = 'user', formatVersion = env.header.formatVersion): Promise<SnapshotInfo> {
  checkName(name);
  const root = join(env.dir, SNAPSHOTS_DIR);
  const target = join(root, name);
  if (existsSync(target)) throw new SeenStoreError('USAGE', `snapshot ${name} exists`);
  const temporary = join(root, `.tmp-${name}-${process.pid}`);
  try {
    mkdirSync(temporary, { recursive: true });
    const createdAtMs = Date.now();
    // Without MDB_NOSUBDIR, LMDB's copy writes data.mdb inside the directory it is given.
    await env.backup(temporary);
    const manifest: SnapshotManifest = { v: 1, name, createdAtMs, formatVersion, reason };
    writeFileSync(join(temporary, 'snapshot.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    for (const file of ['data.mdb', 'snapshot.json']) {
      fsyncPath(join(temporary, file));
      chmodSync(join(temporary, file), 0o444);
    }
    renameSync(temporary, target);
    fsyncPath(root);
    return info(root, name);
  } catch (error) {
    rmSync(temporary, { recursive: true, force: true });
    throw asStoreError(error, `creating snapshot ${name}`);
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

/**
 * Process ids, other than this one, that have the store at `dir` open: LMDB's reader table, which
 * every process (of any seenstore version) enters when it opens the store, after clearing the
 * entries of dead processes.
 */
export async function otherProcesses(dir: string): Promise<number[]> {
  if (!existsSync(join(dir, 'data.mdb'))) return [];
  const root = open({ path: dir, noSubdir: false, maxDbs: 8, maxReaders: LMDB_MAX_READERS });
  try {
    root.readerCheck();
    const pids = new Set<number>();
    for (const line of root.readerList().split('\n').slice(1)) {
      const pid = Number(line.trim().split(/\s+/)[0]);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) pids.add(pid);
    }
    return [...pids];
  } finally {
    await root.close();
  }
}

/** Refuses (STORE_LOCKED) when another process has the store open. */
export async function requireExclusive(dir: string, doing: string): Promise<void> {
  const others = await otherProcesses(dir);
  if (others.length > 0) {
    throw new SeenStoreError('STORE_LOCKED', `cannot ${doing}: the store is open in ${others.length === 1 ? 'process' : 'processes'} ${others.join(', ')}; close ${others.length === 1 ? 'it' : 'them'} first`);
  }
}

/**
 * Replaces the store's data with snapshot `name`. Refuses while any other process has the store
 * open. The current data is first saved as a `pre-restore` snapshot; the snapshot's file is
 * copied beside the data file, fsynced and renamed over it, so a crash leaves either the old
 * store or the restored one. The store must not be open in this process either.
 */
export async function restoreSnapshot(dir: string, name: string, lockStaleMs: number, saveCurrent: (name: string) => Promise<unknown>): Promise<SnapshotInfo> {
  const snapshot = findSnapshot(dir, name);
  const lock = await tryLock(dir, EXCLUSIVE_LOCK, lockStaleMs);
  if (lock === undefined) throw new SeenStoreError('STORE_LOCKED', `a restore or migration of ${dir} is running`);
  try {
    await requireExclusive(dir, `restore snapshot ${name}`);
    await saveCurrent(defaultSnapshotName('pre-restore-'));
    await requireExclusive(dir, `restore snapshot ${name}`);
    const data = join(dir, 'data.mdb');
    const incoming = join(dir, `data.mdb.restoring-${process.pid}`);
    try {
      copyFileSync(join(snapshot.path, 'data.mdb'), incoming);
      chmodSync(incoming, 0o644);
      fsyncPath(incoming);
      rmSync(join(dir, 'lock.mdb'), { force: true });
      renameSync(incoming, data);
      fsyncPath(dir);
    } catch (error) {
      rmSync(incoming, { force: true });
      throw asStoreError(error, `restoring snapshot ${name}`);
    }
    return snapshot;
  } finally {
    await lock.release();
  }
}
