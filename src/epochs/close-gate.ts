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

  /**
   * Calls `method` of `target` (a backend method), or refuses once the store has closed. No
   * closure or async frame of its own: one derived promise per call of the backend.
   */
  call<T>(method: (...args: unknown[]) => T, target: object, args: unknown[]): T | Promise<Awaited<T>> {
    return this.#call(method, target, args, this.#passValue);
  }

  /** As `call`, the answer (a handle on more of the backend) mapped by `wrap` as it passes. */
  callForHandle(
    method: (...args: unknown[]) => unknown,
    target: object,
    args: unknown[],
    wrap: (handle: unknown) => unknown,
  ): unknown {
    let pass = this.#passHandles.get(wrap);
    if (pass === undefined) {
      pass = (value: unknown): unknown => {
        this.#leave();
        return wrap(value);
      };
      this.#passHandles.set(wrap, pass);
    }
    return this.#call(method, target, args, pass);
  }

  readonly #passHandles = new Map<(handle: unknown) => unknown, (value: unknown) => unknown>();

  #call<T>(
    method: (...args: unknown[]) => T,
    target: object,
    args: unknown[],
    pass: (value: never) => unknown,
  ): T | Promise<Awaited<T>> {
    if (this.#state === 'closed') return Promise.reject(this.#closedError());
    this.#inFlight++;
    let answer: T;
    try {
      answer = method.apply(target, args);
    } catch (error) {
      this.#leave();
      throw error;
    }
    if (!isThenable(answer)) {
      this.#leave();
      return answer;
    }
    return answer.then(pass as (value: unknown) => unknown, this.#passError) as Promise<Awaited<T>>;
  }

  readonly #passValue = <T>(value: T): T => {
    this.#leave();
    return value;
  };

  readonly #passError = (error: unknown): never => {
    this.#leave();
    throw error;
  };

  #leave(): void {
    this.#inFlight--;
    if (this.#inFlight === 0 && this.#state === 'draining') this.#settle();
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

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** The methods whose answer is a handle on more of the backend: its calls pass through the gate too. */
const HANDLES = new Set<PropertyKey>(['epoch', 'frontier', 'deliveries']);
/** Fields that hold a handle on more of the backend. */
const HANDLE_FIELDS = new Set<PropertyKey>(['maintenance']);

/**
 * `backend` with every method call passing through `gate`, and so the calls of the epochs,
 * frontiers and delivery records it hands out, and of its maintenance operations. Fields and
 * getters (a driver's manifest, an epoch's header) are read through, live. The wrapper's methods
 * are made once per class of handle, a handle handed out is wrapped by one Object.create, and a
 * call of the backend costs one derived promise: nothing per URL.
 */
export function gatedBackend(backend: Backend, gate: CloseGate): Backend {
  return new Wrapping(gate).wrap(backend);
}

const TARGET = Symbol('target');

interface Wrapper {
  readonly [TARGET]: object;
}

class Wrapping {
  readonly #gate: CloseGate;
  /** The wrappers' methods and getters, by the handle's class (its prototype). */
  readonly #shapes = new WeakMap<object, object>();
  /** A handle on more of the backend (an epoch, a frontier, maintenance), wrapped as it passes. */
  readonly #handle = (value: unknown): unknown =>
    typeof value === 'object' && value !== null ? this.wrap(value) : value;

  constructor(gate: CloseGate) {
    this.#gate = gate;
  }

  wrap<T extends object>(target: T): T {
    const wrapper = Object.create(this.#shape(target)) as { [TARGET]: object };
    wrapper[TARGET] = target;
    return wrapper as unknown as T;
  }

  /** The wrapper's prototype for `target`: shared by its class, or its own for an object literal (maintenance). */
  #shape(target: object): object {
    const prototype = Object.getPrototypeOf(target) as object | null;
    const shared = prototype !== null && prototype !== Object.prototype;
    const known = shared ? this.#shapes.get(prototype) : undefined;
    if (known !== undefined) return known;
    const shape = this.#build(target);
    if (shared) this.#shapes.set(prototype, shape);
    return shape;
  }

  #build(target: object): object {
    const gate = this.#gate;
    const handle = this.#handle;
    const shape: Record<PropertyKey, unknown> = {};
    const named = new Set<PropertyKey>(['constructor']);
    // The target's own fields and methods, then its classes' (nearest first).
    for (
      let layer: object | null = target;
      layer !== null && layer !== Object.prototype;
      layer = Object.getPrototypeOf(layer) as object | null
    ) {
      for (const name of Reflect.ownKeys(layer)) {
        if (named.has(name)) continue;
        named.add(name);
        const value = Object.getOwnPropertyDescriptor(layer, name)!.value as unknown;
        if (typeof value !== 'function') {
          const read = HANDLE_FIELDS.has(name)
            ? function (this: Wrapper) {
                return handle(Reflect.get(this[TARGET], name));
              }
            : function (this: Wrapper) {
                return Reflect.get(this[TARGET], name);
              };
          Object.defineProperty(shape, name, { get: read, enumerable: true });
          continue;
        }
        // Looked up on the handle at each call (not the one first seen), so an object literal's own method is its own.
        shape[name] = HANDLES.has(name)
          ? function (this: Wrapper, ...args: unknown[]) {
              return gate.callForHandle(
                Reflect.get(this[TARGET], name) as (...a: unknown[]) => unknown,
                this[TARGET],
                args,
                handle,
              );
            }
          : function (this: Wrapper, ...args: unknown[]) {
              return gate.call(Reflect.get(this[TARGET], name) as (...a: unknown[]) => unknown, this[TARGET], args);
            };
      }
    }
    return shape;
  }
}
