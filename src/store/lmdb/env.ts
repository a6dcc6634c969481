import { copyFileSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { ABORT, open, type Database, type RootDatabase } from 'lmdb';
import { Packr } from 'msgpackr';
import { SeenStoreError, asStoreError } from '../../errors.js';
import { OpenGuard } from './open-guard.js';
import { checkDataFile, refuseLostDataFile } from './data-file.js';
import { LMDB_MAX_READERS } from './reader-slots.js';
import type { XxHash } from '../../hash/xxhash.js';
import { JOURNAL_FILE, JournalFile, journalFileHoldsFrames } from './journal-file.js';
import type { StoreHeader } from './records.js';
import { checkSameDataFile, diskFull, prepareStoreDir, refuseNewFilesOnFullDisk } from './store-dir.js';
import { initStoreHeader } from './store-header.js';
import { primeEmptyFreeList } from './free-list.js';

/** Default virtual address space reserved for the map. Costs no memory or disk until used. */
export const DEFAULT_MAP_SIZE_BYTES = 64 * 2 ** 30;

export interface StoreEnvOptions {
  /** Create the directory and an empty store when missing (default true). */
  readonly create: boolean;
  readonly mapSizeBytes: number;
  /** Open a store of any format without checking it (for `migrate` only). */
  readonly anyFormat?: boolean;
  /** Open LMDB read-only: nothing is ever written (SeenStoreOptions.readOnly). */
  readonly readOnly?: boolean;
}

type Key = string | number | (string | number)[];

/** lmdb-js's native environment behind a root database (not in its typings). */
interface LmdbEnvHandle {
  readonly env: { info(): { lastTxnId: number } };
  sync(callback: (error: unknown) => void): void;
}

/** Runs `action` holding `guard`, or at once when there is none (see StoreEnv's #guard). */
function holding<T>(guard: OpenGuard | undefined, action: () => T): T {
  return guard === undefined ? action() : guard.hold(action);
}

/** The named database of the frontier (docs/format.md "Frontier"): byte keys (frontier-keys.ts), format 7 on. */
const FRONTIER_DB = 'queue';
const FRONTIER_OPTIONS = { name: FRONTIER_DB, encoding: 'binary', keyEncoding: 'binary' } as const;

/** Whether the environment has the named database `name` (named databases are keys of the root). */
export function namedDbExists(root: RootDatabase, name: string): boolean {
  for (const key of root.getKeys({ start: name })) return key === name;
  return false;
}

/** Write transactions begun behind the newest commit before write() gives up (see #transaction). */
const STALE_TXN_ATTEMPTS = 3;

/**
 * One LMDB environment per store directory, with three named DBs: `meta` (msgpack records),
 * `chunks` and `journal` (raw bytes). Opening checks the store's format version.
 */
export class StoreEnv {
  readonly dir: string;
  readonly header: StoreHeader;
  readonly #packr = new Packr({ useRecords: false, mapsAsObjects: true });
  readonly #mapSizeBytes: number;
  /**
   * Serialises this process's opens and commits against other processes' (see OpenGuard); absent
   * only for a read-only open that cannot open it (a read-only mount).
   */
  readonly #guard: OpenGuard | undefined;
  /** Opened with LMDB's read-only flag: write() refuses, and no header is created. */
  readonly readOnly: boolean;
  #handles!: {
    root: RootDatabase;
    meta: Database<Buffer, Key>;
    chunks: Database<Buffer, Key>;
    journal: Database<Buffer, Key>;
    /** Created by the first frontier write (ensureFrontierDb): a store without a frontier has none. */
    frontier: Database<Buffer, Buffer> | undefined;
  };
  /** Earlier handles being closed (releaseMappedPages); close() waits for them. */
  readonly #closing: Promise<void>[] = [];
  /** The data file this environment opened (see checkSameDataFile, store-dir.ts). */
  readonly #dataFile: { readonly dev: number; readonly ino: number };
  /** Write transactions and awaited operations (backups) using the handles: they must not change meanwhile. */
  #busy = 0;
  /** Depth of write(): a journal read inside it holds the open guard and sees every commit. */
  #writing = 0;
  #journal: JournalFile | undefined;
  #closed = false;

  private constructor(
    dir: string,
    guard: OpenGuard | undefined,
    root: RootDatabase,
    mapSizeBytes: number,
    anyFormat: boolean,
    readOnly: boolean,
  ) {
    this.dir = dir;
    this.#guard = guard;
    this.#mapSizeBytes = mapSizeBytes;
    this.readOnly = readOnly;
    this.#attach(root);
    const { dev, ino } = statSync(join(dir, 'data.mdb'));
    this.#dataFile = { dev, ino };
    this.header = initStoreHeader(this, anyFormat);
    primeEmptyFreeList(this);
  }

  get root(): RootDatabase {
    return this.#handles.root;
  }

  get metaDb(): Database<Buffer, Key> {
    return this.#handles.meta;
  }

  get chunksDb(): Database<Buffer, Key> {
    return this.#handles.chunks;
  }

  get journalDb(): Database<Buffer, Key> {
    return this.#handles.journal;
  }

  /** The frontier's database (pending URLs of every scope), or undefined while no frontier was ever written. */
  get frontierDb(): Database<Buffer, Buffer> | undefined {
    return this.#handles.frontier;
  }

  /**
   * The frontier's database, created by the first frontier write of the store. Creating a named
   * database is a commit of its own, so it happens holding the open guard, never inside another
   * write transaction.
   */
  ensureFrontierDb(): Database<Buffer, Buffer> {
    if (this.#handles.frontier !== undefined) return this.#handles.frontier;
    if (this.readOnly) throw readOnlyError(this.dir, 'write to the frontier');
    const root = this.#handles.root;
    this.#handles.frontier = holding(this.#guard, () => root.openDB<Buffer, Buffer>(FRONTIER_OPTIONS));
    return this.#handles.frontier;
  }

  #attach(root: RootDatabase): void {
    this.#handles = {
      root,
      meta: root.openDB<Buffer, Key>({ name: 'meta', encoding: 'binary' }),
      chunks: root.openDB<Buffer, Key>({ name: 'chunks', encoding: 'binary' }),
      journal: root.openDB<Buffer, Key>({ name: 'journal', encoding: 'binary' }),
      frontier: namedDbExists(root, FRONTIER_DB) ? root.openDB<Buffer, Buffer>(FRONTIER_OPTIONS) : undefined,
    };
  }

  static #openRoot(dir: string, mapSizeBytes: number, readOnly: boolean): RootDatabase {
    // noSubdir explicitly: lmdb-js otherwise takes a path with a dot in its last segment for a file.
    return open({
      path: dir,
      noSubdir: false,
      mapSize: mapSizeBytes,
      maxDbs: 8,
      pageSize: 4096,
      readOnly,
      maxReaders: LMDB_MAX_READERS,
    });
  }

  /**
   * Reading a filter's chunks maps their file pages into this process, where they count in its
   * RSS as long as the map holds them (131 MB at 100M URLs, beside the filter's own copy). Closing
   * the LMDB environment and opening it again (about 10 ms) unmaps them; they stay in the page cache
   * for whoever reads them next. seenstore's commits are synchronous (the fsync included), so
   * between operations no write is pending and lmdb-js closes at once; were one pending, the new
   * handles would share the environment until it ends, and the pages would stay mapped until the
   * next release. Call between operations (no transaction open, no iterator live).
   */
  releaseMappedPages(): void {
    if (this.#closed || this.#busy > 0) return;
    this.#reopen();
  }

  /** Closes the LMDB environment and opens it again (under the guard: an open is what it guards). */
  #reopen(): void {
    const old = this.#handles.root;
    this.#closing.push(old.close().catch(() => undefined));
    this.#attach(holding(this.#guard, () => StoreEnv.#openRoot(this.dir, this.#mapSizeBytes, this.readOnly)));
  }

  /**
   * The store's journal file (journal-file.ts), one per environment. The hash is the store's (its
   * frames carry xxh32 checksums).
   */
  useJournal(hash: XxHash): JournalFile {
    this.#journal ??= new JournalFile(this.dir, hash, this.readOnly);
    return this.#journal;
  }

  /**
   * LMDB's copy of the store into `dir` (one read transaction), and the journal file. The journal
   * is copied first: a frame compacted away after the copy was folded by a checkpoint that LMDB's
   * later copy holds, and every frame acknowledged before the backup began is in one or the other.
   *
   * The whole file, free pages included, not LMDB's compacting copy (MDB_CP_COMPACT): lmdb-js
   * 3.5.6 aborts the process at the first large write transaction in a compacted file (its free-list
   * database empty, its transaction id not 1: mdb_page_alloc's "Assertion 'key.mv_size > 0'"), so a
   * restored snapshot crashed the crawler that wrote to it; and the compacting copy refused files
   * lmdb-js reads and writes as ever (MDB_INCOMPATIBLE). A whole-file copy is the file as this
   * process's read transaction sees it, which lmdb-js writes as it writes the store.
   */
  async backup(dir: string): Promise<void> {
    this.#busy++;
    try {
      this.holdGuard(() => {
        // A journal of no frames (a store closed cleanly) adds nothing to the copy.
        const journal = join(this.dir, JOURNAL_FILE);
        if (journalFileHoldsFrames(journal)) copyFileSync(journal, join(dir, JOURNAL_FILE));
      });
      await this.root.backup(dir, false);
    } finally {
      this.#busy--;
    }
  }

  static open(dir: string, options: StoreEnvOptions): StoreEnv {
    if (endianness() !== 'LE') {
      throw new SeenStoreError(
        'INTERNAL',
        'seenstore reads and writes filters as little-endian words; this host is big-endian',
      );
    }
    refuseLostDataFile(dir);
    const readOnly = options.readOnly ?? false;
    prepareStoreDir(dir, options.create && !readOnly);
    refuseNewFilesOnFullDisk(dir);
    const guard = readOnly ? OpenGuard.openForReading(dir) : OpenGuard.open(dir);
    let root: RootDatabase;
    try {
      root = holding(guard, () => {
        // Before anything maps the file (a cut or damaged data file must not crash this process),
        // and with no commit under way (the walk reads the pages a commit moves).
        checkDataFile(dir);
        return StoreEnv.#openRoot(dir, options.mapSizeBytes, readOnly);
      });
    } catch (error) {
      guard?.close().catch(() => undefined);
      throw asStoreError(error, `opening the store at ${dir}`);
    }
    try {
      return new StoreEnv(dir, guard, root, options.mapSizeBytes, options.anyFormat ?? false, readOnly);
    } catch (error) {
      root.close().catch(() => undefined);
      guard?.close().catch(() => undefined);
      throw error instanceof SeenStoreError ? error : asStoreError(error, `reading the store at ${dir}`);
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  getMeta(key: Key): unknown {
    const bytes = this.metaDb.getBinary(key);
    return bytes === undefined ? undefined : this.decodeMeta(bytes, `meta record ${JSON.stringify(key)}`);
  }

  decodeMeta(bytes: Uint8Array, where: string): unknown {
    try {
      return this.#packr.unpack(bytes);
    } catch (error) {
      throw new SeenStoreError('STORE_CORRUPT', `${where} is not valid msgpack`, { cause: error });
    }
  }

  /** Writes a meta record; call inside a write transaction. */
  putMeta(key: Key, value: object): void {
    this.metaDb.putSync(key, this.#packr.pack(value));
  }

  /** A record as msgpack, as meta records are stored (for the other databases that hold records: the frontier). */
  encodeRecord(value: object): Buffer {
    return this.#packr.pack(value);
  }

  removeMeta(key: Key): void {
    this.metaDb.removeSync(key);
  }

  /**
   * Runs `action` in one synchronous, durable LMDB write transaction (serialised across processes,
   * and against every process's open of the store: see OpenGuard). With `commitIf`, the
   * transaction is aborted when it says false (nothing to commit: no sync). `afterTxn` runs once the
   * transaction ended without error, still holding the open guard (journal appends: journal-file.ts).
   */
  write<T>(action: () => T, commitIf?: () => boolean, afterTxn?: () => void): T {
    if (this.readOnly) throw readOnlyError(this.dir, 'write');
    this.#busy++;
    this.#writing++;
    try {
      return holding(this.#guard, () => {
        const result = this.#transaction(() => {
          checkSameDataFile(this.dir, this.#dataFile);
          return action();
        }, commitIf);
        afterTxn?.();
        return result;
      });
    } catch (error) {
      // LMDB may report a write that failed for want of space as EIO: name the real cause.
      if (!(error instanceof SeenStoreError) && diskFull(this.dir)) {
        throw new SeenStoreError('STORE_FULL', `the disk holding ${this.dir} is full (${(error as Error).message})`, {
          cause: error,
        });
      }
      throw error;
    } finally {
      this.#writing--;
      this.#busy--;
    }
  }

  /** Inside write(): holding the open guard and LMDB's writer lock. */
  get writing(): boolean {
    return this.#writing > 0;
  }

  /**
   * The transaction, begun on the newest committed state. LMDB starts a write transaction from the
   * transaction id in its shared lock region; should that id lag the newest meta page (an opener
   * without the guard rolled it back: an older seenstore, another LMDB tool), committing would
   * overwrite the newest commit. So before `action` runs, the transaction's id is compared with the
   * newest meta page's: a transaction that does not build on it is aborted, the environment is
   * opened again (which sets the shared id from the newest meta page), and the transaction begins
   * anew; `action` never runs in a transaction that would be refused.
   */
  #transaction<T>(action: () => T, commitIf?: () => boolean): T {
    for (let attempt = 1; ; attempt++) {
      let stale = false;
      let result: T | undefined;
      this.root.transactionSync(() => {
        stale = this.root.getWriteTxnId() <= this.#lastCommittedTxnId();
        if (stale) return ABORT;
        result = action();
        // A transaction that changed nothing is aborted: it holds the locks and costs no sync.
        return commitIf === undefined || commitIf() ? result : ABORT;
      });
      if (!stale) return result as T;
      if (attempt === STALE_TXN_ATTEMPTS) {
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `${this.dir}: LMDB keeps beginning write transactions behind the newest commit; refusing to write (docs/reliability.md)`,
        );
      }
      this.#reopen();
    }
  }

  /** The id of the newest transaction on the meta pages, whatever the shared lock region says. */
  #lastCommittedTxnId(): number {
    return (this.root as unknown as LmdbEnvHandle).env.info().lastTxnId;
  }

  /** LMDB's id of the newest committed transaction, by any process: it grows with every commit. */
  lastCommittedTxnId(): number {
    return this.#lastCommittedTxnId();
  }

  /**
   * Runs `action` while no process can open this store or commit to it (see OpenGuard), whatever
   * this process's event loop does meanwhile: for restore and migrate, which must see that no
   * other process is in the store and act on that before anyone can enter.
   */
  holdGuard<T>(action: () => T): T {
    return holding(this.#guard, action);
  }

  /**
   * Process ids, other than this one, that have this store open: LMDB's reader table, which every
   * process (of any seenstore version) enters when it opens the store, after clearing the entries
   * of dead processes.
   */
  otherProcessIds(): number[] {
    this.root.readerCheck();
    const pids = new Set<number>();
    for (const line of this.root.readerList().split('\n').slice(1)) {
      const pid = Number(line.trim().split(/\s+/)[0]);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) pids.add(pid);
    }
    return [...pids];
  }

  /**
   * LMDB's id of the write transaction under way (call inside write()): one more than the last
   * committed one, by any process.
   */
  writeTxnId(): number {
    return this.root.getWriteTxnId();
  }

  /** Makes the next read see everything committed so far, by any process. */
  refresh(): void {
    this.root.resetReadTxn();
  }

  async flushed(): Promise<void> {
    await this.root.flushed;
  }

  /** Makes every commit so far durable, by any process (mdb_env_sync): commits are synced in the background. */
  async syncData(): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      (this.root as unknown as LmdbEnvHandle).sync((error) =>
        error ? reject(asStoreError(error, `syncing ${this.dir}`)) : resolve(),
      ),
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#journal?.close();
    await this.root.close();
    await Promise.all(this.#closing);
    await this.#guard?.close();
  }
}

/** The error of every write asked of a store opened read-only. */
export function readOnlyError(dir: string, doing: string): SeenStoreError {
  return SeenStoreError.readOnly(doing, dir);
}
