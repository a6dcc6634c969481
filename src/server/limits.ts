import type { ParserLimits } from './resp-parser.js';

/** The port a server listens on by default: beside a local Redis's 6379, never on it. */
export const DEFAULT_PORT = 6380;
/** The address by default: loopback only (another needs a password). */
export const DEFAULT_BIND = '127.0.0.1';

/** What one server accepts, per connection and in total. Every field has a default (DEFAULT_LIMITS). */
export interface ServerLimits extends ParserLimits {
  /** Connections at once; one more is answered `-ERR max number of clients reached` and closed. */
  readonly clientsMax: number;
  /** Items (URLs) in one BF.MADD, BF.MEXISTS, BF.INSERT or SEEN.* command. */
  readonly itemsMax: number;
  /**
   * Requests of one connection received and not yet answered. Past it the server stops reading
   * that socket until replies drain: a client that pipelines without reading gets backpressure.
   */
  readonly pendingRepliesMax: number;
  /** Reply bytes queued in the socket past which the server stops reading it (a slow reader). */
  readonly outputBytesMax: number;
  /** A connection with nothing in flight and no request for this long is closed; 0: never. */
  readonly idleTimeoutMs: number;
}

/** URL bytes the library accepts (longer keys are INVALID_URL): a bulk string may be a little longer for ECHO. */
const URL_BYTES_MAX = 64 * 1024;

export const DEFAULT_LIMITS: ServerLimits = Object.freeze({
  bulkBytesMax: 4 * URL_BYTES_MAX,
  argsMax: 100_000 + 16,
  requestBytesMax: 64 * 2 ** 20,
  inlineBytesMax: URL_BYTES_MAX,
  clientsMax: 1_000,
  itemsMax: 100_000,
  pendingRepliesMax: 10_000,
  outputBytesMax: 8 * 2 ** 20,
  idleTimeoutMs: 300_000,
});

/** The limits with `overrides` applied; argsMax follows itemsMax (a command's own words on top). */
export function serverLimits(overrides: Partial<ServerLimits> = {}): ServerLimits {
  const limits = { ...DEFAULT_LIMITS, ...overrides };
  return Object.freeze({ ...limits, argsMax: overrides.argsMax ?? limits.itemsMax + 16 });
}
