import { resolve } from 'node:path';
import { SeenStoreError, unsupported } from '../errors.js';
import { XxHash } from '../hash/xxhash.js';
import type { NodeRegistry } from '../store/nodes.js';
import type {
  Backend,
  DeletedScope,
  DiskUsage,
  MigrationReport,
  RestoreResult,
  SalvageReport,
  SnapshotInfo,
  StoreMaintenance,
  VerifyReport,
} from '../store/backend.js';
import type { OfflineOperations } from '../store/driver.js';
import { driverFor, openBackend, redactLocation } from '../store/open.js';
import { checkScopeName } from './create.js';
import { Scope, type ScopeOptions, type ScopeStats } from './scope.js';
import type { ImportOptions, ImportResult, MergeFilesResult } from './transfer.js';
import { closeBackend } from './seam-defaults.js';
import { CloseGate, gatedBackend } from './close-gate.js';

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
  /**
   * Redis stores (docs/redis.md): replicas that must confirm each write (Redis WAIT) before it is
   * acknowledged, so that a failover keeps every acknowledged add (default 0: the master's AOF).
   * Ignored by directory stores.
   */
  readonly waitReplicas?: number;
  /**
   * Redis stores: the deadline of every call, its retries through a failover or a lost connection
   * included, and of each step of opening: past it, STORE_UNAVAILABLE (default 30,000 ms; at least
   * 100). One attempt takes at most a quarter of it (0.5–5 s), so a shorter deadline gives up on
   * a silent node sooner but rides through shorter failovers only. The location's `timeout-ms=`
   * overrides it (docs/redis.md "Deadlines"). Ignored by directory stores.
   */
  readonly unavailableAfterMs?: number;
  /**
   * The clock of the store's record times, epoch ages and frontier leases, in milliseconds since
   * the Unix epoch (default Date.now). For tests, which must not wait for time to pass: a clock set
   * ahead makes leases run out and epochs old at once. A Redis store without it times leases, delays
   * and node entries by Redis's TIME, one clock for every machine; with it, each call passes this
   * clock's time and Redis takes it as now (docs/redis.md "Time"): never in production.
   */
  readonly clock?: () => number;
}

export const MAX_THREADS = 16;
/** @deprecated the earlier name of MAX_THREADS. */
export const MAX_HASH_THREADS = MAX_THREADS;

/**
 * A store: what its location names (a directory; `redis://`, `memory://`: the driver of its scheme,
 * docs/architecture.md "Drivers") holding any number of scopes. Several processes may open
 * the same store at once; each add-if-absent decision is made atomically by the backend after
 * catching up with every committed batch, so a URL is reported new exactly once.
 */
export class SeenStore {
  /** The store's location as given to open (a directory). */
  readonly dir: string;
  /** The backend as the engine calls it: through the close gate. */
  readonly #backend: Backend;
  readonly #unguarded: Backend;
  readonly #gate: CloseGate;
  readonly #scopes = new Map<string, Scope>();
  readonly #ctx;
  #closed = false;
  /** The close under way or done: a second close() waits for the first. */
  #closing: Promise<void> | undefined;

  private constructor(dir: string, unguarded: Backend, hash: XxHash, clock: () => number) {
    this.dir = dir;
    const closedError = () => SeenStoreError.closed(`the store at ${redactLocation(dir)}`);
    this.#gate = new CloseGate(closedError);
    const backend = gatedBackend(unguarded, this.#gate);
    this.#backend = backend;
    this.#unguarded = unguarded;
    this.#ctx = Object.freeze({
      backend,
      hash,
      clock,
      assertOpen: () => {
        if (this.#closed) throw closedError();
      },
      assertWritable: (doing: string) => {
        if (unguarded.readOnly) {
          throw SeenStoreError.readOnly(doing, redactLocation(dir));
        }
      },
    });
  }

