import type { Socket } from 'node:net';
import { argText } from './args.js';
import type { CommandSpec, CommandTable } from './command-table.js';
import type { ClientState, ServerContext } from './context.js';
import { errorReply } from './errors.js';
import { error, type Encoded, type Protocol } from './reply.js';
import { ProtocolError, RespParser, type Request } from './resp-parser.js';
import { transactionStep, type Transaction } from './transaction.js';

/** A request waiting for the connection's earlier commands (see CommandKind). */
interface Deferred {
  readonly spec: CommandSpec;
  readonly request: Request;
  readonly proto: Protocol;
  readonly slot: number;
}

/** Slots flushed from the front of the reply queue before the array is compacted. */
const COMPACT_AFTER_SLOTS = 1024;
/**
 * How long a connection whose replies are all written and whose end is sent waits for the client
 * to close its side before it is dropped: a client that keeps its socket open cannot hold a
 * shutdown (or a closing connection) for longer than this.
 */
export const CLOSE_LINGER_MS = 2_000;

/**
 * One client connection: parses requests as bytes arrive, runs them in order (writes join their
 * scope's group commit without waiting for each other; every other command waits for the
 * connection's earlier ones, so a read sees the connection's own writes), and writes replies in
 * request order as they become known. A malformed frame is answered `-ERR Protocol error: ...`
 * after the replies before it, and the connection closes. Reading stops while too many replies
 * are pending or the socket's output is backed up (a slow reader), and resumes as they drain.
 */
export class Connection implements ClientState {
  readonly id: number;
  readonly remoteAddress: string;
  readonly localAddress: string;
  readonly createdAtMs = Date.now();
  name = '';
  proto: Protocol = 2;
  authenticated: boolean;
  lastCommand = 'NULL';
  lastCommandAtMs = Date.now();
  transaction: Transaction | undefined;

  readonly #socket: Socket;
  readonly #server: ServerContext;
  readonly #table: CommandTable;
  readonly #parser: RespParser;
  /** Replies of slots #headSlot, #headSlot + 1, ...: undefined until known. */
  #slots: (Encoded | undefined)[] = [];
  #slotsStart = 0;
  #headSlot = 0;
  #nextSlot = 0;
  /** Commands started and not finished (async ones). */
  #running = 0;
  #deferred: Deferred[] = [];
  #deferredStart = 0;
  /** No more requests are taken (QUIT, a protocol error, shutdown); close once replies are out. */
  #closing = false;
  /** Our end of the socket is sent (every reply written). */
  #ended = false;
  #paused = false;
  #flushScheduled = false;
  #idleWaiters: (() => void)[] = [];

