import { existsSync, mkdirSync, statSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';

/** Below this much free space the store's file system counts as full (failed writes, new files). */
const FULL_DISK_FREE_BYTES = 2 ** 20;

/**
 * Makes the store directory when `create` allows it and it is missing; refuses (IO_ERROR,
 * NOT_FOUND) a path that is no directory, or one without a store when `create` is false.
 */
export function prepareStoreDir(dir: string, create: boolean): void {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) {
      throw new SeenStoreError('IO_ERROR', `the store path ${dir} is not a directory`);
    }
    if (!create && !existsSync(join(dir, 'data.mdb'))) {
      throw new SeenStoreError('NOT_FOUND', `no seenstore store at ${dir}`);
    }
    return;
  }
  if (!create) throw new SeenStoreError('NOT_FOUND', `no seenstore store at ${dir}`);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw asStoreError(error, `creating the store directory ${dir}`);
  }
}

/**
 * LMDB creates lock.mdb (and data.mdb) sparse and writes them through a shared map: on a full
 * tmpfs the first write into the map kills the process with SIGBUS. Refuse to have LMDB create
 * them when the file system has less than a MiB free.
 */
export function refuseNewFilesOnFullDisk(dir: string): void {
  if (existsSync(join(dir, 'data.mdb')) && existsSync(join(dir, 'lock.mdb'))) return;
  let freeBytes: number;
  try {
    const { bavail, bsize, blocks } = statfsSync(dir);
    // A pseudo file system (/proc) has no blocks at all: LMDB's own error names it better.
    if (blocks === 0) return;
    freeBytes = bavail * bsize;
  } catch {
    return;
  }
  if (freeBytes < FULL_DISK_FREE_BYTES) {
    throw new SeenStoreError(
      'STORE_FULL',
      `the disk holding ${dir} is full (${freeBytes} bytes free): LMDB cannot create its files there`,
    );
  }
}

/** Less than 1 MiB free for this user on the file system holding `dir`. */
export function diskFull(dir: string): boolean {
  try {
    const { bavail, bsize } = statfsSync(dir);
    return bavail * bsize < FULL_DISK_FREE_BYTES;
  } catch {
    return false;
  }
}

/**
 * A data file deleted (or renamed over) under an open environment keeps working through LMDB's
 * descriptor and map: commits would land in a file no one opens again, and a writer would go on
 * acknowledging URLs that are lost. Every write transaction first checks that the path still
 * names the file that was opened (one stat, inside LMDB's write lock).
 */
export function checkSameDataFile(dir: string, opened: { readonly dev: number; readonly ino: number }): void {
  const path = join(dir, 'data.mdb');
  let now: { dev: number; ino: number };
  try {
    now = statSync(path);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw asStoreError(error, `checking ${path}`);
    throw new SeenStoreError(
      'NOT_FOUND',
      `the store at ${dir} was deleted while this process had it open (${path} is gone); nothing more was written`,
      { cause: error },
    );
  }
  if (now.dev !== opened.dev || now.ino !== opened.ino) {
    throw new SeenStoreError(
      'STORE_LOCKED',
      `${path} was replaced by another file while this process had the store open; nothing more was written`,
    );
  }
}
