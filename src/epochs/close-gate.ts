import type { SeenStoreError } from '../errors.js';
import type { Backend } from '../store/backend.js';

/**
 * What lets a store close while operations are in flight, for every driver alike: the engine's
 * calls of the backend pass through the gate. New operations are refused at their start
 * (SeenStore's assertOpen); close() then waits until the operations already under way are done
 * with the backend — no call of it in flight, and none made since the event loop last turned —
 * before the backend is closed, so none of them meets a backend closed under it (a Redis client
 * gone, an LMDB environment closed). Past that point every call refuses with STORE_CLOSED: an
 * operation that waited on something else (a file it reads) answers STORE_CLOSED at its next call.
 */
export class CloseGate {
  readonly #closedError: () => SeenStoreError;
  #state: 'open' | 'draining' | 'closed' = 'open';
  #inFlight = 0;
  #drained: (() => void) | undefined;

  constructor(closedError: () => SeenStoreError) {
    this.#closedError = closedError;
  }

  /** Runs one call of the backend, or refuses it once the store has closed. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#state === 'closed') throw this.#closedError();
    this.#inFlight++;
    try {
      return await call();
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0 && this.#state === 'draining') this.#settle();
    }
  }

  /** Resolves once the operations under way are done with the backend; every later call is refused. */
  async close(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'draining';
    const drained = new Promise<void>((resolve) => (this.#drained = resolve));
    if (this.#inFlight === 0) this.#settle();
    await drained;
  }

  /** Closes once nothing is in flight after a turn of the event loop: an operation's next call follows its last one in the same turn. */
  #settle(): void {
    setImmediate(() => {
      if (this.#inFlight > 0 || this.#state !== 'draining') return;
      this.#state = 'closed';
      this.#drained?.();
    });
  }
}

/** The methods whose answer is a handle on more of the backend: its calls pass through the gate too. */
const HANDLES = new Set<PropertyKey>(['epoch', 'frontier', 'deliveries']);

/**
 * `backend` with every method call passing through `gate`, and so the calls of the epochs,
 * frontiers and delivery records it hands out, and of its maintenance operations. Fields (a
 * driver's manifest, an epoch's header) are read through unchanged. One wrapper per call of a
 * backend method, never per URL.
 */
export function gatedBackend(backend: Backend, gate: CloseGate): Backend {
  return gated(backend, gate);
}

function gated<T extends object>(target: T, gate: CloseGate): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (property === 'maintenance' && typeof value === 'object' && value !== null) return gated(value, gate);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      if (HANDLES.has(property)) return async (...args: unknown[]) => gated((await gate.run(() => method.apply(object, args))) as object, gate);
      return (...args: unknown[]) => gate.run(() => method.apply(object, args));
    },
  });
}
