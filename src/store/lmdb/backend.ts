import { join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import type {
  Backend,
  DeletedScope,
  Deliveries,
  EpochBits,
  Frontier,
  EpochUsage,
  ImportRequest,
  Rotation,
  RotateRequest,
  StoreMaintenance,
} from '../backend.js';
import { faultPoint } from '../faults.js';
import { removeStoreLeftovers } from '../leftovers.js';
import { sealHeader, type EpochHeader, type ScopeRecord } from '../records.js';
import type { BitThread } from './bit-thread.js';
import { DEFAULT_MAP_SIZE_BYTES, StoreEnv } from './env.js';
import type { OpenOptions } from '../driver.js';
import { lmdbDriver, type LmdbOptions } from './driver.js';
import { LmdbEpoch, RELEASE_MAP_AFTER_BYTES, loadEpochCopy, type LmdbEpochContext } from './epoch.js';
import type { EpochCopy } from './epoch-copy.js';
import { scopeKey, epochKey } from './keys.js';
import { EXCLUSIVE_LOCK, effectiveLockStaleMs, isLocked } from './lock.js';
import { LmdbFrontier } from './frontier.js';
import { LmdbDeliveries, type DeliveryFiles } from './deliveries.js';
import * as meta from './metadata.js';
import { SNAPSHOTS_DIR } from './data-file.js';
import { CHUNK_PAYLOAD_BYTES } from '../chunks.js';
import { epochUsage } from './usage.js';
import { DirectoryNodes } from './nodes.js';

/**
 * The LMDB backend: one store directory, one LMDB environment, any number of scopes, shared by
 * any number of processes. Each epoch's bits live in process memory, loaded from chunks plus the
 * journal; every add-if-absent is decided inside LMDB's cross-process write lock after catching
 * up with every batch any process journaled, and acknowledged once its journal frame is synced
 * (one fdatasync of journal.log for every batch appended before it: journal-file.ts).
 */
export class LmdbBackend implements Backend {
  readonly driver = lmdbDriver;
  readonly location: string;
  readonly maintenance: StoreMaintenance;
  readonly nodes: DirectoryNodes;
  readonly #env: StoreEnv;
  readonly #ctx: LmdbEpochContext;
  readonly #bitThread: BitThread | undefined;
  /** Loaded epochs, by `scope/epoch`: the open ones, and sealed ones that were read. */
  readonly #epochs = new Map<string, LmdbEpoch>();
  #words = new Uint32Array(0);
  readonly #deliveryFiles: DeliveryFiles = new Map();
  readonly #clock: () => number;
  #closed = false;

  private constructor(env: StoreEnv, bitThread: BitThread | undefined, common: OpenOptions, options: LmdbOptions) {
    this.location = env.dir;
    this.#env = env;
    this.#bitThread = bitThread;
    this.#clock = options.clock;
    this.#ctx = Object.freeze({
      env,
      hash: common.hash,
      bitThread,
      checkpointJournalBytes: options.checkpointJournalBytes,
      checkpointIntervalMs: options.checkpointIntervalMs,
      lockStaleMs: effectiveLockStaleMs(options.lockStaleMs),
      warn: common.warn,
      clock: options.clock,
      deliveryFiles: this.#deliveryFiles,
      scratch: (words: number) => {
        if (this.#words.length < words) this.#words = new Uint32Array(Math.max(words, 2048));
        return this.#words;
      },
    });
    this.maintenance = lmdbMaintenance(env, common.hash);
    this.nodes = new DirectoryNodes(env.dir, options.clock);
  }

  static async open(dir: string, common: OpenOptions, options: LmdbOptions): Promise<LmdbBackend> {
    const mapSizeBytes = options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES;
    // Loaded here: only an open that may create the store needs it (not `has`, a server's reads).
    if (common.create && !common.readOnly) await (await import('./create.js')).createStoreWhole(dir, mapSizeBytes);
    // Never created in place (create.ts): a data file missing now is NOT_FOUND or lost data.
    const env = StoreEnv.open(dir, { create: false, mapSizeBytes, readOnly: common.readOnly });
    // Checked after opening: a restore or migration that started before this process entered
    // LMDB's reader table is seen here; one that starts later sees this process and refuses.
    if (await isLocked(dir, EXCLUSIVE_LOCK, effectiveLockStaleMs(options.lockStaleMs))) {
      await env.close();
      throw new SeenStoreError(
        'STORE_LOCKED',
        `a snapshot restore or a migration of ${dir} is running; open the store when it is done`,
      );
    }
    let bitThread: BitThread | undefined;
    try {
      bitThread = options.threads > 1 ? await (await import('./bit-thread.js')).BitThread.start() : undefined;
    } catch (error) {
      await env.close();
      throw asStoreError(error, 'starting the bit thread (threads: 2)');
    }
    // A killed restore's incoming copy is as large as the store: the next open that may write
    // removes it (a read-only open leaves the directory as it found it).
    if (!env.readOnly) removeStoreLeftovers(dir, join(dir, SNAPSHOTS_DIR));
    return new LmdbBackend(env, bitThread, common, options);
  }

  get readOnly(): boolean {
    return this.#env.readOnly;
  }

  /** The store's on-disk format version. */
  get formatVersion(): number {
    return this.#env.header.formatVersion;
  }

  async scopeNames(): Promise<string[]> {
    this.#env.refresh();
    return meta.scopeNames(this.#env);
  }

  async scopeRecord(scope: string): Promise<ScopeRecord | undefined> {
    this.#env.refresh();
    return meta.readScope(this.#env, scope);
  }

  async epochHeader(scope: string, n: number): Promise<EpochHeader> {
    return meta.readHeader(this.#env, scope, n);
  }

  async epochNumbers(scope: string): Promise<number[]> {
    return meta.epochNumbers(this.#env, scope);
  }

  async createScope(scope: string, first: EpochHeader): Promise<ScopeRecord> {
    const record = meta.createScope(this.#env, scope, first);
    await this.#env.flushed();
    return record;
  }

  /**
   * In one LMDB write transaction: a crash leaves either the old epoch open or the new one, never
   * both or neither. The open epoch's copy is caught up inside it, so the sealed counts include
   * every add committed before the rotation; its journal goes into its chunks afterwards, so
   * reading it later loads only chunks.
   */
  async rotate(scope: string, request: RotateRequest): Promise<Rotation | null> {
    const env = this.#env;
    const open = this.#load(scope, request.epoch);
    const rotation = env.write(() => {
      const record = meta.readScope(env, scope);
      if (record === undefined) throw SeenStoreError.noScope(scope);
      if (request.ifEpoch !== undefined && record.openEpoch !== request.ifEpoch) return null;
      open.filters.catchUp();
      const current = open.filters.header;
      if (current.state !== 'open' || record.openEpoch !== current.epoch) {
        throw SeenStoreError.sealed(scope, current.epoch);
      }
      const summary = open.filters.summary();
      const now = this.#clock();
      const sealed = sealHeader(current, summary, now);
      const before = meta.findHeader(env, scope, current.epoch - 1);
      const opened = request.next(current, summary, before);
      env.putMeta(epochKey(scope, current.epoch), sealed);
      meta.putNewEpoch(env, opened, now);
      env.putMeta(scopeKey(scope), { ...record, openEpoch: opened.epoch });
      faultPoint('rotate:before-commit');
      return { sealed, opened };
    });
    faultPoint('rotate:after-commit');
    if (rotation === null) return null;
    await env.flushed();
    await open.epoch
      .checkpoint()
      .catch((error: unknown) =>
        this.#ctx.warn(
          `checkpoint of sealed epoch ${rotation.sealed.epoch} failed (its journal keeps every add): ${(error as Error).message}`,
        ),
      );
    return rotation;
  }

  async importEpoch(request: ImportRequest): Promise<ScopeRecord> {
    const record = await meta.importEpoch(this.#env, this.#ctx.hash, request);
    await this.#env.flushed();
    return record;
  }

  async dropEpoch(header: EpochHeader): Promise<number> {
    const { bytesOnDisk } = epochUsage(this.#env, this.#env.useJournal(this.#ctx.hash), header);
    this.#epochs.delete(`${header.scope}/${header.epoch}`);
    meta.dropEpoch(this.#env, header);
    await this.#env.flushed();
    return bytesOnDisk;
  }

  async deleteScope(scope: string): Promise<DeletedScope | undefined> {
    for (const id of [...this.#epochs.keys()]) if (id.slice(0, id.lastIndexOf('/')) === scope) this.#epochs.delete(id);
    const deleted = (await import('./scope-delete.js')).deleteScope(this.#env, scope);
    await this.#env.flushed();
    return deleted;
  }

  async finishDrops(scope: string): Promise<EpochHeader[]> {
    return meta.finishDrops(this.#env, scope);
  }

  async usage(header: EpochHeader): Promise<EpochUsage> {
    const usage = epochUsage(this.#env, this.#env.useJournal(this.#ctx.hash), header);
    // Reading each chunk's key maps its first page (LMDB reads an overflow value's header): let them go.
    if (usage.chunks * CHUNK_PAYLOAD_BYTES >= RELEASE_MAP_AFTER_BYTES) this.#env.releaseMappedPages();
    return { bytesOnDisk: usage.bytesOnDisk, pendingRecords: usage.journalRecords };
  }

  async frontier(scope: string): Promise<Frontier> {
    return new LmdbFrontier(this.#env, scope, this.#clock);
  }

  async deliveries(scope: string): Promise<Deliveries> {
    return new LmdbDeliveries(this.#env.dir, scope, this.#deliveryFiles);
  }

  async epoch(scope: string, n: number): Promise<EpochBits> {
    return this.#load(scope, n).epoch;
  }

  /** Epoch `n`'s copy, loaded once per handle; later uses catch it up. */
  #load(scope: string, n: number): { epoch: LmdbEpoch; filters: EpochCopy } {
    const id = `${scope}/${n}`;
    let epoch = this.#epochs.get(id);
    if (epoch === undefined) {
      const filters = loadEpochCopy(
        this.#env,
        this.#ctx.hash,
        meta.readHeader(this.#env, scope, n),
        this.#bitThread !== undefined,
      );
      epoch = new LmdbEpoch(this.#ctx, filters);
      this.#epochs.set(id, epoch);
    }
    return { epoch, filters: epoch.workingCopy };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      // A read-only handle replayed the journal tail in memory only: there is nothing of its own to write.
      if (!this.#env.readOnly) {
        for (const epoch of this.#epochs.values()) if (epoch.header.state === 'open') await this.#flushAtClose(epoch);
      }
    } finally {
      for (const file of this.#deliveryFiles.values()) file.close();
      await this.#env.close();
      await this.#bitThread?.close();
    }
  }

  /**
   * The checkpoint at close. On a full disk it cannot be written, and need not be: every
   * acknowledged add is in the journal, which a later run folds into LMDB once there is room. So
   * a run whose work is committed ends with a warning, not STORE_FULL (docs/reliability.md).
   */
  async #flushAtClose(epoch: LmdbEpoch): Promise<void> {
    try {
      await epoch.flush();
    } catch (error) {
      if (!(error instanceof SeenStoreError) || error.code !== 'STORE_FULL') throw error;
      const { scope, epoch: n } = epoch.header;
      this.#ctx.warn(
        `warning: the checkpoint of ${scope}/${n} at close was not written, the disk is full (${error.message}); every acknowledged URL is in the journal, and a later run writes the checkpoint once there is room`,
      );
    }
  }
}

/** Maintenance modules are loaded when first used: queries and adds never load them. */
function lmdbMaintenance(env: StoreEnv, hash: XxHash): StoreMaintenance {
  const snapshots = async (): Promise<typeof import('./snapshots.js')> => import('./snapshots.js');
  return {
    snapshot: async (name, signal) => {
      const { createSnapshot, defaultSnapshotName } = await snapshots();
      return createSnapshot(env, name ?? defaultSnapshotName(''), 'user', env.header.formatVersion, signal);
    },
    snapshotTo: async (dir, signal) => (await snapshots()).createSnapshotAt(env, dir, env.header.formatVersion, signal),
    diskUsage: async () => (await import('./disk-usage.js')).diskUsage(env),
    snapshots: async () => (await snapshots()).listSnapshots(env.dir),
    deleteSnapshot: async (name) => (await snapshots()).deleteSnapshot(env.dir, name),
    verify: async () => {
      const { verifyStore } = await import('./verify.js');
      try {
        return verifyStore(env, hash);
      } finally {
        // Verifying read every page of the store through the map: let them leave the RSS.
        env.releaseMappedPages();
      }
    },
  };
}
