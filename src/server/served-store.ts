import type {
  Classification,
  DiffResult,
  Dropped,
  EnqueueOptions,
  EpochDetails,
  EpochSpec,
  FrontierStats,
  LeasedUrl,
  TakeOptions,
  PruneOptions,
  QueryOptions,
  RotateOptions,
  RotateResult,
  ScopeOptions,
  ScopeStats,
  SnapshotInfo,
  Utf8Keys,
} from '../index.js';
import type { EntryPage, FrontierSettings, QueueOptions, QueueStats, UrlStatus } from '../epochs/frontier.js';
import type { EncodedSummary, SummarizeOptions } from '../setdiff/set-difference.js';
import type { NodeRegistry } from '../store/nodes.js';
import type { QueueKeyMode } from '../url/queue-key.js';


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
  enqueue(urls: readonly string[], options?: EnqueueOptions): Promise<boolean[]>;
  frontier(): ServedFrontier;
}

/** What the server uses of a scope's frontier (Scope.frontier()). */
export interface ServedFrontier {
  take(count: number, options?: TakeOptions): Promise<LeasedUrl[]>;
  done(ids: readonly string[], options?: { readonly refetchAtMs?: readonly number[] }): Promise<number>;
  release(ids: readonly string[], data?: readonly unknown[]): Promise<number>;
  reclaim(owner: string): Promise<number>;
  stats(): Promise<FrontierStats>;
  setdiffSummary(options?: SummarizeOptions): Promise<EncodedSummary>;
  schedule(urls: readonly string[], atMs: number | readonly number[], options?: QueueOptions): Promise<number>;
  urlStatus(url: string): Promise<UrlStatus | undefined>;
  settings(): Promise<FrontierSettings>;
  pinnedQueueKey(): Promise<QueueKeyMode>;
  configure(change: Partial<FrontierSettings>): Promise<FrontierSettings>;
  setDelay(queue: string, delayMs: number | null): Promise<void>;
  blockUntil(queue: string, untilMs: number): Promise<void>;
  setCrawlLimit(queue: string, limit: number | null): Promise<void>;
  listQueues(options?: { readonly after?: string; readonly limit?: number }): Promise<QueueStats[]>;
  queue(key: string): Promise<QueueStats | undefined>;
  deleteQueue(key: string): Promise<number>;
  clear(options?: { readonly completed?: boolean }): Promise<number>;
  entries(options: { readonly cursor?: string; readonly limit?: number; readonly queue?: string }): Promise<EntryPage>;
  purge(ids: readonly string[], beforeMs: number): Promise<number>;
}

/** What the server uses of a store. */
export interface ServedStore {
  /** The handle of scope `name` (USAGE for a name that is not a scope name); `options` shape a scope the first add creates. */
  scope(name: string, options: ScopeOptions): Promise<ServedScope>;
  stats(): Promise<ScopeStats[]>;
  /** Names of the scopes that exist. */
  scopeNames(): Promise<string[]>;
  snapshot(name?: string): Promise<SnapshotInfo>;
  snapshotCount(): Promise<number>;
  /** The store's serve nodes (SeenStore.nodes()). */
  readonly nodes: NodeRegistry;
  /** Checkpoints and closes the store (and its thread). */
  close(): Promise<void>;
  /** Settles with the error if the store fails underneath the server (its thread died); never otherwise. */
  readonly failed: Promise<Error>;
}
