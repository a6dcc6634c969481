import type { SeenStoreError } from '../../errors.js';
import { XxHash } from '../../hash/xxhash.js';
import type { SalvageReport, VerifyReport } from '../backend.js';
import { DEFAULT_MAP_SIZE_BYTES, StoreEnv } from './env.js';
import { effectiveLockStaleMs } from './lock.js';
import { migrateStore, type MigrationReport } from './migrate.js';
import { restoreSnapshot, type RestoreResult } from './snapshots.js';
import { salvageStore } from './salvage.js';
import { verifyPages } from './verify.js';

/** Options of the operations on a closed LMDB store. */
export interface OfflineOptions {
  readonly mapSizeBytes?: number;
  readonly lockStaleMs?: number;
}

/** Brings the store at `dir` to this version's format (see migrations/). */
export async function migrate(
  dir: string,
  options: OfflineOptions & { readonly snapshot?: boolean },
): Promise<MigrationReport> {
  return migrateStore(dir, {
    mapSizeBytes: options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES,
    lockStaleMs: effectiveLockStaleMs(options.lockStaleMs),
    ...(options.snapshot === undefined ? {} : { snapshot: options.snapshot }),
  });
}

/** Replaces the store's data with snapshot `name` (see snapshots.ts). */
export async function restore(dir: string, name: string, options: OfflineOptions): Promise<RestoreResult> {
  return restoreSnapshot(dir, name, effectiveLockStaleMs(options.lockStaleMs), () =>
    StoreEnv.open(dir, {
      create: false,
      mapSizeBytes: options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES,
      anyFormat: true,
    }),
  );
}

/**
 * The report of a store that open refused as damaged: every finding of the page walk, or the
 * refusal itself when the walk has none to list (an empty or missing data file).
 */
export function damagedStoreReport(dir: string, refusal: SeenStoreError): VerifyReport {
  const structure = verifyPages(dir);
  const damage =
    structure.damage.length > 0 ? structure.damage : [{ where: dir, problem: refusal.message, code: refusal.code }];
  return { ok: false, pages: structure.pages, scopes: 0, epochs: 0, chunks: 0, journalRecords: 0, notes: [], damage };
}

/** Copies everything readable of the store at `dir` into a new store at `to` (salvage.ts). */
export async function salvage(dir: string, to: string, options: OfflineOptions): Promise<SalvageReport> {
  return salvageStore(dir, to, await XxHash.load(), options.mapSizeBytes ?? DEFAULT_MAP_SIZE_BYTES);
}
