import { SeenStoreError } from '../../errors.js';

/**
 * The bounds of every call to Redis (docs/redis.md "Deadlines"). A node that accepts a connection
 * and never answers (a paused process, a stuck fsync, another service on the port) would otherwise
 * hold a call for ever: node-redis times a command out only until it is written to the socket,
 * and its cluster client's connect waits for every master.
 */
export interface RedisDeadlines {
  /** A call, its retries through failovers included, ends by then: STORE_UNAVAILABLE. Also bounds opening. */
  readonly unavailableAfterMs: number;
  /**
   * One attempt of one command, and the silence after which a connection is dropped and made
   * again (node-redis `socketTimeout`; idle connections PING at half of it): a quarter of the
   * deadline, from 500 ms to 5 s, so that a call sees several attempts, and a failover, within it.
   */
  readonly attemptMs: number;
  /** The timeout a `WAIT` is sent with: well inside one attempt, so the socket is never silent that long. */
  readonly waitTimeoutMs: number;
}

export const DEFAULT_UNAVAILABLE_AFTER_MS = 30_000;
const ATTEMPT_MS_MIN = 500;
const ATTEMPT_MS_MAX = 5_000;
const WAIT_TIMEOUT_MS_MAX = 2_000;

export function redisDeadlines(unavailableAfterMs: number = DEFAULT_UNAVAILABLE_AFTER_MS): RedisDeadlines {
  if (!Number.isSafeInteger(unavailableAfterMs) || unavailableAfterMs < 100) {
    throw new SeenStoreError(
      'USAGE',
      `the Redis deadline (unavailableAfterMs, timeout-ms=) must be a whole number of ms >= 100, got ${unavailableAfterMs}`,
    );
  }
  const attemptMs = Math.min(ATTEMPT_MS_MAX, Math.max(ATTEMPT_MS_MIN, Math.floor(unavailableAfterMs / 4)));
  return Object.freeze({
    unavailableAfterMs,
    attemptMs,
    waitTimeoutMs: Math.min(WAIT_TIMEOUT_MS_MAX, Math.floor(attemptMs / 2)),
  });
}

/** An attempt that ran out of its time; the caller's retry loop treats it as a lost connection. */
export class AttemptTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no answer within ${ms} ms`);
    this.name = 'AttemptTimeout';
  }
}

/** `work`, or an AttemptTimeout after `ms` (then `onTimeout` runs, to drop what hangs). */
export async function within<T>(work: Promise<T>, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        onTimeout?.();
        reject(new AttemptTimeout(what, ms));
      },
      Math.max(1, ms),
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
    work.catch(() => undefined);
  }
}
