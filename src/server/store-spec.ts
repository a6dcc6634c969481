import { SeenStore, SeenStoreError, type SeenStoreOptions } from '../index.js';
import type { ServedStore } from './served-store.js';
import { StoreThread } from './store-thread.js';

/** Whether a --store argument names a Redis backend rather than a directory. */
export function isStoreUrl(spec: string): boolean {
  return /^rediss?:\/\//i.test(spec);
}

/**
 * Opens the store that `seenstore serve --store SPEC` serves: an LMDB directory today. This is the
 * one place a store is opened for serving, so that the Redis Cluster backend of the storage seam
 * (issue 18) plugs in here as `redis://host:port/...` without the server changing.
 */
export async function openServedStore(spec: string, options: SeenStoreOptions = {}, thread = process.env.SEENSTORE_SERVE_INLINE !== '1'): Promise<ServedStore> {
  if (isStoreUrl(spec)) {
    throw new SeenStoreError('USAGE', `--store ${spec}: Redis-backed stores come with the storage backend seam (issue 18); serve an LMDB directory for now`);
  }
  if (thread) return StoreThread.open(spec, options);
  const store = await SeenStore.open(spec, options);
  return {
    scope: async (name, scopeOptions) => store.scope(name, scopeOptions),
    stats: () => store.stats(),
    snapshot: (name) => store.snapshot(name),
    snapshotCount: async () => store.snapshots().length,
    close: () => store.close(),
    failed: new Promise<Error>(() => undefined),
  };
}
