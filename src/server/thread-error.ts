import { SeenStoreError } from '../errors.js';
import { PartlyDecided } from '../store/backend.js';

/**
 * An error as it crosses from the store thread to the server's (store-thread.ts). A structured
 * clone keeps only an Error's message and stack: the code, the fields of a SeenStoreError subclass
 * and the class itself are lost, and each thread has its own copy of every class. So the store
 * thread packs the error into plain data and the server thread revives it as an instance of its
 * own class of the same kind, with the same message, stack, fields and cause chain.
 */
export interface PackedError {
  /** The class it is revived as: a key of STORE_ERRORS or STANDARD_ERRORS (anything else: Error). */
  readonly kind: string;
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  /** Its own enumerable fields (`code`, PartlyDecided's `decided`, a system error's `errno`), each as a structured clone carries it, or as text when it cannot. */
  readonly fields: Readonly<Record<string, unknown>>;
  /** Its `cause`, when it has one: an error packed in turn, or any other value as cloned. */
  readonly cause?: { readonly error: PackedError } | { readonly value: unknown };
}

/** Causes followed at most: real chains are a few long; an error that is its own cause stops here. */
const CAUSE_DEPTH_MAX = 16;

/**
 * The SeenStoreError classes that cross as themselves, by tags that bundling cannot rename. A
 * subclass not listed crosses as a SeenStoreError with its fields: list each new one here.
 */
const STORE_ERRORS = new Map<string, { readonly prototype: SeenStoreError }>([
  ['SeenStoreError', SeenStoreError],
  ['PartlyDecided', PartlyDecided],
]);

/** JavaScript's own error classes: a TypeError (misuse of the API) stays a TypeError. */
const STANDARD_ERRORS = new Map<string, ErrorConstructor>([
  ['TypeError', TypeError],
  ['RangeError', RangeError],
  ['SyntaxError', SyntaxError],
  ['ReferenceError', ReferenceError],
  ['EvalError', EvalError],
  ['URIError', URIError],
]);

/** The error (or any thrown value) as data that postMessage carries whole. */
export function packError(thrown: unknown, depth = 0): PackedError {
  const error = thrown instanceof Error ? thrown : new Error(String(thrown));
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) fields[key] = cloneable(value);
  const packed = { kind: kindOf(error), name: error.name, message: error.message, stack: error.stack, fields };
  if (!('cause' in error) || depth >= CAUSE_DEPTH_MAX) return packed;
  const cause =
    error.cause instanceof Error ? { error: packError(error.cause, depth + 1) } : { value: cloneable(error.cause) };
  return { ...packed, cause };
}

/** The packed error as an instance of this thread's class of its kind, with its message, stack, fields and causes. */
export function unpackError(packed: PackedError): Error {
  const error = instanceOf(packed);
  Object.assign(error, packed.fields);
  // As the Error constructor defines them: own, not enumerable.
  const own = (key: string, value: unknown): void => {
    Object.defineProperty(error, key, { value, writable: true, enumerable: false, configurable: true });
  };
  own('message', packed.message);
  if (packed.stack !== undefined) own('stack', packed.stack);
  if (error.name !== packed.name) own('name', packed.name);
  if (packed.cause !== undefined)
    own('cause', 'error' in packed.cause ? unpackError(packed.cause.error) : packed.cause.value);
  return error;
}

function kindOf(error: Error): string {
  for (const [kind, errorClass] of STORE_ERRORS) if (Object.getPrototypeOf(error) === errorClass.prototype) return kind;
  if (error instanceof SeenStoreError) return 'SeenStoreError';
  for (const [kind, errorClass] of STANDARD_ERRORS) if (error instanceof errorClass) return kind;
  return 'Error';
}

/**
 * A SeenStoreError class's instance is made from its prototype, not by its constructor: each
 * subclass's constructor takes other arguments, and the fields (its code among them) are then
 * copied over as they were on the store thread.
 */
function instanceOf(packed: PackedError): Error {
  const storeError = STORE_ERRORS.get(packed.kind);
  if (storeError !== undefined) return Object.create(storeError.prototype) as Error;
  return new (STANDARD_ERRORS.get(packed.kind) ?? Error)(packed.message);
}

/** The value when a structured clone can carry it (a typed array, a plain object), else its text (a function, a socket). */
function cloneable(value: unknown): unknown {
  try {
    structuredClone(value);
    return value;
  } catch {
    return String(value);
  }
}
