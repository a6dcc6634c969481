import { Worker } from 'node:worker_threads';
import { SeenStoreError, type ScopeOptions, type SeenStoreOptions, type Utf8Keys } from '../index.js';
import { SERVED_METHODS, type Served, type ServedObject, type ServedScope, type ServedStore } from './served-store.js';
import type { DriverManifest } from '../store/driver.js';
import { driverFor } from '../store/open.js';
import { unpackError, type PackedError } from './thread-error.js';

/** What the store thread is started with. */
export interface StoreThreadData {
  readonly dir: string;
  /** SeenStoreOptions without functions (onWarning comes back as messages). */
  readonly options: Omit<SeenStoreOptions, 'onWarning'>;
}

/**
 * One call: a served method of `object` (for a scope or its frontier, of scope `scope`), or one of
 * the store thread's own steps (`control`: open, scope (a scope's handle), snapshotCount, close).
 */
export interface StoreCall {
  readonly id: number;
  readonly object: ServedObject | 'control';
  readonly method: string;
  readonly scope: string | undefined;
  readonly args: readonly unknown[];
}

export type StoreReply =
  | { readonly id: number; readonly value: unknown }
  | { readonly id: number; readonly error: PackedError }
  | { readonly id: 0; readonly warning: string };

/**
 * The store on a thread of its own. A durable commit syncs inside the library and holds its
 * thread for the sync (0.3-0.9 ms here, more on a busy disk); on the server's thread that would
 * stop every socket for as long. Here the server thread keeps parsing requests and writing replies
 * (and gathering the next batch) while the store thread commits. Calls run on the store thread in
 * the order they are posted; a batch's bytes move there without a copy (transferred); an error
 * comes back whole (thread-error.ts).
 */
export class StoreThread {
  readonly #worker: Worker;
  readonly #calls = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  readonly #scopes = new Map<string, Promise<ServedScope>>();
  #nextId = 1;
  #exited: Error | undefined;
  #closing = false;
  #fail: (error: Error) => void = () => undefined;
  readonly #failed = new Promise<Error>((resolve) => {
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
      if ('error' in message) call.reject(unpackError(message.error));
      else call.resolve(message.value);
    });
    const fail = (error: Error): void => {
      if (!this.#closing && this.#exited === undefined) this.#fail(error);
      this.#exited = error;
      for (const call of this.#calls.values()) call.reject(error);
      this.#calls.clear();
    };
    this.#worker.on('error', (error) =>
      fail(new SeenStoreError('INTERNAL', `the store thread failed: ${error.message}`, { cause: error })),
    );
    this.#worker.on('exit', (code) => fail(new SeenStoreError('STORE_CLOSED', `the store thread exited (${code})`)));
  }

  /** Starts the thread and opens the store on it; the open's errors (STORE_LOCKED, ...) are thrown here. */
  static async open(dir: string, options: SeenStoreOptions = {}): Promise<ServedStore> {
    const { onWarning, ...rest } = options;
    const thread = new StoreThread({ dir, options: rest }, onWarning ?? (() => undefined));
    try {
      await thread.#call('control', 'open', undefined, []);
    } catch (error) {
      await thread.#worker.terminate();
      throw error;
    }
    return thread.#served(driverFor(dir));
  }

  #call(
    object: StoreCall['object'],
    method: string,
    scope: string | undefined,
    args: readonly unknown[],
    transfer: ArrayBuffer[] = [],
  ): Promise<unknown> {
    if (this.#exited !== undefined) return Promise.reject(this.#exited);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject });
      this.#worker.postMessage({ id, object, method, scope, args } satisfies StoreCall, transfer);
    });
  }

  /**
   * Object O's served methods (SERVED_METHODS), each a call on the store thread. Built by name
   * from the list that `Served<O>` is picked by, so the object has exactly the typed methods.
   */
  #remote<O extends ServedObject>(object: O, scope: string | undefined): Served<O> {
    const methods = SERVED_METHODS[object].map((method) => [
      method,
      (...args: unknown[]) => this.#call(object, method, scope, args),
    ]);
    return Object.fromEntries(methods) as Served<O>;
  }

  #served(driver: DriverManifest): ServedStore {
    return {
      ...this.#remote('store', undefined),
      scope: (name, options) => this.#scope(name, options),
      snapshotCount: () => this.#call('control', 'snapshotCount', undefined, []) as Promise<number>,
      driver,
      // The store's serve nodes, kept by the store on its thread (a directory store's node files).
      nodes: this.#remote('nodes', undefined),
      close: () => this.#close(),
      failed: this.#failed,
    };
  }

  #scope(name: string, options: ScopeOptions): Promise<ServedScope> {
    let scope = this.#scopes.get(name);
    if (scope === undefined) {
      scope = this.#call('control', 'scope', undefined, [name, options]).then(() => this.#remoteScope(name));
      // A refused name is not kept: the next use asks (and is refused) again.
      scope.catch(() => this.#scopes.delete(name));
      this.#scopes.set(name, scope);
    }
    return scope;
  }

  #remoteScope(name: string): ServedScope {
    const frontier = this.#remote('frontier', name);
    return {
      ...this.#remote('scope', name),
      name,
      frontier: () => frontier,
      addIfAbsentUtf8: (keys: Utf8Keys) => {
        // The bytes and ranges are the batch's own (GroupCommit made them): moved, not copied.
        const transfer = [keys.bytes.buffer, keys.ranges.buffer].filter(
          (b): b is ArrayBuffer => b instanceof ArrayBuffer,
        );
        return this.#call('scope', 'addIfAbsentUtf8', name, [keys], transfer) as Promise<boolean[]>;
      },
    };
  }

  async #close(): Promise<void> {
    this.#closing = true;
    await this.#call('control', 'close', undefined, []);
    // The thread may exit before this line runs (it ends once it has answered the close): a
    // listener added only now would wait for an exit that already happened, and with nothing else
    // left the process ended with 13 (an unsettled top-level await) instead of 0.
    await this.#exit;
  }
}
