import { SeenStoreError } from '../errors.js';
import type { StoreEnv } from '../store/lmdb/env.js';
import { EpochFilters } from '../store/lmdb/epoch-filters.js';
import { faultPoint } from '../store/faults.js';
import { safePoint } from '../store/interruption.js';
import { checkpointKey, chunkKey, dropKey, epochKey, journalKey } from '../store/lmdb/keys.js';
import { readEpochHeader, type EpochHeader } from '../store/records.js';
import { epochUsage } from '../store/lmdb/usage.js';

export interface PruneOptions {
  /** Keep the N most recent epochs (the open one counts). */
  readonly keepLast?: number;
  /** Keep epochs sealed less than this long ago. */
  readonly sealedWithinMs?: number;
  /** Stops the prune between two epochs (INTERRUPTED): each epoch is dropped whole or kept. */
  readonly signal?: AbortSignal;
}

export interface Dropped {
  readonly epoch: number;
  readonly sealedAtMs: number | null;
  /** LMDB page bytes its chunks and journal held; now free pages for LMDB to reuse. */
  readonly bytesFreed: number;
}

/** Keys deleted per write transaction while dropping an epoch's data. */
const DELETE_KEYS_PER_TXN = 2048;

/** Epoch numbers of a scope that exist (have a header), ascending. */
export function epochNumbers(env: StoreEnv, scope: string): number[] {
  const numbers: number[] = [];
  for (const key of env.metaDb.getKeys({ start: epochKey(scope, 0), end: ['epoch', scope, Number.MAX_SAFE_INTEGER] })) {
    const epoch = (key as unknown as unknown[])[2];
    if (typeof epoch === 'number') numbers.push(epoch);
  }
  return numbers;
}

/**
 * Drops the sealed epochs that neither option keeps (an epoch is kept when either keeps it; the
 * open epoch is always kept). Each drop first removes the epoch's header in one transaction, with
 * a `drop` marker, so the epoch is gone for every reader at once; its chunks and journal are then
 * deleted in bounded transactions and the marker removed. A prune interrupted by a crash finishes
 * on the next prune. Nothing else is touched.
 */
export async function prune(env: StoreEnv, scope: string, options: PruneOptions): Promise<Dropped[]> {
  if (options.keepLast === undefined && options.sealedWithinMs === undefined) {
    throw new SeenStoreError('USAGE', 'prune needs --keep-last and/or --sealed-within: with neither it would keep nothing');
  }
  const record = EpochFilters.readScope(env, scope);
  if (record === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${scope} does not exist`);
  const dropped = finishPendingDrops(env, scope);
  const numbers = epochNumbers(env, scope);
  const keep = new Set<number>([record.openEpoch]);
  if (options.keepLast !== undefined) for (const n of numbers.slice(-options.keepLast)) keep.add(n);
  const now = Date.now();
  for (const n of numbers) {
    if (keep.has(n)) continue;
    const header = EpochFilters.readHeader(env, scope, n);
    if (header.state !== 'sealed') continue;
    if (options.sealedWithinMs !== undefined && header.sealedAtMs !== null && now - header.sealedAtMs < options.sealedWithinMs) continue;
    const done = dropped.length === 0 ? '' : ` after dropping epoch${dropped.length === 1 ? '' : 's'} ${dropped.map((d) => d.epoch).join(', ')}`;
    await safePoint(options.signal, `pruning ${scope}${done}`);
    dropped.push(dropEpoch(env, header));
  }
  return dropped;
}

function dropEpoch(env: StoreEnv, header: EpochHeader): Dropped {
  const { scope, epoch } = header;
  const { bytesOnDisk } = epochUsage(env, header);
  env.write(() => {
    env.putMeta(dropKey(scope, epoch), { v: 1, header });
    env.removeMeta(epochKey(scope, epoch));
    env.removeMeta(checkpointKey(scope, epoch));
  });
  faultPoint('prune:after-unlink');
  deleteData(env, scope, epoch);
  env.write(() => env.removeMeta(dropKey(scope, epoch)));
  return { epoch, sealedAtMs: header.sealedAtMs, bytesFreed: bytesOnDisk };
}

function deleteData(env: StoreEnv, scope: string, epoch: number): void {
  const ranges: [typeof env.chunksDb, (string | number)[], (string | number)[]][] = [
    [env.chunksDb, chunkKey(scope, epoch, 0, 0), chunkKey(scope, epoch + 1, 0, 0)],
    [env.journalDb, journalKey(scope, epoch, 0), [scope, epoch + 1]],
  ];
  for (const [db, start, end] of ranges) {
    for (;;) {
      const keys = [...db.getKeys({ start, end, limit: DELETE_KEYS_PER_TXN })];
      if (keys.length === 0) break;
      env.write(() => {
        for (const key of keys) db.removeSync(key);
      });
      faultPoint('prune:mid-delete');
    }
  }
}

/** Finishes drops (and failed imports) that a crash interrupted: their data is deleted. */
export function finishPendingDrops(env: StoreEnv, scope: string): Dropped[] {
  const finished: Dropped[] = [];
  for (const key of [...env.metaDb.getKeys({ start: dropKey(scope, 0), end: ['drop', scope, Number.MAX_SAFE_INTEGER] })]) {
    const epoch = (key as unknown as unknown[])[2] as number;
    const marker = env.getMeta(dropKey(scope, epoch)) as { header?: unknown } | undefined;
    const header = readEpochHeader(marker?.header);
    deleteData(env, scope, epoch);
    env.write(() => env.removeMeta(dropKey(scope, epoch)));
    finished.push({ epoch, sealedAtMs: header.sealedAtMs, bytesFreed: 0 });
  }
  return finished;
}
