import type { Database } from 'lmdb';
import { MIGRATIONS, type MigrationTxn } from '../../../migrations/index.js';
import { SeenStoreError, asStoreError, assert } from '../../errors.js';
import { StoreEnv, namedDbExists } from './env.js';
import { STORE_HEADER_KEY } from './store-header.js';
import { faultPoint } from '../faults.js';
import { EXCLUSIVE_LOCK, tryLock } from './lock.js';
import { FORMAT_VERSION } from '../records.js';
import type { StoreHeader } from './records.js';
import { createSnapshot, defaultSnapshotName, requireAlone } from './snapshots.js';
import type { FrontierSettings, MigrationReport } from '../backend.js';
import { FrontierTxn } from './frontier-txn.js';

export type { MigrationReport };

export interface MigrateOptions {
  readonly mapSizeBytes: number;
  readonly lockStaleMs: number;
  /** Take a snapshot of the store before changing it (default true). */
  readonly snapshot?: boolean;
}

/**
 * Brings the store at `dir` to this version's format: refuses while any other process has it
 * open, snapshots it, then runs every step it needs and sets the header's format in one LMDB
 * write transaction, so a crash leaves the old format (and the snapshot) intact.
 */
export async function migrateStore(dir: string, options: MigrateOptions): Promise<MigrationReport> {
  const lock = await tryLock(dir, EXCLUSIVE_LOCK, options.lockStaleMs);
  if (lock === undefined) throw new SeenStoreError('STORE_LOCKED', `a restore or migration of ${dir} is running`);
  let env: StoreEnv | undefined;
  try {
    env = StoreEnv.open(dir, { create: false, mapSizeBytes: options.mapSizeBytes, anyFormat: true });
    const from = env.header.formatVersion;
    if (from === FORMAT_VERSION) return { from, to: from, steps: [], snapshot: null };
    if (from > FORMAT_VERSION) {
      throw new SeenStoreError(
        'FORMAT_UNSUPPORTED',
        `store format ${from} was written by a newer seenstore (this one knows up to ${FORMAT_VERSION})`,
      );
    }
    const steps = MIGRATIONS.filter((step) => step.from >= from);
    steps.forEach((step, i) =>
      assert(step.from === from + i && step.to === step.from + 1, `migration steps in order (at format ${step.from})`),
    );
    if (steps.length === 0 || steps[steps.length - 1]!.to !== FORMAT_VERSION) {
      throw new SeenStoreError('INTERNAL', `no migration path from format ${from} to ${FORMAT_VERSION}`);
    }
    requireAlone(env, 'migrate');
    const snapshot =
      options.snapshot === false
        ? null
        : await createSnapshot(
            env,
            defaultSnapshotName(`pre-migrate-${from}-to-${FORMAT_VERSION}-`),
            'pre-migrate',
            from,
          );
    const store = env;
    // Creating a named database is a commit of its own: before the migration's transaction.
    if (oldFrontierDb(store) !== undefined) store.ensureFrontierDb();
    const txn: MigrationTxn = {
      metaRecords: () =>
        [...store.metaDb.getRange({})].map(({ key, value }) => ({
          key,
          value: store.decodeMeta(value, `meta record ${JSON.stringify(key)}`),
        })),
      putMeta: (key, value) => store.putMeta(key as never, value),
      ...frontierMigration(store),
    };
    // write() holds the open guard and LMDB's writer lock: checked inside it, "no other process is
    // in the store" stays true until the migration commits, whatever this process's event loop
    // did since the snapshot (its locks/exclusive may have gone stale meanwhile).
    const done = env.write(() => {
      requireAlone(store, 'migrate');
      const results = steps.map((step) => ({
        from: step.from,
        to: step.to,
        summary: step.summary,
        changed: step.apply(txn),
      }));
      const header: StoreHeader = { ...env!.header, formatVersion: FORMAT_VERSION };
      env!.putMeta(STORE_HEADER_KEY, header);
      faultPoint('migrate:before-commit');
      return results;
    });
    return { from, to: FORMAT_VERSION, steps: done, snapshot };
  } catch (error) {
    throw asStoreError(error, `migrating ${dir}`);
  } finally {
    await env?.close();
    await lock.release();
  }
}

/**
 * The frontier's part of a migration transaction (call inside the migration's write): the records
 * of format 6 and before come from their own database; the frontier is written in the current
 * layout (its database is created before the transaction: see migrateStore).
 */
function frontierMigration(
  store: StoreEnv,
): Pick<MigrationTxn, 'frontierRecords' | 'removeFrontier' | 'dropOldFrontier' | 'putFrontier'> {
  const old = oldFrontierDb(store);
  return {
    // Index keys (format 6) have empty values: undefined.
    frontierRecords: () =>
      old === undefined
        ? []
        : [...old.getRange({})].map(({ key, value }) => ({
            key,
            value: value.length === 0 ? undefined : store.decodeMeta(value, `frontier record ${JSON.stringify(key)}`),
          })),
    removeFrontier: (key) => old?.removeSync(key as never),
    dropOldFrontier: () => old?.dropSync(),
    putFrontier: (scope, counters, entries, queues = [], owners = []) => {
      const txn = new FrontierTxn(store, store.ensureFrontierDb(), scope, Date.now());
      const state = txn.state;
      state.nextSeq = Math.max(state.nextSeq, counters.nextId);
      state.done = counters.done;
      state.failed = counters.failed ?? 0;
      if (counters.settings !== undefined) state.settings = counters.settings as FrontierSettings;
      if (counters.queueKeyPinned === true) state.queueKeyPinned = true;
      for (const { key, ...politeness } of queues) Object.assign(txn.queue(key), politeness);
      for (const { id, createdMs, ...entry } of entries)
        txn.restore({ ...entry, createdMs: createdMs ?? entry.dueMs }, id);
      for (const { owner, lastTakeMs } of owners) txn.putOwner(owner, lastTakeMs);
      txn.settle();
    },
  };
}

/** The frontier database of format 6 and before (lmdb-js's ordered keys), when the store has one. */
function oldFrontierDb(store: StoreEnv): Database<Buffer> | undefined {
  return namedDbExists(store.root, 'frontier')
    ? store.root.openDB<Buffer>({ name: 'frontier', encoding: 'binary' })
    : undefined;
}
