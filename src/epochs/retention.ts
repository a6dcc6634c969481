import { SeenStoreError } from '../errors.js';
import type { Backend } from '../store/backend.js';
import type { EpochHeader } from '../store/records.js';
import { safePoint } from '../store/interruption.js';
import { epochHeaderOf, finishDrops } from './seam-defaults.js';

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
  /** Bytes its bits and log held in the backend (LMDB: pages, now free for reuse). */
  readonly bytesFreed: number;
}

/**
 * Drops the sealed epochs that neither option keeps (an epoch is kept when either keeps it; the
 * open epoch is always kept). Each drop is atomic for readers (Backend.dropEpoch); a prune that a
 * crash interrupted finishes on the next prune. Nothing else is touched.
 */
export async function prune(
  backend: Backend,
  scope: string,
  options: PruneOptions,
  clock: () => number = Date.now,
): Promise<Dropped[]> {
  if (options.keepLast === undefined && options.sealedWithinMs === undefined) {
    throw new SeenStoreError(
      'USAGE',
      'prune needs --keep-last and/or --sealed-within: with neither it would keep nothing',
    );
  }
  const record = await backend.scopeRecord(scope);
  if (record === undefined) throw SeenStoreError.noScope(scope);
  const dropped: Dropped[] = (await finishDrops(backend, scope)).map((header) => ({
    epoch: header.epoch,
    sealedAtMs: header.sealedAtMs,
    bytesFreed: 0,
  }));
  const numbers = await backend.epochNumbers(scope);
  const keep = new Set<number>([record.openEpoch]);
  if (options.keepLast !== undefined) for (const n of numbers.slice(-options.keepLast)) keep.add(n);
  const now = clock();
  for (const n of numbers) {
    if (keep.has(n)) continue;
    const header = await headerUnlessDropped(backend, scope, n);
    if (header === undefined || header.state !== 'sealed') continue;
    if (
      options.sealedWithinMs !== undefined &&
      header.sealedAtMs !== null &&
      now - header.sealedAtMs < options.sealedWithinMs
    )
      continue;
    const done =
      dropped.length === 0
        ? ''
        : ` after dropping epoch${dropped.length === 1 ? '' : 's'} ${dropped.map((d) => d.epoch).join(', ')}`;
    await safePoint(options.signal, `pruning ${scope}${done}`);
    dropped.push({ epoch: n, sealedAtMs: header.sealedAtMs, bytesFreed: await backend.dropEpoch(header) });
  }
  return dropped;
}

/** Epoch n's header; undefined when another prune dropped it since the epochs were listed. */
async function headerUnlessDropped(backend: Backend, scope: string, n: number): Promise<EpochHeader | undefined> {
  try {
    return await epochHeaderOf(backend, scope, n);
  } catch (error) {
    if (error instanceof SeenStoreError && error.code === 'NOT_FOUND') return undefined;
    throw error;
  }
}
