import { SeenStoreError } from '../../errors.js';
import type { CheckpointOutcome } from '../backend.js';
import type { StoreEnv } from './env.js';
import { fenceKey } from './keys.js';
import { tryLock } from './lock.js';
import { readFenceRecord } from './records.js';

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
