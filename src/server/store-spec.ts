import { SeenStore, type SeenStoreOptions } from '../index.js';
import type { ServedStore } from './served-store.js';
import { StoreThread } from './store-thread.js';

/** Whether a --store argument names a Redis backend rather than a directory. */
export function isStoreUrl(spec: string): boolean {
  return /^rediss?:\/\//i.test(spec);
}

/**
 * Opens the store that `seenstore serve --store SPEC` serves: a directory (LMDB) or a redis:// URL,
 * whatever SeenStore.open takes. This is the one place a store is opened for serving. A directory
 * store runs on its own thread (its commits block the thread that makes them); a Redis store's
 * calls are network I/O and stay on the server's thread.
 */
export async function openServedStore(spec: string, options: SeenStoreOptions = {}, thread = process.env.SEENSTORE_SERVE_INLINE !== '1'): Promise<ServedStore> {
  if (thread && !isStoreUrl(spec)) return StoreThread.open(spec, options);
  const store = await SeenStore.open(spec, options);
  return {
    scope: async (name, scopeOptions) => store.scope(name, scopeOptions),
    stats: () => store.stats(),
    scopeNames: () => store.scopeNames(),
    snapshot: (name) => store.snapshot(name),
    snapshotCount: async () => (await store.snapshots()).length,
    nodes: store.nodes(),
    close: () => store.close(),
    failed: new Promise<Error>(() => undefined),
  };
}