  constructor(socket: Socket, server: ServerContext, table: CommandTable, id: number) {
    this.id = id;
    this.#socket = socket;
    this.#server = server;
    this.#table = table;
    this.#parser = new RespParser(server.limits);
    this.authenticated = server.passwordDigest === undefined;
    this.remoteAddress = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`;
    this.localAddress = `${socket.localAddress ?? '?'}:${socket.localPort ?? 0}`;
    socket.setNoDelay(true);
    if (server.limits.idleTimeoutMs > 0) socket.setTimeout(server.limits.idleTimeoutMs);
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('drain', () => this.#maybeResume());
    socket.on('timeout', () => this.#idle());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#wakeIdleWaiters());
  }

  get pendingReplies(): number {
    return this.#nextSlot - this.#headSlot;
  }

  get reading(): boolean {
    return !this.#paused;
  }

  closeAfterReplies(): void {
    this.#closing = true;
  }

  /**
   * Shutdown: take no more requests, and resolve once every reply to the requests taken is written
   * and the socket is closed.
   */
  async finish(): Promise<void> {
    this.#closing = true;
    this.#maybeEnd();
    if (this.#socket.destroyed) return;
    await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  #receive(chunk: Buffer): void {
    if (this.#closing) return;
    try {
      this.#parser.push(chunk, (request) => {
        if (!this.#closing) this.#dispatch(request);
      });
    } catch (thrown) {
      // A protocol error ends the connection after the replies before it. Anything else is a bug:
      // it ends this connection too (with errorReply's log line and no stack to the client), never the server.
      if (thrown instanceof ProtocolError) {
        this.#server.counters.protocolErrors++;
        this.#server.metrics.errors.inc({ kind: 'protocol' });
        this.#server.logger.log('error', {
          event: 'protocol-error',
          client: this.id,
          addr: this.remoteAddress,
          message: thrown.message,
        });
        this.#fill(this.#nextSlot++, error(`ERR Protocol error: ${thrown.message}`));
      } else {
        this.#fill(this.#nextSlot++, errorReply(this.#server, thrown, 'connection'));
      }
      this.#closing = true;
    }
    this.#flush();
    if (
      this.pendingReplies >= this.#server.limits.pendingRepliesMax ||
      this.#socket.writableLength >= this.#server.limits.outputBytesMax
    ) {
      this.#paused = true;
      this.#socket.pause();
    }
  }

  #dispatch(request: Request): void {
    const slot = this.#nextSlot++;
    const server = this.#server;
    server.counters.commandsProcessed++;
    this.lastCommandAtMs = Date.now();
    const name = argText(request, 0).toUpperCase();
    const spec = this.#table.get(name);
    this.lastCommand = spec === undefined ? 'unknown' : name;
    server.metrics.countCommand(this.lastCommand);
    const refusal = this.#refusal(spec, name, request);
    const step = transactionStep(this, name, spec, request, refusal);
    if (step !== undefined && 'reply' in step) {
      this.#fill(slot, step.reply);
      return;
    }
    if (refusal !== undefined) {
      server.counters.errorReplies++;
      this.#fill(slot, refusal);
      return;
    }
    const deferred = { spec: step?.spec ?? spec!, request, proto: this.proto, slot };
    if (this.#deferredStart < this.#deferred.length || (spec!.kind === 'ordered' && this.#running > 0)) {
      this.#deferred.push(deferred);
      return;
    }
    this.#execute(deferred);
  }

  /** The error reply for a request that must not run: unknown command, not authenticated, wrong arity. */
  #refusal(spec: CommandSpec | undefined, name: string, request: Request): string | undefined {
    if (spec === undefined) {
      const args: string[] = [];
      for (let i = 1; i < Math.min(request.argc, 4); i++) args.push(`'${argText(request, i).slice(0, 128)}'`);
      return error(
        `ERR unknown command '${argText(request, 0).slice(0, 128)}', with args beginning with: ${args.join(' ')}`,
      );
    }
    if (!this.authenticated && !spec.flags.includes('noauth')) return error('NOAUTH Authentication required.');
    const arity = spec.arity;
    if (arity > 0 ? request.argc !== arity : request.argc < -arity)
      return error(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
    return undefined;
  }

  #execute({ spec, request, proto, slot }: Deferred): void {
    let result: Encoded | Promise<Encoded>;
    try {
      result = spec.run(this.#server, this, request, proto);
    } catch (thrown) {
      this.#fill(slot, errorReply(this.#server, thrown, spec.name));
      return;
    }
    if (typeof result === 'string' || Buffer.isBuffer(result)) {
      this.#fill(slot, result);
      return;
    }
    this.#running++;
    result
      .catch((thrown: unknown) => errorReply(this.#server, thrown, spec.name))
      .then((reply) => {
        this.#running--;
        this.#fill(slot, reply);
        this.#scheduleFlush();
        if (this.#running === 0) this.#pump();
      });
  }

  /** Runs deferred requests in order until an ordered one must wait for running commands. */
  #pump(): void {
    while (this.#deferredStart < this.#deferred.length) {
      const next = this.#deferred[this.#deferredStart]!;
      if (next.spec.kind === 'ordered' && this.#running > 0) return;
      this.#deferredStart++;
      this.#execute(next);
    }
    this.#deferred = [];
    this.#deferredStart = 0;
  }

  #fill(slot: number, reply: Encoded): void {
    this.#slots[this.#slotsStart + slot - this.#headSlot] = reply;
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    queueMicrotask(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  /** Writes the replies known at the front of the queue, in order, in as few writes as possible. */
  #flush(): void {
    const socket = this.#socket;
    let text = '';
    let wrote = false;
    while (this.#headSlot < this.#nextSlot) {
      const reply = this.#slots[this.#slotsStart];
      if (reply === undefined) break;
      this.#slots[this.#slotsStart++] = undefined;
      this.#headSlot++;
      if (socket.destroyed) continue;
      if (typeof reply === 'string') {
        text += reply;
        continue;
      }
      if (!wrote) socket.cork();
      wrote = true;
      if (text !== '') socket.write(text);
      text = '';
      socket.write(reply);
    }
    if (text !== '' && !socket.destroyed) socket.write(text);
    if (wrote) socket.uncork();
    if (this.#slotsStart >= COMPACT_AFTER_SLOTS) {
      this.#slots = this.#slots.slice(this.#slotsStart);
      this.#slotsStart = 0;
    }
    this.#maybeResume();
    this.#maybeEnd();
  }

  #maybeResume(): void {
    if (!this.#paused || this.#closing) return;
    const limits = this.#server.limits;
    if (this.pendingReplies < limits.pendingRepliesMax / 2 && this.#socket.writableLength < limits.outputBytesMax / 2) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  #maybeEnd(): void {
    if (!this.#closing || this.pendingReplies > 0 || this.#running > 0) return;
    if (!this.#socket.destroyed && !this.#ended) {
      this.#ended = true;
      // Read on, dropping what the client still sends (#receive), so that its close is seen: a
      // paused socket never reads the client's end, and would stay open (holding server.close()).
      this.#socket.resume();
      this.#socket.end();
      setTimeout(() => this.#socket.destroy(), CLOSE_LINGER_MS).unref();
    }
    this.#wakeIdleWaiters();
  }

  #wakeIdleWaiters(): void {
    for (const wake of this.#idleWaiters.splice(0)) wake();
  }

  /** The idle timeout: close a connection with nothing in flight; otherwise wait another period. */
  #idle(): void {
    if (this.pendingReplies === 0 && this.#running === 0) {
      this.#socket.destroy();
      return;
    }
    this.#socket.setTimeout(this.#server.limits.idleTimeoutMs);
  }
}
