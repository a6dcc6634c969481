import { closeSync, existsSync, mkdirSync, openSync, readSync, statSync, statfsSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { Packr } from 'msgpackr';
import { SeenStoreError, asStoreError } from '../errors.js';
import { LMDB_MAX_READERS } from './reader-slots.js';
import { FORMAT_VERSION, readStoreHeader, type StoreHeader } from './records.js';

/** Key of the store header in the meta DB. */
export const STORE_HEADER_KEY = 'store';

/** LMDB's on-disk meta pages as this lmdb build writes them (24-byte page header). */
const LMDB_PAGE_BYTES = 4096;
const LMDB_PAGE_FLAGS_OFFSET = 18;
const LMDB_P_META = 0x08;
const LMDB_META_MAGIC_OFFSET = 24;
const LMDB_MAGIC = 0xbeefc0de;

/** Pages at the end of the data file LMDB may legitimately never have written (see #checkFileSize). */
const UNWRITTEN_TAIL_PAGES = 64;

/** Default virtual address space reserved for the map. Costs no memory or disk until used. */
export const DEFAULT_MAP_SIZE_BYTES = 64 * 2 ** 30;

export interface StoreEnvOptions {
  /** Create the directory and an empty store when missing (default true). */
  readonly create: boolean;
  readonly mapSizeBytes: number;
  /** Open a store of any format without checking it (for `migrate` only). */
  readonly anyFormat?: boolean;
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
  #handles!: { root: RootDatabase; meta: Database<Buffer, Key>; chunks: Database<Buffer, Key>; journal: Database<Buffer, Key> };
  /** Earlier handles being closed (releaseMappedPages); close() waits for them. */
  readonly #closing: Promise<void>[] = [];
  /** Write transactions and awaited operations (backups) using the handles: they must not change meanwhile. */
  #busy = 0;
  #closed = false;

  private constructor(dir: string, root: RootDatabase, mapSizeBytes: number, anyFormat: boolean) {
    this.dir = dir;
    this.#mapSizeBytes = mapSizeBytes;
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

  static #openRoot(dir: string, mapSizeBytes: number): RootDatabase {
    // noSubdir explicitly: lmdb-js otherwise takes a path with a dot in its last segment for a file.
    return open({ path: dir, noSubdir: false, mapSize: mapSizeBytes, maxDbs: 8, pageSize: 4096, maxReaders: LMDB_MAX_READERS });
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
    this.#attach(StoreEnv.#openRoot(this.dir, this.#mapSizeBytes));
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
    StoreEnv.#prepareDir(dir, options.create);
    StoreEnv.#checkMetaPages(dir);
    let root: RootDatabase;
    try {
      root = StoreEnv.#openRoot(dir, options.mapSizeBytes);
    } catch (error) {
      throw asStoreError(error, `opening the store at ${dir}`);
    }
    try {
      StoreEnv.#checkFileSize(dir, root);
      return new StoreEnv(dir, root, options.mapSizeBytes, options.anyFormat ?? false);
    } catch (error) {
      root.close().catch(() => undefined);
      throw error instanceof SeenStoreError ? error : asStoreError(error, `reading the store at ${dir}`);
    }
  }

  /**
   * A data file cut short would crash the process with SIGBUS on the first read past its end:
   * refuse it before any page is touched. LMDB itself may leave the file a little shorter than
   * the pages its meta page counts (pages allocated and freed in one transaction are never
   * written; a kill -9 test found one such page), so only a shortfall beyond that slack counts as
   * truncation. A cut within the slack is not caught here (docs/errors.md).
   */
  static #checkFileSize(dir: string, root: RootDatabase): void {
    const { lastPageNumber, pageSize } = root.getStats() as { lastPageNumber: number; pageSize: number };
    const needed = (lastPageNumber + 1) * pageSize;
    const actual = statSync(join(dir, 'data.mdb')).size;
    const slack = UNWRITTEN_TAIL_PAGES * pageSize;
    if (actual < needed - slack) {
      throw new SeenStoreError('STORE_CORRUPT', `${join(dir, 'data.mdb')} is truncated: LMDB uses ${needed} bytes, the file has ${actual}`);
    }
  }

  /**
   * lmdb-js crashes the process (SIGSEGV) on a data file whose meta pages are not LMDB's, so they
   * are checked first: pages 0 and 1 carry their own page number, the meta flag and LMDB's magic.
   */
  static #checkMetaPages(dir: string): void {
    const path = join(dir, 'data.mdb');
    if (!existsSync(path)) return;
    const head = Buffer.alloc(2 * LMDB_PAGE_BYTES);
    let read = 0;
    try {
      const fd = openSync(path, 'r');
      try {
        read = readSync(fd, head, 0, head.length, 0);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      throw asStoreError(error, `reading ${path}`);
    }
    if (read === 0) return;
    for (let page = 0; page < 2; page++) {
      const at = page * LMDB_PAGE_BYTES;
      const ok =
        read >= at + LMDB_META_MAGIC_OFFSET + 4 &&
        head.readBigUInt64LE(at) === BigInt(page) &&
        (head.readUInt16LE(at + LMDB_PAGE_FLAGS_OFFSET) & LMDB_P_META) !== 0 &&
        head.readUInt32LE(at + LMDB_META_MAGIC_OFFSET) === LMDB_MAGIC;
      if (!ok) throw new SeenStoreError('STORE_CORRUPT', `${path} is not a valid LMDB file: meta page ${page} is damaged or missing`);
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
