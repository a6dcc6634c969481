/** The seam's operations on a whole store (Backend.maintenance) and what they report. */
/** Operations on a whole open store, of a driver with `capabilities.maintenance`; elsewhere UNSUPPORTED. */
export interface StoreMaintenance {
  snapshot(name: string | undefined, signal: AbortSignal | undefined): Promise<SnapshotInfo>;
  /** The same copy, written to `dir` outside the store (which must not exist): a backup on another disk. */
  snapshotTo(dir: string, signal: AbortSignal | undefined): Promise<SnapshotInfo>;
  diskUsage(): Promise<DiskUsage>;
  snapshots(): Promise<SnapshotInfo[]>;
  deleteSnapshot(name: string): Promise<void>;
  verify(): Promise<VerifyReport>;
}

/** One thing salvage could not read or copy: its kind (`page`, `record`, `chunk`, `journal`, `frontier`, `delivery`), its place, and why. */
export interface SalvageSkip {
  readonly kind: string;
  readonly where: string;
  readonly problem: string;
}

/** What a salvage (SeenStore.salvage) copied into the new store, and what it could not. */
export interface SalvageReport {
  readonly from: string;
  readonly to: string;
  /** Nothing was skipped: the copy holds everything the damaged store held. */
  readonly complete: boolean;
  readonly scopes: number;
  readonly epochs: number;
  /** Chunk records written, the filled ones included. */
  readonly chunks: number;
  /** Chunks that were written in the old store and could not be read: filled with ones in the copy (every URL there reads as seen). */
  readonly chunksFilled: number;
  /** Journal records after the epochs' checkpoints, carried into the copy (replayed when it opens). */
  readonly journalRecords: number;
  readonly frontierUrls: number;
  /** Of them, URLs that were leased: they wait again in the copy. */
  readonly leasesGivenBack: number;
  /** Undelivered batches (the `delivery` database) copied. */
  readonly deliveryRecords: number;
  /** Pages of the damaged data file read. */
  readonly pagesRead: number;
  readonly skipped: readonly SalvageSkip[];
  /** Differences of the copy that lose nothing: records rebuilt, a database read from the commit before. */
  readonly notes: readonly string[];
}

/** A snapshot: a consistent, read-only, point-in-time copy of a whole store. */
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

export interface Damage {
  /** The exact place: a record key, chunk or journal record. */
  readonly where: string;
  readonly problem: string;
  readonly code: string;
}

export interface VerifyReport {
  readonly ok: boolean;
  /** Pages the structural walk read (LMDB's page walk); 0 when the file could not be walked. */
  readonly pages?: number;
  readonly scopes: number;
  readonly epochs: number;
  readonly chunks: number;
  readonly journalRecords: number;
  readonly damage: Damage[];
  /** Not damage, but worth knowing (e.g. a prune that a crash interrupted). */
  readonly notes: string[];
}

export interface RestoreResult extends SnapshotInfo {
  /** The snapshot of the data the restore replaced (reason `pre-restore`). */
  readonly preRestore: SnapshotInfo;
}

export interface MigrationReport {
  readonly from: number;
  readonly to: number;
  readonly steps: { readonly from: number; readonly to: number; readonly summary: string; readonly changed: number }[];
  /** The safety snapshot of the old format (null when none was needed or it was declined). */
  readonly snapshot: SnapshotInfo | null;
}

/** How much of its LMDB file and map a store uses (SeenStore.diskUsage; the LMDB backend's). */
export interface DiskUsage {
  /** The size of data.mdb. */
  readonly fileBytes: number;
  /** Pages up to the highest one LMDB has handed out (its "last page"), in bytes: the file grows to this. */
  readonly usedBytes: number;
  /** The LMDB map (SeenStoreOptions.mapSizeBytes): the most the file can grow to. */
  readonly mapSizeBytes: number;
  /**
   * Of usedBytes, the pages no database holds (LMDB's free list: freed by dropped epochs, trimmed
   * journals and rewritten chunks). LMDB reuses them for new writes; a snapshot copies them too
   * (the whole file: StoreEnv.backup says why not LMDB's compacting copy).
   */
  readonly reclaimableBytes: number;
  readonly pageBytes: number;
}
