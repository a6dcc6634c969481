import type { AuthThrottle } from './auth-throttle.js';
import type { GroupCommit } from './group-commit.js';
import type { ServerLimits } from './limits.js';
import type { Logger } from './logger.js';
import type { ServerMetrics } from './metrics.js';
import type { Protocol } from './reply.js';
import type { ServedScope, ServedStore } from './served-store.js';
import type { Transaction } from './transaction.js';

/** One client connection, as commands see it (CLIENT, HELLO, AUTH, INFO). */
export interface ClientState {
  readonly id: number;
  readonly remoteAddress: string;
  readonly localAddress: string;
  readonly createdAtMs: number;
  name: string;
  proto: Protocol;
  authenticated: boolean;
  lastCommand: string;
  lastCommandAtMs: number;
  /** Requests received and not answered yet. */
  readonly pendingReplies: number;
  /** Whether the server reads the socket: false while replies back up (backpressure, docs/server.md "Limits"). */
  readonly reading: boolean;
  /** Close the connection once the replies so far are written (QUIT). */
  closeAfterReplies(): void;
  /** The transaction being queued (after MULTI, until EXEC or DISCARD). */
  transaction: Transaction | undefined;
}

/** A scope and its group commit. */
export interface ScopeHandle {
  readonly scope: ServedScope;
  readonly commit: GroupCommit;
}

/** Running totals for INFO. */
export interface ServerCounters {
  connectionsReceived: number;
  connectionsRejected: number;
  commandsProcessed: number;
  errorReplies: number;
  protocolErrors: number;
}

/** What commands may use of the server. */
export interface ServerContext {
  readonly store: ServedStore;
  /** The --store argument, as given (a directory or a redis:// URL). */
  readonly storeSpec: string;
  readonly limits: ServerLimits;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
  /** Capacity and FPR of a scope that BF.ADD, BF.MADD or BF.INSERT create (RedisBloom's auto-create). */
  readonly autoCreate: { readonly capacityUrls: number; readonly fprTarget: number };
  readonly startedAtMs: number;
  readonly port: number;
  readonly bind: string;
  readonly counters: ServerCounters;
  /** SHA-256 of the password, when one is required. */
  readonly passwordDigest: Buffer | undefined;
  /** Paces the answers to wrong passwords, server-wide. */
  readonly authThrottle: AuthThrottle;
  /** The scope `name` and its group commit; USAGE when `name` is not a scope name. */
  scope(name: string): Promise<ScopeHandle>;
  clients(): Iterable<ClientState>;
}

/** An error reply a command gives on purpose, e.g. `ERR bad capacity` (RedisBloom's wording). */
export class ReplyError extends Error {}
