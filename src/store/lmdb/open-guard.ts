import { join } from 'node:path';
import { ABORT, open, type RootDatabase } from 'lmdb';
import { assert, asStoreError } from '../../errors.js';

/**
 * The guard's own LMDB environment: one file beside the store's data (plus LMDB's `-lock` file).
 * It never holds data; only its writer mutex is used.
 */
export const OPEN_GUARD_FILE = 'open-guard.mdb';

/** The guard's environment stays at its two meta pages; a small map is plenty. */
const GUARD_MAP_SIZE_BYTES = 1 << 20;

/**
 * A cross-process mutex that serialises opening the store's LMDB environment against committing
 * to it, working around a bug in the LMDB that lmdb-js bundles (docs/reliability.md, "Opening
 * while another process commits"): every environment open copies the transaction id of the meta
 * page it read into the shared lock region, so an open that read the meta page just before
 * another process committed rolls the id back, and the next writer overwrites that commit.
 *
 * The mutex is LMDB's own writer mutex of a second, empty environment: a robust POSIX mutex in
 * its lock file, shared by every process that opens the store, released by the kernel's robust
 * mutex protocol when its holder dies (kill -9 included), and acquired without touching the
 * event loop. Holding it is an empty write transaction that is aborted, so the guard's file
 * never changes and opening it cannot suffer the same bug in a way that matters.
 */
export class OpenGuard {
  readonly #root: RootDatabase;
  #depth = 0;
  #closed = false;

  private constructor(root: RootDatabase) {
    this.#root = root;
  }

  /** Opens the guard of the store in `storeDir`, creating its file when missing. */
  static open(storeDir: string): OpenGuard {
    try {
      return new OpenGuard(OpenGuard.#openRoot(storeDir));
    } catch (error) {
      throw asStoreError(error, `opening the open guard of the store at ${storeDir}`);
    }
  }

  /**
   * For a process that only reads: undefined when the guard cannot be opened for lack of write
   * access (a read-only mount, another user's store). No writer can share a store with it then,
   * except through another mount of the same file system (docs/reliability.md).
   */
  static openForReading(storeDir: string): OpenGuard | undefined {
    try {
      return new OpenGuard(OpenGuard.#openRoot(storeDir));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/EACCES|EROFS|Permission denied|Read-only file system/.test(message)) return undefined;
      throw asStoreError(error, `opening the open guard of the store at ${storeDir}`);
    }
  }

  static #openRoot(storeDir: string): RootDatabase {
    return open({
      path: join(storeDir, OPEN_GUARD_FILE),
      noSubdir: true,
      mapSize: GUARD_MAP_SIZE_BYTES,
      maxDbs: 1,
      pageSize: 4096,
      // Nothing is ever committed here; an explicit sync mode keeps every opener's flags equal.
      noSync: true,
      overlappingSync: false,
    });
  }

  /**
   * Runs `action` while holding the guard (blocking, across processes, until every other holder
   * is done). Re-entrant within this process.
   */
  hold<T>(action: () => T): T {
    assert(!this.#closed, 'the open guard is not used after close');
    if (this.#depth > 0) return action();
    let result: T | undefined;
    this.#depth++;
    try {
      this.#root.transactionSync(() => {
        result = action();
        return ABORT;
      });
    } finally {
      this.#depth--;
    }
    return result as T;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#root.close();
  }
}
