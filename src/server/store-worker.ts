import { parentPort, workerData } from 'node:worker_threads';
import { SeenStore, SeenStoreError, type Scope, type SeenStoreOptions } from '../index.js';
import type { StoreCall, StoreReply, StoreThreadData } from './store-thread.js';

/**
 * The store thread of `seenstore serve` (store-thread.ts): owns the one SeenStore handle and runs
 * the calls the server thread posts, in arrival order.
 */
const port = parentPort!;
const data = workerData as StoreThreadData;
const scopes = new Map<string, Scope>();
let store: SeenStore | undefined;

/** The Scope methods the server calls (ServedScope): nothing else is run by name. */
const SCOPE_METHODS = new Set(['addIfAbsentUtf8', 'has', 'stats', 'openEpoch', 'epoch', 'create', 'rotate', 'prune', 'classify', 'diff', 'enqueue']);
/** The frontier methods (ServedFrontier), called as `frontier.NAME`. */
const FRONTIER_METHODS = new Set([
  'take', 'done', 'release', 'reclaim', 'stats', 'setdiffSummary', 'schedule', 'urlStatus', 'settings', 'pinnedQueueKey', 'configure',
  'setDelay', 'blockUntil', 'setCrawlLimit', 'listQueues', 'queue', 'deleteQueue', 'clear', 'entries', 'purge',
]);

function reply(message: StoreReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

async function run(call: StoreCall): Promise<unknown> {
  if (call.method === 'open') {
    const options: SeenStoreOptions = { ...data.options, onWarning: (message) => reply({ id: 0, warning: message }) };
    store = await SeenStore.open(data.dir, options);
    return null;
  }
  const opened = store!;
  if (call.scope !== undefined) {
    const scope = scopes.get(call.scope);
    const frontierMethod = call.method.startsWith('frontier.') ? call.method.slice('frontier.'.length) : undefined;
    if (scope !== undefined && frontierMethod !== undefined && FRONTIER_METHODS.has(frontierMethod)) {
      const frontier = scope.frontier() as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      return frontier[frontierMethod]!.apply(frontier, [...call.args]);
    }
    if (scope === undefined || !SCOPE_METHODS.has(call.method)) throw new TypeError(`no scope method ${call.method} on ${call.scope}`);
    const method = (scope as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[call.method]!;
    return method.apply(scope, [...call.args]);
  }
  switch (call.method) {
    case 'scope': {
      const [name, options] = call.args as [string, object];
      if (!scopes.has(name)) scopes.set(name, opened.scope(name, options));
      return null;
    }
    case 'stats':
      return opened.stats();
    case 'scopeNames':
      return opened.scopeNames();
    case 'snapshot':
      return opened.snapshot(call.args[0] as string | undefined);
    case 'snapshotCount':
      return (await opened.snapshots()).length;
    case 'nodes.heartbeat':
      return opened.nodes().heartbeat(call.args[0] as string, call.args[1] as number);
    case 'nodes.leave':
      return opened.nodes().leave(call.args[0] as string);
    case 'nodes.live':
      return opened.nodes().live();
    case 'close':
      await opened.close();
      return null;
    default:
      throw new TypeError(`no store method ${call.method}`);
  }
}

port.on('message', (call: StoreCall) => {
  run(call).then(
    (value) => {
      reply({ id: call.id, value });
      // Closed: the thread exits once the reply is out.
      if (call.method === 'close') port.close();
    },
    (error: unknown) => {
      const e = error as Error & { code?: unknown };
      reply({ id: call.id, error: { code: error instanceof SeenStoreError ? e.code as string : undefined, message: e.message, stack: e.stack, name: e.name } });
    },
  );
});
