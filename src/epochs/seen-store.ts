import { join, resolve } from 'node:path';
import { SeenStoreError, asStoreError } from '../errors.js';
import { BitThread } from '../store/bit-thread.js';
import { XxHash } from '../hash/xxhash.js';
import { DEFAULT_MAP_SIZE_BYTES, StoreEnv, readOnlyError } from '../store/env.js';
import { isLocked, LOCK_STALE_MS, LOCK_STALE_MS_MIN } from '../store/lock.js';
import { removeStoreLeftovers } from '../store/leftovers.js';
import { migrateStore, type MigrationReport } from '../store/migrate.js';
import {
  createSnapshot,
  createSnapshotAt,
  defaultSnapshotName,
  deleteSnapshot,
  EXCLUSIVE_LOCK,
  listSnapshots,
  SNAPSHOTS_DIR,
  restoreSnapshot,
  type RestoreResult,
  type SnapshotInfo,
} from '../store/snapshots.js';
import { verifyPages, verifyStore, type VerifyReport } from '../store/verify.js';
import { diskUsage, type DiskUsage } from '../store/disk-usage.js';
import { checkScopeName } from './create.js';
import { Scope, type ScopeOptions, type ScopeStats } from './scope.js';
import { importEpoch, mergeFiles, type ImportOptions, type ImportResult, type MergeFilesResult } from './transfer.js';

export interface SeenStoreOptions {
  /** Create the directory and an empty store when missing (default true; false gives NOT_FOUND). */
  readonly create?: boolean;
  /**
   * Address space reserved for the LMDB map (default 64 GiB). It costs neither memory nor disk
   * until used, and must exceed the store's data; a full map fails adds with STORE_FULL.
   */
  readonly mapSizeBytes?: number;
  /** Checkpoint once this many journal bytes accumulate (default 32 MiB; bounds replay at open). */
  readonly checkpointJournalBytes?: number;
  /** Checkpoint at least this often while adds arrive (default 60 s). */
  readonly checkpointIntervalMs?: number;
  /**
   * A lock whose holder stopped refreshing it for this long is taken over (default 10 s, at least
   * 2 s). A killed process blocks checkpoints for at most this plus 1 s (a fresh lock is stamped up
   * to a second ahead); a live holder whose event loop stalls longer loses the lock, and the fencing
   * token then stops its writes.
   */
  readonly lockStaleMs?: number;
  /** Receives non-fatal problems, e.g. a background checkpoint that failed (default: process warning). */
  readonly onWarning?: (message: string) => void;
  /**
   * Threads for adds (default 1: the calling thread only). With 2, the filters live in shared
   * memory and a worker thread sets the bits of each batch while the calling thread hashes it
   * (the two overlap; answers and bits are exactly those of one thread; docs/benchmarks.md has
   * what it gains). Counts above 2 are accepted (up to 16) and use 2: one thread owns the bits
   * during a batch, and the strings can only be hashed on the thread that holds them.
   */
  readonly threads?: number;
  /** The earlier name of `threads` (taken when `threads` is not given). */
  readonly hashThreads?: number;
  /**
   * Open the store read-only (default false). Nothing is ever written: LMDB opens with its
   * read-only flag, no store header is created, the journal tail is replayed in memory only, and
   * there is no checkpoint (not even at close); every write (add, delete, rotate, merge, prune,
   * import, checkpoint, snapshot) fails with USAGE. Reads see everything committed, journal tail
   * included, and work on a read-only mount or without write permission. The trade-off: a reader
   * replays the whole journal tail at every open, as a writer's next checkpoint would have folded
   * it into the chunks; and a missing store is NOT_FOUND, never created (`create` is ignored).
   */
  readonly readOnly?: boolean;
}

export const MAX_THREADS = 16;
/** @deprecated the earlier name of MAX_THREADS. */
export const MAX_HASH_THREADS = MAX_THREADS;

/**
 * A store: one directory, one LMDB environment, any number of scopes. Several processes may open
 * the same store at once; each add-if-absent decision is made inside LMDB's cross-process write
 * lock after catching up with every committed batch, so a URL is reported new exactly once.
 */
export class SeenStore {
  readonly dir: string;
  readonly #env: StoreEnv;
  readonly #scopes = new Map<string, Scope>();
  readonly #ctx;
  #closed = false;

  readonly #bitThread: BitThread | undefined;

