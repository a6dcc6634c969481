import { Worker } from 'node:worker_threads';
import { SeenStoreError, type ErrorCode, type SeenStoreOptions, type Utf8Keys } from '../index.js';
import type { NodeRegistry } from '../store/nodes.js';
import type { ServedScope, ServedStore } from './served-store.js';

/** What the store thread is started with. */
export interface StoreThreadData {
  readonly dir: string;
  /** SeenStoreOptions without functions (onWarning comes back as messages). */
  readonly options: Omit<SeenStoreOptions, 'onWarning'>;
}

export interface StoreCall {
  readonly id: number;
  readonly method: string;
  readonly scope: string | undefined;
  readonly args: readonly unknown[];
}

export type StoreReply =
  | { readonly id: number; readonly value: unknown }
  | { readonly id: number; readonly error: { readonly code: string | undefined; readonly message: string; readonly stack: string | undefined; readonly name: string } }
  | { readonly id: 0; readonly warning: string };

/**
 * The store on a thread of its own. A durable commit syncs inside the library and holds its
 * thread for the sync (0.3-0.9 ms here, more on a busy disk); on the server's thread that would
 * stop every socket for as long. Here the server thread keeps parsing requests and writing replies
 * (and gathering the next batch) while the store thread commits. Calls run on the store thread in
 * the order they are posted; a batch's bytes move there without a copy (transferred).
 */
export class StoreThread implements ServedStore {
  readonly #worker: Worker;
  readonly #calls = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  readonly #scopes = new Map<string, Promise<ServedScope>>();
  #nextId = 1;
  #exited: Error | undefined;
  #closing = false;
  #fail: (error: Error) => void = () => undefined;
  readonly failed = new Promise<Error>((resolve) => {
    this.#fail = resolve;
  });
  /** Resolves when the thread has exited; listened for from the start, so that no exit is missed. */
  readonly #exit: Promise<void>;

  private constructor(data: StoreThreadData, onWarning: (message: string) => void) {
    this.#worker = new Worker(new URL('./store-worker.js', import.meta.url), { workerData: data });
    this.#exit = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.on('message', (message: StoreReply) => {
      if ('warning' in message) {
        onWarning(message.warning);
        return;
      }
      const call = this.#calls.get(message.id);
      if (call === undefined) return;
      this.#calls.delete(message.id);
      if ('error' in message) call.reject(revive(message.error));
      else call.resolve(message.value);
    });
    const fail = (error: Error): void => {
      if (!this.#closing && this.#exited === undefined) this.#fail(error);
      this.#exited = error;
      for (const call of this.#calls.values()) call.reject(error);
      this.#calls.clear();
    };
    this.#worker.on('error', (error) => fail(new SeenStoreError('INTERNAL', `the store thread failed: ${error.message}`, { cause: error })));
    this.#worker.on('exit', (code) => fail(new SeenStoreError('STORE_CLOSED', `the store thread exited (${code})`)));
  }

  /** Starts the thread and opens the store on it; the open's errors (STORE_LOCKED, ...) are thrown here. */
  static async open(dir: string, options: SeenStoreOptions = {}): Promise<StoreThread> {
    const { onWarning, ...rest } = options;
    const thread = new StoreThread({ dir, options: rest }, onWarning ?? (() => undefined));
    try {
      await thread.call('open', undefined, []);
    } catch (error) {
      await thread.#worker.terminate();
      throw error;
    }
    return thread;
  }

  call(method: string, scope: string | undefined, args: readonly unknown[], transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (this.#exited !== undefined) return Promise.reject(this.#exited);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, scope, args } satisfies StoreCall, transfer);
    });
  }

  scope(name: string, options: object): Promise<ServedScope> {
    let scope = this.#scopes.get(name);
    if (scope === undefined) {
      scope = this.call('scope', undefined, [name, options]).then(() => remoteScope(this, name));
      // A refused name is not kept: the next use asks (and is refused) again.
      scope.catch(() => this.#scopes.delete(name));
      this.#scopes.set(name, scope);
    }
    return scope;
  }

  stats(): Promise<never> {
    return this.call('stats', undefined, []) as Promise<never>;
  }

  scopeNames(): Promise<string[]> {
    return this.call('scopeNames', undefined, []) as Promise<string[]>;
  }

  snapshot(name?: string): Promise<never> {
    return this.call('snapshot', undefined, [name]) as Promise<never>;
  }

  snapshotCount(): Promise<number> {
    return this.call('snapshotCount', undefined, []) as Promise<number>;
  }

  /** The store's serve nodes, kept by the store on its thread (a directory store's node files). */
  readonly nodes: NodeRegistry = {
    heartbeat: async (address, ttlMs) => {
      await this.call('nodes.heartbeat', undefined, [address, ttlMs]);
    },
    leave: async (address) => {
      await this.call('nodes.leave', undefined, [address]);
    },
    live: () => this.call('nodes.live', undefined, []) as Promise<string[]>,
  };

  async close(): Promise<void> {
    this.#closing = true;
    await this.call('close', undefined, []);
    // The thread may exit before this line runs (it ends once it has answered the close): a
    // listener added only now would wait for an exit that already happened, and with nothing else
    // left the process ended with 13 (an unsettled top-level await) instead of 0.
    await this.#exit;
  }
}

