import { parentPort, workerData } from 'node:worker_threads';
import { SeenStore, type Scope, type SeenStoreOptions } from '../index.js';
import { isServedMethod, type ServedObject, type ServedObjects } from './served-store.js';
import type { StoreCall, StoreReply, StoreThreadData } from './store-thread.js';
import { packError } from './thread-error.js';

/**
 * The store thread of `seenstore serve` (store-thread.ts): owns the one SeenStore handle and runs
 * the calls the server thread posts, in arrival order. A served method runs only when
 * SERVED_METHODS lists it for its object (served-store.ts); nothing else is run by name.
 */
const port = parentPort!;
const data = workerData as StoreThreadData;
const scopes = new Map<string, Scope>();
let store: SeenStore | undefined;

function reply(message: StoreReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function scopeOf(name: string | undefined): Scope {
  const scope = name === undefined ? undefined : scopes.get(name);
  if (scope === undefined)
    throw new TypeError(
      `no scope ${String(name)} on the store thread (a served scope's handle is made by the control call 'scope' first)`,
    );
  return scope;
}

/** The library object a served call goes to. */
function objectOf(object: ServedObject, scope: string | undefined): ServedObjects[ServedObject] {
  switch (object) {
    case 'store':
      return store!;
    case 'nodes':
      return store!.nodes();
    case 'scope':
      return scopeOf(scope);
    case 'frontier':
      return scopeOf(scope).frontier();
  }
}

async function control(call: StoreCall): Promise<unknown> {
  switch (call.method) {
    case 'open': {
      const options: SeenStoreOptions = { ...data.options, onWarning: (message) => reply({ id: 0, warning: message }) };
      store = await SeenStore.open(data.dir, options);
      return null;
    }
    case 'scope': {
      const [name, options] = call.args as [string, object];
      if (!scopes.has(name)) scopes.set(name, store!.scope(name, options));
      return null;
    }
    case 'snapshotCount':
      return (await store!.snapshots()).length;
    case 'close':
      await store!.close();
      return null;
    default:
      throw new TypeError(`no store thread step ${call.method}`);
  }
}

async function run(call: StoreCall): Promise<unknown> {
  if (call.object === 'control') return control(call);
  if (!isServedMethod(call.object, call.method)) throw new TypeError(`no served method ${call.object}.${call.method}`);
  const object = objectOf(call.object, call.scope);
  // Listed for this object: a method of it that returns a promise (the list's `satisfies` checks it).
  const method: (...args: unknown[]) => Promise<unknown> = Reflect.get(object, call.method);
  return Reflect.apply(method, object, call.args);
}

port.on('message', (call: StoreCall) => {
  run(call).then(
    (value) => {
      reply({ id: call.id, value });
      // Closed: the thread exits once the reply is out.
      if (call.object === 'control' && call.method === 'close') port.close();
    },
    (error: unknown) => reply({ id: call.id, error: packError(error) }),
  );
});