  private constructor(dir: string, env: StoreEnv, hash: XxHash, bitThread: BitThread | undefined, options: SeenStoreOptions) {
    this.dir = dir;
    this.#env = env;
    this.#bitThread = bitThread;
    this.#ctx = Object.freeze({
      env,
      hash,
      bitThread,
      checkpointJournalBytes: options.checkpointJournalBytes ?? 32 * 2 ** 20,
      checkpointIntervalMs: options.checkpointIntervalMs ?? 60_000,
      lockStaleMs: lockStaleMs(options),
      warn: options.onWarning ?? ((message: string) => process.emitWarning(message, 'SeenStoreWarning')),
      assertOpen: () => {
        if (this.#closed) throw new SeenStoreError('STORE_CLOSED', `the store at ${dir} is closed`);
      },
      assertWritable: (doing: string) => {
        if (env.readOnly) throw readOnlyError(dir, doing);
      },
    });
  }

  static async open(dir: string, options: SeenStoreOptions = {}): Promise<SeenStore> {
    if (typeof dir !== 'string' || dir.length === 0) throw new TypeError('dir must be a non-empty string');
    const threads = options.threads ?? options.hashThreads ?? 1;
    if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
      throw new SeenStoreError('USAGE', `threads must be a whole number from 1 to ${MAX_THREADS}, got ${String(threads)}`);
    }
    const hash = await XxHash.load();
    const env = StoreEnv.open(dir, {
      create: options.create ?? true,
      mapSizeBytes: options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES,
      readOnly: options.readOnly ?? false,
    });
    // Checked after opening: a restore or migration that started before this process entered
    // LMDB's reader table is seen here; one that starts later sees this process and refuses.
    if (await isLocked(dir, EXCLUSIVE_LOCK, lockStaleMs(options))) {
      await env.close();
      throw new SeenStoreError('STORE_LOCKED', `a snapshot restore or a migration of ${dir} is running; open the store when it is done`);
    }
    let bitThread: BitThread | undefined;
    try {
      bitThread = threads > 1 ? await BitThread.start() : undefined;
    } catch (error) {
      await env.close();
      throw asStoreError(error, 'starting the bit thread (threads: 2)');
    }
    // A killed restore's incoming copy is as large as the store: the next open that may write
    // removes it (a read-only open leaves the directory as it found it).
    if (!env.readOnly) removeStoreLeftovers(dir, join(dir, SNAPSHOTS_DIR));
    const store = new SeenStore(dir, env, hash, bitThread, options);
    openHere.set(resolve(dir), (openHere.get(resolve(dir)) ?? 0) + 1);
    return store;
  }

  /**
   * Brings an older store to this version's format (see migrations/): refuses while any other
   * process has it open, snapshots it first (unless `snapshot: false`), then migrates in one
   * transaction. A store of the current format is left as it is.
   */
  static async migrate(dir: string, options: Pick<SeenStoreOptions, 'mapSizeBytes' | 'lockStaleMs'> & { snapshot?: boolean } = {}): Promise<MigrationReport> {
    refuseIfOpenHere(dir, 'migrate');
    return migrateStore(dir, {
      mapSizeBytes: options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES,
      lockStaleMs: lockStaleMs(options),
      ...(options.snapshot === undefined ? {} : { snapshot: options.snapshot }),
    });
  }

  /**
   * Replaces the store's data with snapshot `name`. Refuses (STORE_LOCKED) while any other process
   * has the store open, or when one wrote to it while the restore ran; the store must be closed in
   * this process too. The current data is saved first as a snapshot named `pre-restore-TIME`,
   * returned as `preRestore`.
   */
  static async restoreSnapshot(dir: string, name: string, options: Pick<SeenStoreOptions, 'mapSizeBytes' | 'lockStaleMs'> = {}): Promise<RestoreResult> {
    refuseIfOpenHere(dir, `restore snapshot ${name}`);
    return restoreSnapshot(dir, name, lockStaleMs(options), () =>
      StoreEnv.open(dir, { create: false, mapSizeBytes: options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES, anyFormat: true }),
    );
  }

  /** The handle of scope `name` (default `default`). Options shape its first epoch only. */
  scope(name = 'default', options: ScopeOptions = {}): Scope {
    this.#ctx.assertOpen();
    checkScopeName(name);
    let scope = this.#scopes.get(name);
    if (scope === undefined) {
      scope = new Scope(this.#ctx, name, options);
      this.#scopes.set(name, scope);
    }
    return scope;
  }

  /** Names of the scopes that exist in the store. */
  async scopeNames(): Promise<string[]> {
    this.#ctx.assertOpen();
    this.#env.refresh();
    const names: string[] = [];
    for (const key of this.#env.metaDb.getKeys({ start: ['scope'], end: ['scope\u0000'] })) {
      const parts = key as unknown as unknown[];
      if (Array.isArray(parts) && parts[0] === 'scope' && typeof parts[1] === 'string') names.push(parts[1]);
    }
    return names;
  }

  async stats(): Promise<ScopeStats[]> {
    const stats: ScopeStats[] = [];
    for (const name of await this.scopeNames()) stats.push(await this.scope(name).stats());
    return stats;
  }

  /**
   * Creates a scope from an export file (see ImportOptions): sealed by default, followed by a fresh
   * open epoch; with `open`, the imported epoch stays open with its seeds.
   */
  async import(path: string, options: ImportOptions = {}): Promise<ImportResult> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('import');
    return importEpoch(this.#env, this.#ctx.hash, path, options);
  }

  /**
   * Checks every header, checkpoint record, chunk (checksum, size, place) and journal record
   * (checksum, sequence, slice) of the store; reports each damage with its exact place.
   */
  verify(): VerifyReport {
    this.#ctx.assertOpen();
    try {
      return verifyStore(this.#env, this.#ctx.hash);
    } finally {
      // Verifying read every page of the store through the map: let them leave the RSS.
      this.#env.releaseMappedPages();
    }
  }

  /**
   * Verifies the store at `dir` without a handle: its page structure first (every page of every
   * database, read without mapping the file, so a cut or damaged file is reported, never a crash),
   * then, when that is sound, every record (verify()). Opens read-only: nothing is written. A store
   * that cannot be opened for damage is reported as damage; other failures (NOT_FOUND,
   * FORMAT_UNSUPPORTED) are thrown.
   */
  static async verify(dir: string, options: Pick<SeenStoreOptions, 'mapSizeBytes'> = {}): Promise<VerifyReport> {
    if (typeof dir !== 'string' || dir.length === 0) throw new TypeError('dir must be a non-empty string');
    let store: SeenStore;
    try {
      // Opening walks the pages and stops at the first damage; verify() walks them again.
      store = await SeenStore.open(dir, { create: false, readOnly: true, ...(options.mapSizeBytes === undefined ? {} : { mapSizeBytes: options.mapSizeBytes }) });
    } catch (error) {
      if (!(error instanceof SeenStoreError) || error.code !== 'STORE_CORRUPT') throw error;
      // Refused as damaged: list every finding of the walk, or the refusal itself when the walk
      // has none to list (an empty or missing data file).
      const structure = verifyPages(dir);
      const damage = structure.damage.length > 0 ? structure.damage : [{ where: dir, problem: error.message, code: error.code }];
      return { ok: false, pages: structure.pages, scopes: 0, epochs: 0, chunks: 0, journalRecords: 0, notes: [], damage };
    }
    try {
      return store.verify();
    } finally {
      await store.close();
    }
  }

  /**
   * A consistent point-in-time copy of the whole store, taken while writers keep running (LMDB's
   * compacting copy in one read transaction): every add acknowledged before the call is in it.
   * Stored read-only in `snapshots/NAME` (default name: the UTC time). `signal` stops it after the
   * copy, before the rename (INTERRUPTED, the copy removed).
   */
  async snapshot(name?: string, options: { readonly signal?: AbortSignal } = {}): Promise<SnapshotInfo> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('take a snapshot');
    return createSnapshot(this.#env, name ?? defaultSnapshotName(''), 'user', this.#env.header.formatVersion, options.signal);
  }

  /**
   * The same consistent copy as snapshot(), written to `dir` outside the store (which must not
   * exist; its last path component is the snapshot's name): a backup on another disk. Complete or
   * absent, never half-written.
   */
  async snapshotTo(dir: string, options: { readonly signal?: AbortSignal } = {}): Promise<SnapshotInfo> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('take a snapshot');
    return createSnapshotAt(this.#env, resolve(dir), this.#env.header.formatVersion, options.signal);
  }

  /** How much of its file and LMDB map the store uses, and what a compacting copy would give back. */
  async diskUsage(): Promise<DiskUsage> {
    this.#ctx.assertOpen();
    return diskUsage(this.#env);
  }

  /** The store's snapshots, oldest first, with their time, format and size. */
  snapshots(): SnapshotInfo[] {
    this.#ctx.assertOpen();
    return listSnapshots(this.dir);
  }

  deleteSnapshot(name: string): void {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('delete a snapshot');
    deleteSnapshot(this.dir, name);
  }

  /** Checkpoints every scope this handle has used. */
  async checkpoint(): Promise<void> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('checkpoint');
    for (const scope of this.#scopes.values()) await scope.checkpoint();
  }

  /** Checkpoints, then closes the environment. Further calls fail with STORE_CLOSED. */
  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      for (const scope of this.#scopes.values()) await scope.flush();
    } finally {
      this.#closed = true;
      const count = (openHere.get(resolve(this.dir)) ?? 1) - 1;
      if (count > 0) openHere.set(resolve(this.dir), count);
      else openHere.delete(resolve(this.dir));
      await this.#env.close();
      await this.#bitThread?.close();
    }
  }
}

/**
 * Writes the union of export files (identical seeds and geometry; see Scope.merge) to `out`, an
 * export file again: to combine parallel crawlers' exports without a store.
 */
export async function mergeExportFiles(paths: readonly string[], out: string, options: { readonly signal?: AbortSignal } = {}): Promise<MergeFilesResult> {
  return mergeFiles(await XxHash.load(), paths, out, options.signal);
}

/** Store directories with open handles in this process (LMDB's reader table lists processes, not handles). */
const openHere = new Map<string, number>();

function refuseIfOpenHere(dir: string, doing: string): void {
  const count = openHere.get(resolve(dir)) ?? 0;
  if (count > 0) throw new SeenStoreError('STORE_LOCKED', `cannot ${doing}: ${count} handle${count === 1 ? ' is' : 's are'} open on ${dir} in this process; close ${count === 1 ? 'it' : 'them'} first`);
}

function lockStaleMs(options: { readonly lockStaleMs?: number }): number {
  return Math.max(LOCK_STALE_MS_MIN, options.lockStaleMs ?? LOCK_STALE_MS);
}
