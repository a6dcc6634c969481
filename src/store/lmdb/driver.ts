import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { SeenStoreError } from '../../errors.js';
import { CHUNK_PAYLOAD_BYTES, CHUNK_STORED_BYTES } from '../chunks.js';
import { numberSetting, type Driver, type OpenOptions, type StoreSettings } from '../driver.js';

/** The LMDB driver's own options (SeenStoreOptions documents each, with its default). */
export interface LmdbOptions {
  /** Threads for adds: 2 or more start a bit thread (SeenStoreOptions.threads). */
  readonly threads: number;
  readonly mapSizeBytes?: number;
  readonly lockStaleMs?: number;
  readonly checkpointJournalBytes: number;
  readonly checkpointIntervalMs: number;
  /** The clock of frontier leases and record times (SeenStoreOptions.clock). */
  readonly clock: () => number;
}

const DEFAULT_CHECKPOINT_JOURNAL_BYTES = 32 * 2 ** 20;
const DEFAULT_CHECKPOINT_INTERVAL_MS = 60_000;

/**
 * A directory store (docs/architecture.md): one LMDB environment shared by any number of
 * processes. The backend's module (and LMDB's native addon) loads only when a store is opened.
 */
export const lmdbDriver: Driver<LmdbOptions> = Object.freeze({
  name: 'lmdb',
  schemes: [],
  capabilities: Object.freeze({
    persistent: true,
    durability: 'store',
    sharedAcrossProcesses: true,
    maintenance: true,
    offline: true,
    checkpoints: true,
    commitsBlockThread: true,
    frontierOrder: 'oldest-first',
    leaseClock: 'options',
    defaultStrategy: 'classic',
    // A filter is written in chunks of CHUNK_PAYLOAD_BYTES, each taking CHUNK_STORED_BYTES of pages.
    storedBytes: (mBits: number) => Math.ceil(mBits / 8 / CHUNK_PAYLOAD_BYTES) * CHUNK_STORED_BYTES,
  }),
  parseOptions(settings: StoreSettings): LmdbOptions {
    const mapSizeBytes = numberSetting(settings, 'mapSizeBytes');
    const lockStaleMs = numberSetting(settings, 'lockStaleMs');
    return Object.freeze({
      threads: numberSetting(settings, 'threads') ?? 1,
      ...(mapSizeBytes === undefined ? {} : { mapSizeBytes }),
      ...(lockStaleMs === undefined ? {} : { lockStaleMs }),
      checkpointJournalBytes: numberSetting(settings, 'checkpointJournalBytes') ?? DEFAULT_CHECKPOINT_JOURNAL_BYTES,
      checkpointIntervalMs: numberSetting(settings, 'checkpointIntervalMs') ?? DEFAULT_CHECKPOINT_INTERVAL_MS,
      clock: (settings.clock as (() => number) | undefined) ?? Date.now,
    });
  },
  async open(location: string, common: OpenOptions, options: LmdbOptions) {
    const { LmdbBackend } = await import('./backend.js');
    return LmdbBackend.open(location, common, options);
  },
  redact: (location: string) => location,
  resolve: (location: string) => resolve(location),
  knownAbsent: async (location: string) => !existsSync(join(location, 'data.mdb')),
  async offline() {
    const offline = await import('./offline.js');
    return {
      migrate: async (location: string, settings: StoreSettings & { readonly snapshot?: boolean }) =>
        offline.migrate(location, offlineOptions(settings, settings.snapshot)),
      restore: async (location: string, name: string, settings: StoreSettings) =>
        offline.restore(location, name, offlineOptions(settings, undefined)),
      damagedStoreReport: (location: string, refusal: SeenStoreError) => offline.damagedStoreReport(location, refusal),
      salvage: async (location: string, to: string, settings: StoreSettings) =>
        offline.salvage(location, to, offlineOptions(settings, undefined)),
    };
  },
});

function offlineOptions(
  settings: StoreSettings,
  snapshot: boolean | undefined,
): { mapSizeBytes?: number; lockStaleMs?: number; snapshot?: boolean } {
  const mapSizeBytes = numberSetting(settings, 'mapSizeBytes');
  const lockStaleMs = numberSetting(settings, 'lockStaleMs');
  return {
    ...(mapSizeBytes === undefined ? {} : { mapSizeBytes }),
    ...(lockStaleMs === undefined ? {} : { lockStaleMs }),
    ...(snapshot === undefined ? {} : { snapshot }),
  };
}
