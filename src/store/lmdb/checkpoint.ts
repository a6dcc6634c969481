import { SeenStoreError } from '../../errors.js';
import type { CheckpointOutcome } from '../backend.js';
import type { StoreEnv } from './env.js';
import type { JournalFile } from './journal-file.js';
import type { EpochCounts } from '../backend.js';
import type { EpochHeader } from '../records.js';
import { checkpointKey, fenceKey, journalEpochRange } from './keys.js';
import { tryLock } from './lock.js';
import { readCheckpointRecord, readFenceRecord, type CheckpointRecord } from './records.js';

/** Bytes of chunks written per checkpoint transaction: small transactions let LMDB reuse pages. */
export const CHECKPOINT_TXN_BYTES = 16 * 2 ** 20;

/** Throws STORE_LOCKED when the checkpoint lost its lock or fencing token; call inside every write transaction. */
export type Fence = () => void;

/**
 * Runs `write` as the scope's one checkpointer: it holds the scope's checkpoint lock file, and a
 * fencing token it took in the store, which `write` checks (the Fence) inside every transaction,
 * so a checkpointer whose lock went stale (its event loop stalled) can never overwrite chunks that
 * a newer checkpointer wrote. `poisoned` tells whether the working copy was poisoned meanwhile.
 * Resolves 'busy' when another process holds the lock.
 */
export async function fencedCheckpoint(
  env: StoreEnv,
  scope: string,
  lockStaleMs: number,
  poisoned: () => boolean,
  write: (fence: Fence) => Promise<CheckpointOutcome>,
): Promise<CheckpointOutcome> {
  const lock = await tryLock(env.dir, `checkpoint-${scope}`, lockStaleMs);
  if (lock === undefined) return 'busy';
  try {
    const token = env.write(() => {
      const current = env.getMeta(fenceKey(scope));
      const next = (current === undefined ? 0 : readFenceRecord(current).token) + 1;
      env.putMeta(fenceKey(scope), { v: 1, token: next });
      return next;
    });
    const fence: Fence = () => {
      const current = env.getMeta(fenceKey(scope));
      if (!lock.held() || current === undefined || readFenceRecord(current).token !== token || poisoned()) {
        throw new SeenStoreError('STORE_LOCKED', `checkpoint of ${scope} lost its lock; another process took over`);
      }
    };
    const outcome = await write(fence);
    if (outcome === 'written') await env.flushed();
    return outcome;
  } finally {
    await lock.release();
  }
}

/** Times compactJournal tries again when commits keep landing between its LMDB sync and its lock. */
const COMPACT_ATTEMPTS = 3;

/**
 * Drops the journal file's frames that checkpoints have folded into LMDB. A frame may go only once
 * the checkpoint record that covers it is durable: LMDB is synced first, and the frames are judged
 * holding the open guard against the state that sync covered (no commit since), so no frame leaves
 * the journal before its bits are on disk. Frames of an epoch without a checkpoint record belong to
 * a dropped epoch. Returns false when it gave up (busy store): the next checkpoint tries again.
 */
export async function compactJournal(env: StoreEnv, journal: JournalFile): Promise<boolean> {
  for (let attempt = 0; attempt < COMPACT_ATTEMPTS; attempt++) {
    const syncedTxnId = env.lastCommittedTxnId();
    await env.syncData();
    const done = env.holdGuard(() => {
      if (env.lastCommittedTxnId() !== syncedTxnId) return false;
      env.refresh();
      const folded = new Map<string, number>();
      journal.compact((scope, epoch, seq) => {
        const id = `${epoch}/${scope.toString('utf8')}`;
        let upTo = folded.get(id);
        if (upTo === undefined) {
          const record = env.getMeta(checkpointKey(scope.toString('utf8'), epoch));
          upTo = record === undefined ? Infinity : readCheckpointRecord(record).seq;
          folded.set(id, upTo);
        }
        return seq > upTo;
      });
      return true;
    });
    if (done) return true;
  }
  return false;
}

/** An epoch's checkpoint record: what its stored chunks hold. */
export function readEpochCheckpoint(env: StoreEnv, header: EpochHeader): CheckpointRecord {
  const value = env.getMeta(checkpointKey(header.scope, header.epoch));
  if (value === undefined)
    throw new SeenStoreError('STORE_CORRUPT', `epoch ${header.scope}/${header.epoch} has no checkpoint record`);
  return readCheckpointRecord(value);
}

/** Records that an epoch's chunks hold every journal record up to `seq`, and trims those records (inside a write transaction). */
export function writeEpochCheckpoint(
  env: StoreEnv,
  header: EpochHeader,
  seq: number,
  counts: EpochCounts,
  sliceAdded: readonly number[],
): void {
  const { scope, epoch } = header;
  const previous = readEpochCheckpoint(env, header);
  if (seq <= previous.seq) return;
  const record: CheckpointRecord = { ...previous, seq, ...counts, sliceAdded, atMs: Date.now() };
  env.putMeta(checkpointKey(scope, epoch), record);
  for (const key of env.journalDb.getKeys(journalEpochRange(scope, epoch, 0, seq + 1))) env.journalDb.removeSync(key);
}
