import type { CommandSpec } from './command-table.js';
import type { ClientState, ServerContext } from './context.js';
import { errorReply } from './errors.js';
import { OK, array, error, simple, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';

/**
 * MULTI ... EXEC, as clients send it by default (redis-py's `pipeline()` wraps its commands in
 * one). The commands between are checked (unknown, arity, authentication) and queued, answered
 * `+QUEUED`; EXEC runs them in order and answers their replies as one array, as Redis does. The
 * queued writes are issued together, in one event-loop turn, so the adds of one scope join one
 * group commit: one durable transaction, all of them acknowledged together or none. A queued
 * read waits for the writes before it, so it sees them. WATCH is refused: there are no versions
 * of keys to watch (and nothing a WATCH would protect: adds are idempotent).
 */
export class Transaction {
  readonly queued: { readonly spec: CommandSpec; readonly request: Request }[] = [];
  /** A command was refused while queueing: EXEC then discards the whole transaction, as Redis does. */
  failed = false;
}

/** What a connection keeps of a transaction (ClientState.transaction). */
export interface TransactionClient {
  transaction: Transaction | undefined;
}

/** Most commands queued in one transaction (each holds its request's bytes until EXEC). */
const QUEUED_COMMANDS_MAX = 100_000;

const WATCH_REFUSED =
  "ERR WATCH is not supported by seenstore serve: adds are idempotent and a transaction's adds to a scope are one group commit, so there is nothing to watch; send MULTI ... EXEC without WATCH";

/**
 * The connection's step for a request, taken when it arrives (before any queue of the connection:
 * the commands after a MULTI must be queued even while earlier commands run). `reply`: answered
 * at once; `spec`: run this instead (EXEC of the transaction taken); undefined: not a transaction
 * matter, run as usual. `refusal` is the error the connection would answer for the request.
 */
export function transactionStep(
  client: TransactionClient,
  name: string,
  spec: CommandSpec | undefined,
  request: Request,
  refusal: string | undefined,
): { reply: Encoded } | { spec: CommandSpec } | undefined {
  const transaction = client.transaction;
  if (refusal !== undefined) {
    if (transaction !== undefined) transaction.failed = true;
    return undefined;
  }
  switch (name) {
    case 'MULTI':
      if (transaction !== undefined) return { reply: error('ERR MULTI calls can not be nested') };
      client.transaction = new Transaction();
      return { reply: OK };
    case 'DISCARD':
      if (transaction === undefined) return { reply: error('ERR DISCARD without MULTI') };
      client.transaction = undefined;
      return { reply: OK };
    case 'EXEC':
      if (transaction === undefined) return { reply: error('ERR EXEC without MULTI') };
      client.transaction = undefined;
      if (transaction.failed) return { reply: error('EXECABORT Transaction discarded because of previous errors.') };
      return { spec: { ...spec!, run: (server, c, _request, proto) => execute(server, c, transaction, proto) } };
    case 'WATCH':
      if (transaction !== undefined) transaction.failed = true;
      return { reply: error(transaction === undefined ? WATCH_REFUSED : 'ERR WATCH inside MULTI is not allowed') };
    default:
      if (transaction === undefined) return undefined;
      if (transaction.queued.length >= QUEUED_COMMANDS_MAX) {
        transaction.failed = true;
        return { reply: error(`ERR a transaction holds at most ${QUEUED_COMMANDS_MAX} commands`) };
      }
      transaction.queued.push({ spec: spec!, request });
      return { reply: simple('QUEUED') };
  }
}

/** EXEC: the queued commands in order, writes issued together, each read after the commands before it. */
async function execute(
  server: ServerContext,
  client: ClientState,
  transaction: Transaction,
  proto: Protocol,
): Promise<Encoded> {
  const replies: Promise<Encoded>[] = [];
  for (const { spec, request } of transaction.queued) {
    if (spec.kind === 'ordered') await Promise.all(replies);
    replies.push(runOne(server, client, spec, request, proto));
  }
  return array(await Promise.all(replies));
}

async function runOne(
  server: ServerContext,
  client: ClientState,
  spec: CommandSpec,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  try {
    return await spec.run(server, client, request, proto);
  } catch (thrown) {
    return errorReply(server, thrown, spec.name);
  }
}

function handledByConnection(): never {
  throw new Error('transaction commands are answered by the connection (transactionStep)');
}

function transactionCommand(name: string, arity: number, summary: string, syntax: string): CommandSpec {
  return {
    name,
    arity,
    flags: ['noscript', 'loading', 'stale', 'fast'],
    firstKey: 0,
    group: 'transactions',
    summary,
    syntax,
    kind: 'ordered',
    run: handledByConnection,
  };
}

/** The transaction commands, for the command table (COMMAND, arity checks); transactionStep answers them. */
export function transactionCommands(): CommandSpec[] {
  return [
    transactionCommand('MULTI', 1, 'Starts a transaction: the next commands are queued until EXEC.', 'MULTI'),
    transactionCommand(
      'EXEC',
      1,
      'Runs the queued commands; their adds to a scope are one group commit. Replies as an array.',
      'EXEC',
    ),
    transactionCommand('DISCARD', 1, 'Drops the queued commands.', 'DISCARD'),
    transactionCommand(
      'WATCH',
      -2,
      'Refused: there is nothing to watch (adds are idempotent, a transaction is one group commit per scope).',
      'WATCH key [key ...]',
    ),
  ];
}
