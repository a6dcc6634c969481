export { SeenStore, type SeenStoreOptions } from './epochs/seen-store.js';
export { Scope, type ScopeOptions, type ScopeStats, type EpochStats, type AddSummary } from './epochs/scope.js';
export { DEFAULT_CAPACITY_URLS, DEFAULT_FPR_TARGET } from './epochs/create.js';
export { SeenStoreError, ERROR_CODES, type ErrorCode } from './errors.js';
export { HASH_SCHEME_ID } from './hash/scheme.js';
export { FORMAT_VERSION } from './store/records.js';
export type { Layout } from './filters/bloom.js';
export type { NormalizeMode } from './url/normalize.js';
