import { existsSync, mkdirSync, statSync, statfsSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { Packr } from 'msgpackr';
import { SeenStoreError, asStoreError } from '../errors.js';
import { checkDataFile } from './data-file.js';
import { FORMAT_VERSION, readStoreHeader, type StoreHeader } from './records.js';

/** Key of the store header in the meta DB. */
export const STORE_HEADER_KEY = 'store';

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

/**
 * One LMDB environment per store directory, with three named DBs: `meta` (msgpack records),
 * `chunks` and `journal` (raw bytes). Opening checks the store's format version.
 */
export class StoreEnv {
  readonly dir: string;
  readonly header: StoreHeader;
  readonly #packr = new Packr({ useRecords: false, mapsAsObjects: true });
  readonly #mapSizeBytes: number;
  /** Opened with LMDB's read-only flag: write() refuses, and no header is created. */
  readonly readOnly: boolean;
  #handles!: { root: RootDatabase; meta: Database<Buffer, Key>; chunks: Database<Buffer, Key>; journal: Database<Buffer, Key> };
  /** Earlier handles being closed (releaseMappedPages); close() waits for them. */
  readonly #closing: Promise<void>[] = [];
  /** Write transactions and awaited operations (backups) using the handles: they must not change meanwhile. */
  #busy = 0;
  #closed = false;

  private constructor(dir: string, root: RootDatabase, mapSizeBytes: number, anyFormat: boolean, readOnly: boolean) {
    this.dir = dir;
    this.#mapSizeBytes = mapSizeBytes;
    this.readOnly = readOnly;
    this.#attach(root);
    this.header = this.#initHeader(anyFormat);
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

  #attach(root: RootDatabase): void {
    this.#handles = {
      root,
      meta: root.openDB<Buffer, Key>({ name: 'meta', encoding: 'binary' }),
      chunks: root.openDB<Buffer, Key>({ name: 'chunks', encoding: 'binary' }),
      journal: root.openDB<Buffer, Key>({ name: 'journal', encoding: 'binary' }),
    };
  }

  static #openRoot(dir: string, mapSizeBytes: number, readOnly: boolean): RootDatabase {
    // noSubdir explicitly: lmdb-js otherwise takes a path with a dot in its last segment for a file.
    return open({ path: dir, noSubdir: false, mapSize: mapSizeBytes, maxDbs: 8, pageSize: 4096, readOnly });
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
    const old = this.#handles.root;
    this.#closing.push(old.close().catch(() => undefined));
    this.#attach(StoreEnv.#openRoot(this.dir, this.#mapSizeBytes, this.readOnly));
  }

  /** LMDB's compacting copy of the store into `dir` (one read transaction). */
  async backup(dir: string): Promise<void> {
    this.#busy++;
    try {
      await this.root.backup(dir, true);
    } finally {
      this.#busy--;
    }
  }

  static open(dir: string, options: StoreEnvOptions): StoreEnv {
    if (endianness() !== 'LE') {
      throw new SeenStoreError('INTERNAL', 'seenstore reads and writes filters as little-endian words; this host is big-endian');
    }
    // Before anything maps the file: a cut or damaged data file must not crash this process.
    checkDataFile(dir);
    const readOnly = options.readOnly ?? false;
    StoreEnv.#prepareDir(dir, options.create && !readOnly);
    let root: RootDatabase;
    try {
      root = StoreEnv.#openRoot(dir, options.mapSizeBytes, readOnly);
    } catch (error) {
      throw asStoreError(error, `opening the store at ${dir}`);
    }
    try {
      return new StoreEnv(dir, root, options.mapSizeBytes, options.anyFormat ?? false, readOnly);
    } catch (error) {
      root.close().catch(() => undefined);
      throw error instanceof SeenStoreError ? error : asStoreError(error, `reading the store at ${dir}`);
    }
  }

  static #prepareDir(dir: string, create: boolean): void {
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

  #initHeader(anyFormat: boolean): StoreHeader {
    const existing = this.getMeta(STORE_HEADER_KEY);
    if (existing !== undefined) return anyFormat ? readStoreHeader(existing) : StoreEnv.#checkedHeader(existing);
    const hasData = this.root.getKeysCount({ limit: 8 }) > 3 || this.metaDb.getKeysCount({ limit: 1 }) > 0;
    if (hasData) throw new SeenStoreError('STORE_CORRUPT', `${this.dir} holds an LMDB environment without a seenstore header`);
    if (this.readOnly) throw new SeenStoreError('NOT_FOUND', `no seenstore store at ${this.dir} (an LMDB environment nothing was stored in)`);
    const created: StoreHeader = { v: 1, formatVersion: FORMAT_VERSION, createdAtMs: Date.now() };
    return this.root.transactionSync(() => {
      const raced = this.getMeta(STORE_HEADER_KEY);
      if (raced !== undefined) return StoreEnv.#checkedHeader(raced);
      this.putMeta(STORE_HEADER_KEY, created);
      return created;
    });
  }

  static #checkedHeader(value: unknown): StoreHeader {
    const header = readStoreHeader(value);
    if (header.formatVersion !== FORMAT_VERSION) {
      const hint = header.formatVersion < FORMAT_VERSION ? ' (run `seenstore migrate`)' : ' (written by a newer seenstore)';
      throw new SeenStoreError(
        'FORMAT_UNSUPPORTED',
        `store format ${header.formatVersion} is not supported by this version (format ${FORMAT_VERSION})${hint}`,
      );
    }
    return header;
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

  removeMeta(key: Key): void {
    this.metaDb.removeSync(key);
  }

  /** Runs `action` in one synchronous, durable LMDB write transaction (serialised across processes). */
  write<T>(action: () => T): T {
    if (this.readOnly) throw readOnlyError(this.dir, 'write');
    this.#busy++;
    try {
      return this.root.transactionSync(action);
    } catch (error) {
      // LMDB may report a write that failed for want of space as EIO: name the real cause.
      if (!(error instanceof SeenStoreError) && this.#diskFull()) {
        throw new SeenStoreError('STORE_FULL', `the disk holding ${this.dir} is full (${(error as Error).message})`, { cause: error });
      }
      throw error;
    } finally {
      this.#busy--;
    }
  }

  /** Less than 1 MiB free for this user on the store's file system. */
  #diskFull(): boolean {
    try {
      const { bavail, bsize } = statfsSync(this.dir);
      return bavail * bsize < 2 ** 20;
    } catch {
      return false;
    }
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

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.root.close();
    await Promise.all(this.#closing);
  }
}

/** The error of every write asked of a store opened read-only. */
export function readOnlyError(dir: string, doing: string): SeenStoreError {
  return new SeenStoreError('USAGE', `cannot ${doing}: the store at ${dir} is open read-only (open it without readOnly to write)`);
}
