import type { Scope, ScopeFrontier, ScopeOptions, SeenStore } from '../index.js';
import type { DriverManifest } from '../store/driver.js';
import type { NodeRegistry } from '../store/nodes.js';

/** The names of T's methods that return a promise: the only kind a thread can answer by name. */
type AsyncMethodOf<T> = { [K in keyof T]: T[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof T] &
  string;

/**
 * The library methods serve calls, by the object they belong to: the one list from which the
 * served types below, the store thread's proxies (store-thread.ts) and its allow-list
 * (store-worker.ts) are derived. A name added here is callable through both threads at once;
 * a name that is not a promise-returning method of its object does not compile; nothing that is
 * not here is run by name.
 */
export const SERVED_METHODS = {
  /** SeenStore's. */
  store: ['stats', 'scopeNames', 'snapshot'],
  /** SeenStore.nodes()'s (NodeRegistry). */
  nodes: ['heartbeat', 'leave', 'live'],
  /** Scope's. */
  scope: [
    'addIfAbsentUtf8',
    'has',
    'stats',
    'openEpoch',
    'epoch',
    'create',
    'rotate',
    'prune',
    'classify',
    'diff',
    'enqueue',
  ],
  /** Scope.frontier()'s (ScopeFrontier). */
  frontier: [
    'take',
    'done',
    'release',
    'reclaim',
    'stats',
    'setdiffSummary',
    'schedule',
    'urlStatus',
    'settings',
    'pinnedQueueKey',
    'configure',
    'setDelay',
    'blockUntil',
    'setCrawlLimit',
    'listQueues',
    'queue',
    'deleteQueue',
    'clear',
    'entries',
    'purge',
  ],
} as const satisfies {
  readonly store: readonly AsyncMethodOf<SeenStore>[];
  readonly nodes: readonly AsyncMethodOf<NodeRegistry>[];
  readonly scope: readonly AsyncMethodOf<Scope>[];
  readonly frontier: readonly AsyncMethodOf<ScopeFrontier>[];
};

/** The library objects whose methods serve calls. */
export interface ServedObjects {
  readonly store: SeenStore;
  readonly nodes: NodeRegistry;
  readonly scope: Scope;
  readonly frontier: ScopeFrontier;
}

export type ServedObject = keyof typeof SERVED_METHODS;
export type ServedMethod<O extends ServedObject> = (typeof SERVED_METHODS)[O][number];
/** What serve uses of object O: its listed methods, with the library's own signatures. */
export type Served<O extends ServedObject> = Pick<ServedObjects[O], Extract<ServedMethod<O>, keyof ServedObjects[O]>>;

/** True when `method` is listed for `object`: the store thread runs nothing else by name. */
export function isServedMethod<O extends ServedObject>(object: O, method: string): method is ServedMethod<O> {
  const names: readonly string[] = SERVED_METHODS[object];
  return names.includes(method);
}

/** What the server uses of a scope's frontier (Scope.frontier()). */
export type ServedFrontier = Served<'frontier'>;

/**
 * What the server uses of a scope: the library's Scope methods it calls, all promises. A store
 * whose commits block their thread lives on its own thread (store-thread.ts), so that a commit,
 * which syncs to disk inside the library and blocks its thread for that long, never stops the
 * server from reading and answering sockets.
 */
export interface ServedScope extends Served<'scope'> {
  readonly name: string;
  frontier(): ServedFrontier;
}

/** What the server uses of a store. */
export interface ServedStore extends Served<'store'> {
  /** The handle of scope `name` (USAGE for a name that is not a scope name); `options` shape a scope the first add creates. */
  scope(name: string, options: ScopeOptions): Promise<ServedScope>;
  snapshotCount(): Promise<number>;
  /** The driver of the store's location: its name and capabilities (INFO reports them). */
  readonly driver: DriverManifest;
  /** The store's serve nodes (SeenStore.nodes()). */
  readonly nodes: NodeRegistry;
  /** Checkpoints and closes the store (and its thread). */
  close(): Promise<void>;
  /** Settles with the error if the store fails underneath the server (its thread died); never otherwise. */
  readonly failed: Promise<Error>;
}