function remoteScope(thread: StoreThread, name: string): ServedScope {
  const call = (method: string, ...args: unknown[]): Promise<never> => thread.call(method, name, args) as Promise<never>;
  return {
    name,
    addIfAbsentUtf8: (keys: Utf8Keys) => {
      // The bytes and ranges are the batch's own (GroupCommit made them): moved, not copied.
      const transfer = [keys.bytes.buffer, keys.ranges.buffer].filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
      return thread.call('addIfAbsentUtf8', name, [keys], transfer) as Promise<never>;
    },
    has: (urls, options) => call('has', urls, options),
    stats: () => call('stats'),
    openEpoch: () => call('openEpoch'),
    epoch: (n) => call('epoch', n),
    create: (options) => call('create', options),
    rotate: (options) => call('rotate', options),
    prune: (options) => call('prune', options),
    classify: (urls) => call('classify', urls),
    diff: (urls, from, to) => call('diff', urls, from, to),
    enqueue: (urls, options) => call('enqueue', urls, options),
    frontier: () => ({
      take: (count, options) => call('frontier.take', count, options),
      done: (ids, options) => call('frontier.done', ids, options),
      release: (ids, data) => call('frontier.release', ids, data),
      reclaim: (owner) => call('frontier.reclaim', owner),
      stats: () => call('frontier.stats'),
      setdiffSummary: (options) => call('frontier.setdiffSummary', options),
      schedule: (urls, atMs, options) => call('frontier.schedule', urls, atMs, options),
      urlStatus: (url) => call('frontier.urlStatus', url),
      settings: () => call('frontier.settings'),
      pinnedQueueKey: () => call('frontier.pinnedQueueKey'),
      configure: (change) => call('frontier.configure', change),
      setDelay: (queue, delayMs) => call('frontier.setDelay', queue, delayMs),
      blockUntil: (queue, untilMs) => call('frontier.blockUntil', queue, untilMs),
      setCrawlLimit: (queue, limit) => call('frontier.setCrawlLimit', queue, limit),
      listQueues: (options) => call('frontier.listQueues', options),
      queue: (key) => call('frontier.queue', key),
      deleteQueue: (key) => call('frontier.deleteQueue', key),
      clear: (options) => call('frontier.clear', options),
      entries: (options) => call('frontier.entries', options),
      purge: (ids, beforeMs) => call('frontier.purge', ids, beforeMs),
    }),
  };
}

/** The thread's error as the server thread's: a SeenStoreError keeps its code; anything else stays a bug with its stack. */
function revive(error: { code: string | undefined; message: string; stack: string | undefined; name: string }): Error {
  if (error.code !== undefined) return new SeenStoreError(error.code as ErrorCode, error.message);
  const revived = new Error(error.message);
  revived.name = error.name;
  if (error.stack !== undefined) revived.stack = error.stack;
  return revived;
}
