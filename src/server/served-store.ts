import type {
  Classification,
  DiffResult,
  Dropped,
  EpochDetails,
  EpochSpec,
  PruneOptions,
  QueryOptions,
  RotateOptions,
  RotateResult,
  ScopeOptions,
  ScopeStats,
  SnapshotInfo,
  Utf8Keys,
} from '../index.js';


/**
 * What the server uses of a scope: the library's Scope methods it calls, all promises. The store
 * lives on its own thread (store-thread.ts), so that a commit, which syncs to disk inside the
 * library and blocks its thread for that long, never stops the server from reading and answering
 * sockets.
 */
export interface ServedScope {
  readonly name: string;
  addIfAbsentUtf8(keys: Utf8Keys): Promise<boolean[]>;
  has(urls: readonly string[], options?: QueryOptions): Promise<boolean[]>;
  stats(): Promise<ScopeStats>;
  openEpoch(): Promise<number | null>;
  epoch(n: number): Promise<EpochDetails>;
  create(options?: ScopeOptions): Promise<boolean>;
  rotate(options: RotateOptions): Promise<RotateResult | null>;
  prune(options: PruneOptions): Promise<Dropped[]>;
  classify(urls: readonly string[]): Promise<Classification[]>;
  diff(urls: readonly string[], from: EpochSpec, to: EpochSpec): Promise<DiffResult>;
}

/** What the server uses of a store. */
export interface ServedStore {
  /** The handle of scope `name` (USAGE for a name that is not a scope name); `options` shape a scope the first add creates. */
  scope(name: string, options: ScopeOptions): Promise<ServedScope>;
  stats(): Promise<ScopeStats[]>;
  snapshot(name?: string): Promise<SnapshotInfo>;
  snapshotCount(): Promise<number>;
  /** Checkpoints and closes the store (and its thread). */
  close(): Promise<void>;
  /** Settles with the error if the store fails underneath the server (its thread died); never otherwise. */
  readonly failed: Promise<Error>;
}
