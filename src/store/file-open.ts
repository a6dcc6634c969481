import { closeSync, constants, fsyncSync, openSync, renameSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SeenStoreError, asStoreError } from '../errors.js';

/**
 * Opens a file that seenstore reads whole (an export file, a set-difference summary): without
 * blocking, so that a FIFO without a writer is refused by the caller's regular-file check instead
 * of waited on. A missing file is NOT_FOUND ("no such `what`: path").
 */
export async function openForReading(path: string, what: string): Promise<FileHandle> {
  try {
    return await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT')
      throw new SeenStoreError('NOT_FOUND', `no such ${what}: ${path}`, { cause: error });
    throw asStoreError(error, `reading ${path}`);
  }
}

/**
 * Renames a complete, fsynced `temporary` file over `path` and fsyncs the directory, so that `path`
 * is the old file or the whole new one, also after a crash.
 */
export function replaceDurably(temporary: string, path: string): void {
  renameSync(temporary, path);
  fsyncPath(dirname(path));
}

/** fsyncs a file or a directory (a directory's entries: a rename or a new file in it). */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
