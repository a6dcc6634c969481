import { SeenStore, type SeenStoreOptions } from '../index.js';
import type { DriverManifest } from '../store/driver.js';
import { driverFor } from '../store/open.js';
import type { ServedStore } from './served-store.js';
import { StoreThread } from './store-thread.js';

/** False when SEENSTORE_SERVE_INLINE=1: every store on the server's thread (the A/B runs of docs/benchmarks.md). */
function threadAllowed(): boolean {
  return process.env.SEENSTORE_SERVE_INLINE !== '1';
}

/**
 * Whether serve runs a store of this driver on a thread of its own: when its commits block the
 * thread that makes them (the manifest's `commitsBlockThread`), read from the manifest and never
 * from the backend's name; never when `allowed` is false.
 */
export function runsOnStoreThread(driver: DriverManifest, allowed = threadAllowed()): boolean {
  return allowed && driver.capabilities.commitsBlockThread;
}

/**
 * Opens the store that `seenstore serve --store LOCATION` serves: whatever SeenStore.open takes
 * (a directory, redis://, memory://). This is the one place a store is opened for serving. A store
 * whose commits block its thread (LMDB's sync) runs on a store thread (store-thread.ts), so that a
 * commit never stops the server reading and answering sockets; the others (Redis: network I/O;
 * memory) stay on the server's thread; `thread` false keeps every store there.
 */
export async function openServedStore(
  location: string,
  options: SeenStoreOptions = {},
  thread = threadAllowed(),
): Promise<ServedStore> {
  if (runsOnStoreThread(driverFor(location), thread)) return StoreThread.open(location, options);
  const store = await SeenStore.open(location, options);
  return {
    scope: async (name, scopeOptions) => store.scope(name, scopeOptions),
    stats: () => store.stats(),
    scopeNames: () => store.scopeNames(),
    snapshot: (name) => store.snapshot(name),
    snapshotCount: async () => (await store.snapshots()).length,
    driver: driverFor(location),
    nodes: store.nodes(),
    close: () => store.close(),
    failed: new Promise<Error>(() => undefined),
  };
}
