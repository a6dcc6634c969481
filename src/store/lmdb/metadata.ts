import { SeenStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import type { ImportRequest } from '../backend.js';
import { CHUNK_PAYLOAD_BYTES, encodeChunk } from '../chunks.js';
import { faultPoint } from '../faults.js';
import { safePoint } from '../interruption.js';
import { readEpochHeader, readScopeRecord, type EpochHeader, type ScopeRecord } from '../records.js';
import type { CheckpointRecord } from './records.js';
import type { StoreEnv } from './env.js';
import {
  checkpointKey,
  chunkKey,
  chunkEpochRange,
  dropKey,
  dropRange,
  epochKey,
  epochRange,
  journalEpochRange,
  scopeKey,
  scopeRange,
} from './keys.js';

/** Keys deleted per write transaction while dropping an epoch's data. */
const DELETE_KEYS_PER_TXN = 2048;
/** Chunks written per transaction while importing. */
const IMPORT_CHUNKS_PER_TXN = 256;

/** The scope record as of the current read (or write) transaction. */
export function readScope(env: StoreEnv, scope: string): ScopeRecord | undefined {
  const value = env.getMeta(scopeKey(scope));
  return value === undefined ? undefined : readScopeRecord(value);
}

export function readHeader(env: StoreEnv, scope: string, epoch: number): EpochHeader {
  const value = env.getMeta(epochKey(scope, epoch));
  if (value === undefined) throw SeenStoreError.noEpoch(scope, epoch);
  return readEpochHeader(value);
}

/** Epoch `epoch`'s header, or undefined when it does not exist. */
export function findHeader(env: StoreEnv, scope: string, epoch: number): EpochHeader | undefined {
  const value = env.getMeta(epochKey(scope, epoch));
  return value === undefined ? undefined : readEpochHeader(value);
}

/** Inside a write transaction: epoch `epoch` must still be the scope's open one (EPOCH_SEALED). */
export function expectOpenEpoch(env: StoreEnv, scope: string, epoch: number): void {
  const record = readScope(env, scope);
  if (record === undefined || record.openEpoch !== epoch) {
    throw SeenStoreError.sealed(scope, epoch);
  }
}

export function scopeNames(env: StoreEnv): string[] {
  const names: string[] = [];
  for (const key of env.metaDb.getKeys(scopeRange())) {
    const parts = key as unknown as unknown[];
    if (Array.isArray(parts) && parts[0] === 'scope' && typeof parts[1] === 'string') names.push(parts[1]);
  }
  return names;
}

/** Epoch numbers of a scope that exist (have a header), ascending. */
export function epochNumbers(env: StoreEnv, scope: string): number[] {
  const numbers: number[] = [];
  for (const key of env.metaDb.getKeys(epochRange(scope))) {
    const epoch = (key as unknown as unknown[])[2];
    if (typeof epoch === 'number') numbers.push(epoch);
  }
  return numbers;
}

/** The checkpoint record of an epoch that holds nothing yet. */
export function emptyCheckpoint(atMs: number): CheckpointRecord {
  return { v: 2, seq: 0, submitted: 0, added: 0, sliceAdded: [0], atMs, merges: 0, mergedSliceAdded: [0] };
}

/** Writes a new open epoch: its header and its empty checkpoint record (inside a write transaction). */
export function putNewEpoch(env: StoreEnv, header: EpochHeader, atMs: number): void {
  env.putMeta(epochKey(header.scope, header.epoch), header);
  env.putMeta(checkpointKey(header.scope, header.epoch), emptyCheckpoint(atMs));
}

/** Creates the scope with `first` as epoch 1 in one write transaction, unless a racing process did. */
export function createScope(env: StoreEnv, scope: string, first: EpochHeader): ScopeRecord {
  const existing = readScope(env, scope);
  if (existing !== undefined) return existing;
  // A deleted scope of this name whose data a crash left behind: its epoch numbers are about to be reused.
  finishDrops(env, scope);
  return env.write(() => {
    const raced = readScope(env, scope);
    if (raced !== undefined) return raced;
    const now = Date.now();
    const record: ScopeRecord = { v: 1, name: scope, openEpoch: first.epoch, createdAtMs: now };
    env.putMeta(scopeKey(scope), record);
    putNewEpoch(env, first, now);
    return record;
  });
}

/**
 * Drops an epoch: its header goes in one transaction, with a `drop` marker, so the epoch is gone
 * for every reader at once; its chunks and journal are then deleted in bounded transactions and
 * the marker removed. A crash in between is finished by finishDrops.
 */
export function dropEpoch(env: StoreEnv, header: EpochHeader): void {
  const { scope, epoch } = header;
  env.write(() => {
    env.putMeta(dropKey(scope, epoch), { v: 1, header });
    env.removeMeta(epochKey(scope, epoch));
    env.removeMeta(checkpointKey(scope, epoch));
  });
  faultPoint('prune:after-unlink');
  deleteData(env, scope, epoch);
  env.write(() => env.removeMeta(dropKey(scope, epoch)));
}

function deleteData(env: StoreEnv, scope: string, epoch: number): void {
  const ranges = [
    [env.chunksDb, chunkEpochRange(scope, epoch)],
    [env.journalDb, journalEpochRange(scope, epoch)],
  ] as const;
  for (const [db, range] of ranges) {
    for (;;) {
      const keys = [...db.getKeys({ ...range, limit: DELETE_KEYS_PER_TXN })];
      if (keys.length === 0) break;
      env.write(() => {
        for (const key of keys) db.removeSync(key);
      });
      faultPoint('prune:mid-delete');
    }
  }
}

/** Finishes drops (and failed imports) that a crash interrupted: their data is deleted. */
export function finishDrops(env: StoreEnv, scope: string): EpochHeader[] {
  const finished: EpochHeader[] = [];
  for (const key of [...env.metaDb.getKeys(dropRange(scope))]) {
    const epoch = (key as unknown as unknown[])[2] as number;
    const marker = env.getMeta(dropKey(scope, epoch)) as { header?: unknown } | undefined;
    const header = readEpochHeader(marker?.header);
    deleteData(env, scope, epoch);
    env.write(() => env.removeMeta(dropKey(scope, epoch)));
    finished.push(header);
  }
  return finished;
}

/**
 * Creates a scope from an exported epoch. The data goes in under a drop marker, and one last
 * transaction writes the headers and the scope record, so a crash mid-import leaves no scope (the
 * next import or prune clears the leftovers).
 */
export async function importEpoch(env: StoreEnv, hash: XxHash, request: ImportRequest): Promise<ScopeRecord> {
  const { scope, epoch: imported, next, signal } = request;
  const n = imported.epoch;
  env.refresh();
  if (readScope(env, scope) !== undefined) throw SeenStoreError.scopeExists(scope);
  finishDrops(env, scope);
  env.write(() => env.putMeta(dropKey(scope, n), { v: 1, header: imported }));
  try {
    await writeChunks(env, hash, imported, request.filters, signal);
    await safePoint(signal, `importing into ${scope}/${n}`);
    return env.write(() => {
      if (readScope(env, scope) !== undefined) throw SeenStoreError.scopeExists(scope);
      const now = Date.now();
      env.putMeta(epochKey(scope, n), imported);
      const { counts } = request;
      env.putMeta(checkpointKey(scope, n), {
        ...emptyCheckpoint(now),
        submitted: counts.submitted,
        added: counts.added,
        sliceAdded: [...counts.sliceAdded],
      });
      if (next !== undefined) putNewEpoch(env, next, now);
      const record: ScopeRecord = { v: 1, name: scope, openEpoch: next?.epoch ?? n, createdAtMs: now };
      env.putMeta(scopeKey(scope), record);
      env.removeMeta(dropKey(scope, n));
      return record;
    });
  } catch (error) {
    // Under its drop marker the partial data is no scope yet: remove it now rather than at the next import.
    finishDrops(env, scope);
    throw error;
  }
}

async function writeChunks(
  env: StoreEnv,
  hash: XxHash,
  header: EpochHeader,
  filters: readonly Uint8Array[],
  signal: AbortSignal | undefined,
): Promise<void> {
  const { scope, epoch } = header;
  const pending: [number, number, Uint8Array][] = [];
  filters.forEach((bytes, filter) => {
    for (let chunk = 0; chunk * CHUNK_PAYLOAD_BYTES < bytes.length; chunk++) {
      const payload = bytes.subarray(chunk * CHUNK_PAYLOAD_BYTES, (chunk + 1) * CHUNK_PAYLOAD_BYTES);
      if (payload.some((b) => b !== 0)) pending.push([filter, chunk, payload]);
    }
  });
  for (let start = 0; start < pending.length; start += IMPORT_CHUNKS_PER_TXN) {
    env.write(() => {
      for (const [filter, chunk, payload] of pending.slice(start, start + IMPORT_CHUNKS_PER_TXN)) {
        env.chunksDb.putSync(chunkKey(scope, epoch, filter, chunk), encodeChunk(hash, payload));
      }
    });
    faultPoint('import:mid-chunks');
    await safePoint(signal, `importing into ${scope}/${epoch}`);
  }
}