  static async open(dir: string, options: SeenStoreOptions = {}): Promise<SeenStore> {
    if (typeof dir !== 'string' || dir.length === 0) throw new TypeError('dir must be a non-empty string');
    const threads = options.threads ?? options.hashThreads ?? 1;
    if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
      throw new SeenStoreError(
        'USAGE',
        `threads must be a whole number from 1 to ${MAX_THREADS}, got ${String(threads)}`,
      );
    }
    if (options.clock !== undefined && typeof options.clock !== 'function')
      throw new TypeError('clock must be a function returning milliseconds');
    const hash = await XxHash.load();
    const common = {
      hash,
      create: options.create ?? true,
      readOnly: options.readOnly ?? false,
      warn: options.onWarning ?? ((message: string) => process.emitWarning(message, 'SeenStoreWarning')),
    };
    // Each driver takes the options that apply to it (store/driver.ts) and checks them itself.
    const backend = await openBackend(dir, common, { ...options, threads });
    const store = new SeenStore(dir, backend, hash, options.clock ?? Date.now);
    openHere.set(resolve(dir), (openHere.get(resolve(dir)) ?? 0) + 1);
    return store;
  }

  /**
   * Brings an older store to this version's format (see migrations/): refuses while any other
   * process has it open, snapshots it first (unless `snapshot: false`), then migrates in one
   * transaction. A store of the current format is left as it is. A store on a shared server
   * (Redis) migrates while it stays open to others, in steps a crash cannot cut in half, with no
   * snapshot: what an older layout kept is refused until its migration ends (docs/redis.md
   * "Frontier").
   */
  static async migrate(
    dir: string,
    options: Pick<SeenStoreOptions, 'mapSizeBytes' | 'lockStaleMs'> & { snapshot?: boolean } = {},
  ): Promise<MigrationReport> {
    if (!driverFor(dir).capabilities.offline) return migrateOpen(dir);
    const offline = await offlineOperations(dir, 'migrate');
    refuseIfOpenHere(dir, 'migrate');
    return offline.migrate(dir, options);
  }

  /**
   * Replaces the store's data with snapshot `name`. Refuses (STORE_LOCKED) while any other process
   * has the store open, or when one wrote to it while the restore ran; the store must be closed in
   * this process too. The current data is saved first as a snapshot named `pre-restore-TIME`,
   * returned as `preRestore`. LMDB stores only.
   */
  static async restoreSnapshot(
    dir: string,
    name: string,
    options: Pick<SeenStoreOptions, 'mapSizeBytes' | 'lockStaleMs'> = {},
  ): Promise<RestoreResult> {
    const offline = await offlineOperations(dir, 'restore a snapshot of');
    refuseIfOpenHere(dir, `restore snapshot ${name}`);
    return offline.restore(dir, name, options);
  }

  /**
   * Copies everything readable of the store at `dir` into a new store at `to` (a path that does
   * not exist, or an empty directory): every scope's epochs (headers, checkpoint counts, chunks,
   * the journal after each checkpoint), every frontier URL with its state (a leased URL waits
   * again), the undelivered batches. `dir` is read without LMDB (its pages with positional reads,
   * checked as the open's page walk checks them), so a store that open refuses as damaged is
   * salvaged too; what cannot be read is skipped and listed in the report (`complete` false), a
   * written chunk that cannot be read is filled with ones. `dir` is never written. LMDB stores
   * only; run it while no process writes to `dir`.
   */
  static async salvage(
    dir: string,
    to: string,
    options: Pick<SeenStoreOptions, 'mapSizeBytes'> = {},
  ): Promise<SalvageReport> {
    if (typeof dir !== 'string' || dir.length === 0) throw new TypeError('dir must be a non-empty string');
    if (typeof to !== 'string' || to.length === 0) throw new TypeError('to must be a non-empty string');
    const offline = await offlineOperations(dir, 'salvage');
    return offline.salvage(dir, to, options);
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
    return this.#backend.scopeNames();
  }

  /**
   * The serve nodes that share this store (URLFrontier's ListNodes, docs/frontier.md "A fleet"):
   * kept where the store's data is, so every process of the store sees every node's entry.
   */
  nodes(): NodeRegistry {
    this.#ctx.assertOpen();
    return this.#backend.nodes;
  }

  /**
   * Deletes scope `name` with all of its epochs, its frontier and its settings; resolves with what
   * it held, or undefined when it does not exist. Gone for every process at once: a writer still
   * adding to it fails EPOCH_SEALED, and a later add under the name creates a new scope with
   * fresh seeds. Not undoable (take a snapshot first, or export its epochs).
   */
  async deleteScope(name: string): Promise<DeletedScope | undefined> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('delete a scope');
    checkScopeName(name);
    this.#scopes.delete(name);
    return this.#backend.deleteScope(name);
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
    return (await import('./transfer.js')).importEpoch(this.#backend, this.#ctx.hash, path, options);
  }

  /**
   * Checks every header, checkpoint record, chunk (checksum, size, place) and journal record
   * (checksum, sequence, slice) of the store; reports each damage with its exact place.
   */
  async verify(): Promise<VerifyReport> {
    this.#ctx.assertOpen();
    return this.#maintenance('verify').verify();
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
    const offline = await offlineOperations(dir, 'verify');
    let store: SeenStore;
    try {
      // Opening walks the pages and stops at the first damage; verify() walks them again.
      store = await SeenStore.open(dir, {
        create: false,
        readOnly: true,
        ...(options.mapSizeBytes === undefined ? {} : { mapSizeBytes: options.mapSizeBytes }),
      });
    } catch (error) {
      if (!(error instanceof SeenStoreError) || error.code !== 'STORE_CORRUPT') throw error;
      return offline.damagedStoreReport(dir, error);
    }
    try {
      return await store.verify();
    } finally {
      await store.close();
    }
  }

  /**
   * A consistent point-in-time copy of the whole store, taken while writers keep running (LMDB's
   * copy of the whole file in one read transaction): every add acknowledged before the call is in it.
   * Stored read-only in `snapshots/NAME` (default name: the UTC time). `signal` stops it after the
   * copy, before the rename (INTERRUPTED, the copy removed).
   */
  async snapshot(name?: string, options: { readonly signal?: AbortSignal } = {}): Promise<SnapshotInfo> {
    this.#ctx.assertOpen();
    const maintenance = this.#maintenance('take a snapshot');
    this.#ctx.assertWritable('take a snapshot');
    return maintenance.snapshot(name, options.signal);
  }

  /**
   * The same consistent copy as snapshot(), written to `dir` outside the store (which must not
   * exist; its last path component is the snapshot's name): a backup on another disk. Complete or
   * absent, never half-written.
   */
  async snapshotTo(dir: string, options: { readonly signal?: AbortSignal } = {}): Promise<SnapshotInfo> {
    this.#ctx.assertOpen();
    const maintenance = this.#maintenance('take a snapshot');
    this.#ctx.assertWritable('take a snapshot');
    return maintenance.snapshotTo(resolve(dir), options.signal);
  }

  /** How much of its file and LMDB map the store uses, and how much of it is free pages LMDB reuses. */
  async diskUsage(): Promise<DiskUsage> {
    this.#ctx.assertOpen();
    return this.#maintenance('measure disk usage').diskUsage();
  }

  /** The store's snapshots, oldest first, with their time, format and size. */
  async snapshots(): Promise<SnapshotInfo[]> {
    this.#ctx.assertOpen();
    return this.#maintenance('list snapshots').snapshots();
  }

  async deleteSnapshot(name: string): Promise<void> {
    this.#ctx.assertOpen();
    const maintenance = this.#maintenance('delete a snapshot');
    this.#ctx.assertWritable('delete a snapshot');
    await maintenance.deleteSnapshot(name);
  }

  /** Checkpoints every scope this handle has used. */
  async checkpoint(): Promise<void> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('checkpoint');
    for (const scope of this.#scopes.values()) await scope.checkpoint();
  }

  /**
   * Checkpoints, then closes the store. Calls made from now on fail with STORE_CLOSED; operations
   * in flight finish, or fail with STORE_CLOSED at their next step (the close gate).
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const count = (openHere.get(resolve(this.dir)) ?? 1) - 1;
    if (count > 0) openHere.set(resolve(this.dir), count);
    else openHere.delete(resolve(this.dir));
    await this.#gate.close();
    await closeBackend(this.#unguarded);
  }

  #maintenance(doing: string): StoreMaintenance {
    const maintenance = this.#backend.maintenance;
    if (!this.#backend.driver.capabilities.maintenance || maintenance === undefined)
      throw unsupported(this.#backend.driver.name, doing);
    return maintenance;
  }
}

/**
 * Writes the union of export files (identical seeds and geometry; see Scope.merge) to `out`, an
 * export file again: to combine parallel crawlers' exports without a store.
 */
