import { setImmediate as nextTurn } from 'node:timers/promises';
import { SeenStoreError } from '../errors.js';

/**
 * Long operations (reading and writing export files, import, merge, prune, snapshots) take an
 * optional AbortSignal and look at it only at their safe points: places where stopping leaves
 * nothing half-made (a temporary file not yet renamed, a transaction not yet begun). There they
 * give the event loop one turn, so that a signal handler (SIGINT, SIGTERM) that aborts the signal
 * can run even while the operation is otherwise synchronous, and then stop with INTERRUPTED.
 */
export async function safePoint(signal: AbortSignal | undefined, doing: string): Promise<void> {
  if (signal === undefined) return;
  // Two turns: a continuation that runs in the poll phase (after a read or a copy completed) gets
  // its first immediate before the loop polls again, and a signal is noticed only when it polls.
  await nextTurn();
  await nextTurn();
  throwIfInterrupted(signal, doing);
}

/** Stops with INTERRUPTED when `signal` was aborted; no turn of the event loop. */
export function throwIfInterrupted(signal: AbortSignal | undefined, doing: string): void {
  if (signal === undefined || !signal.aborted) return;
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : String(reason);
  throw new SeenStoreError('INTERRUPTED', `${doing}: stopped (${why}) at a safe point, nothing half-made left behind`, {
    cause: reason,
  });
}
