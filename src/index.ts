export { SeenStore, MAX_THREADS, MAX_HASH_THREADS, type SeenStoreOptions } from './epochs/seen-store.js';
export {
  Scope,
  type ScopeOptions,
  type ScopeStats,
  type EpochStats,
  type EpochDetails,
  type EpochSettings,
  type AddSummary,
  type AddOptions,
  type EnqueueOptions,
  type QueryOptions,
  type Classification,
  type DiffCategory,
  type DiffResult,
  type RotateResult,
} from './epochs/scope.js';
export { parseEpochSpec, type EpochSpec, type MembershipMode } from './epochs/epoch-spec.js';
export type { RotateOptions } from './epochs/rotation.js';
export type { PruneOptions, Dropped } from './epochs/retention.js';
export { DEFAULT_CAPACITY_URLS, DEFAULT_FPR_TARGET } from './epochs/create.js';
export { SeenStoreError, ERROR_CODES, type ErrorCode } from './errors.js';
export { HASH_SCHEME_ID, HASH_SCHEMES, type HashSchemeId } from './hash/scheme.js';
export type { Utf8Keys } from './hash/xxhash.js';
export { FORMAT_VERSION } from './store/records.js';
export type { Layout } from './filters/bloom.js';
export { STRATEGY_HELP } from './filters/strategy.js';
export type { Keying } from './filters/keying.js';
export { parseStrategy, type Strategy } from './filters/strategy.js';
export type { NormalizeMode } from './url/normalize.js';
export type {
  VerifyReport,
  Damage,
  SalvageReport,
  SalvageSkip,
  SnapshotInfo,
  RestoreResult,
  MigrationReport,
  CheckpointOutcome,
  SliceSummary,
} from './store/backend.js';
export type { ExportResult, ImportOptions, ImportResult, MergeResult, MergeFilesResult } from './epochs/transfer.js';
export { ExportedEpoch, type ExportedSummary } from './epochs/exported.js';
export {
  ScopeFrontier,
  DEFAULT_LEASE_MS,
  DEFAULT_FRONTIER_SETTINGS,
  type TakeOptions,
  type LeasedUrl,
  type FrontierStats,
  type FrontierSettings,
  type QueueOptions,
  type QueueStats,
  type UrlStatus,
} from './epochs/frontier.js';
export { mergeExportFiles } from './epochs/seen-store.js';
export type { ExportHeader } from './store/export-file.js';
export type { DiskUsage, DeletedScope } from './store/backend.js';
export type { NodeRegistry } from './store/nodes.js';
export {
  SetSummary,
  SetSummaryBuilder,
  SetDifference,
  DEFAULT_RECALL_TARGET,
  type SummarizeOptions,
  type SetDifferenceOptions,
  type SetDifferenceResult,
  type EncodedSummary,
} from './setdiff/set-difference.js';
export {
  writeSummaryFile,
  SUMMARY_FORMAT_VERSION,
  type SummaryHeader,
  type SummaryTree,
} from './setdiff/summary-file.js';
export { SETDIFF_SCHEME_ID, type TreeSeeds } from './setdiff/universe.js';