export async function mergeExportFiles(
  paths: readonly string[],
  out: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<MergeFilesResult> {
  return (await import('./transfer.js')).mergeFiles(await XxHash.load(), paths, out, options.signal);
}

/** The migration of a store that migrates while open (Backend.migrate); UNSUPPORTED for a driver with neither. */
async function migrateOpen(location: string): Promise<MigrationReport> {
  const backend = await openBackend(
    location,
    {
      hash: await XxHash.load(),
      create: false,
      readOnly: false,
      warn: (message) => process.emitWarning(message, 'SeenStoreWarning'),
    },
    {},
  );
  try {
    if (backend.migrate === undefined) throw unsupported(backend.driver.name, `migrate ${redactLocation(location)}`);
    return await backend.migrate();
  } finally {
    await closeBackend(backend);
  }
}

/** The operations on a closed store, of a driver that has them (`capabilities.offline`); UNSUPPORTED elsewhere. */
async function offlineOperations(location: string, doing: string): Promise<OfflineOperations> {
  const driver = driverFor(location);
  if (!driver.capabilities.offline || driver.offline === undefined) {
    throw unsupported(driver.name, `${doing} ${redactLocation(location)}`);
  }
  return driver.offline();
}

/** Store directories with open handles in this process (LMDB's reader table lists processes, not handles). */
const openHere = new Map<string, number>();

function refuseIfOpenHere(dir: string, doing: string): void {
  const count = openHere.get(resolve(dir)) ?? 0;
  if (count > 0)
    throw new SeenStoreError(
      'STORE_LOCKED',
      `cannot ${doing}: ${count} handle${count === 1 ? ' is' : 's are'} open on ${dir} in this process; close ${count === 1 ? 'it' : 'them'} first`,
    );
}
