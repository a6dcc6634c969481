import type { Backend, CheckpointOutcome, EpochBits } from '../store/backend.js';
import type { EpochHeader } from '../store/records.js';

// The engine's side of the seam's optional methods (docs/architecture.md "The seam"): a driver
// that can be served by its other methods leaves them out, as unstorage serves `clear` by listing
// and deleting; a driver with a cheaper way of its own keeps it. The engine calls these, never the
// optional methods directly.

/**
 * Epoch `n`'s header as stored now: the driver's `epochHeader`, else the header of the epoch's
 * bits (right for a driver whose `epoch()` loads nothing; LMDB and Redis read the header alone).
 */
export async function epochHeaderOf(backend: Backend, scope: string, n: number): Promise<EpochHeader> {
  if (backend.epochHeader !== undefined) return backend.epochHeader(scope, n);
  return (await backend.epoch(scope, n)).header;
}

/** The drops a crash interrupted, finished: none for a driver whose drop is one step (it has no `finishDrops`). */
export async function finishDrops(backend: Backend, scope: string): Promise<EpochHeader[]> {
  return backend.finishDrops === undefined ? [] : backend.finishDrops(scope);
}

/** Folds the epoch's write log in: 'clean' for a driver without a log (no `checkpoint`; `capabilities.checkpoints` false). */
export async function checkpointEpoch(epoch: EpochBits): Promise<CheckpointOutcome> {
  return epoch.checkpoint === undefined ? 'clean' : epoch.checkpoint();
}

/** Closes the backend: nothing to do for a driver that holds nothing outside the process's memory (no `close`). */
export async function closeBackend(backend: Backend): Promise<void> {
  await backend.close?.();
}
