import { Request, RequestState, type RequestOptions, type Source } from 'crawlee';
import { queueKeyOf, type QueueKeyMode } from '../url/queue-key.js';

/**
 * What the manager uses of a seenstore Scope (structurally, so that this entry point's declarations
 * stand alone): `store.scope(name)` is one.
 */
export interface FrontierScope {
  enqueue(
    urls: readonly string[],
    options?: { readonly data?: readonly unknown[]; readonly queues?: readonly string[] },
  ): Promise<boolean[]>;
  addIfAbsent(urls: readonly string[]): Promise<boolean[]>;
  frontier(): ScopeFrontierLike;
}

interface LeasedUrl {
  readonly id: string;
  readonly url: string;
  readonly data?: unknown;
}

interface ScopeFrontierLike {
  take(
    count: number,
    options?: { readonly leaseMs?: number; readonly owner?: string; readonly perQueue?: number },
  ): Promise<LeasedUrl[]>;
  done(ids: readonly string[], options?: { readonly failed?: boolean }): Promise<number>;
  release(ids: readonly string[], data?: readonly unknown[]): Promise<number>;
  reclaim(owner: string): Promise<number>;
  stats(): Promise<{
    readonly pending: number;
    readonly leased: number;
    readonly done: number;
    readonly failed: number;
  }>;
  pinnedQueueKey(): Promise<QueueKeyMode>;
  configure(change: { readonly delayMs?: number }): Promise<unknown>;
}

/** Options of SeenstoreRequestManager. */
export interface RequestManagerOptions {
  /**
   * Who this crawler is, kept across restarts (1-128 of A-Z a-z 0-9 . _ : -): the manager first
   * gives back every lease a dead predecessor of the same owner holds, so a resumed crawl refetches
   * the pages in flight at once instead of waiting for their leases (default `crawlee`). Give each
   * of several crawler processes sharing a scope its own owner.
   */
  readonly owner?: string;
  /**
   * Lease of a request handed to the crawler (default: the crawler's own `requestLockSecs`, which
   * Crawlee sets on its queue — its handler timeout plus a margin — else 2 minutes). An unfinished
   * request is handed out again after it.
   */
  readonly leaseMs?: number;
  /** Requests taken ahead of the crawler's asks (default 5): at most this many more are refetched after a kill. */
  readonly prefetch?: number;
  /**
   * Crawlee's `sameDomainDelaySecs`, kept by the frontier: the scope's delay between two requests
   * to one host, for every crawler process sharing the scope (set at the first take; default: the
   * scope's own, 1 s for a new one — give 0 for none). Each take hands out at most `perQueue`
   * requests of one host (default 1).
   */
  readonly sameDomainDelaySecs?: number;
  readonly perQueue?: number;
}

/** A request as the frontier keeps it: what `new Request()` needs to be the same request again. */
interface StoredRequest {
  readonly url: string;
  readonly uniqueKey: string;
  readonly method?: string;
  readonly payload?: string;
  readonly headers?: Record<string, string>;
  readonly userData?: Record<string, unknown>;
  readonly retryCount?: number;
  readonly errorMessages?: string[];
  readonly noRetry?: boolean;
}

const DEFAULT_LEASE_MS = 120_000;
const ADD_BATCH = 1_000;

/**
 * Crawlee's request manager (its `IRequestManager`) on a seenstore scope's durable frontier: the
 * crawler's dedup is seenstore's add-if-absent (keyed by Crawlee's `uniqueKey`, so a user-given key
 * keeps its meaning), a discovered request is queued in the same atomic step that records it as
 * seen, and a killed crawl resumes with everything it had found (docs/crawlee.md). Pass it to a
 * crawler with `crawlerOptions(manager)`: Crawlee 3.18 types a `requestManager` option but its
 * option validation refuses it, while a request queue is taken as the crawler's request manager.
 *
 * Differences from Crawlee's own queue: `forefront` is ignored (the frontier is first in, first
 * out); `wasAlreadyHandled` is never known (a seen-set says a key was seen, not what became of it);
 * the `requestId` of an added request is its `uniqueKey` (the frontier's id is given at take).
 */
export class SeenstoreRequestManager {
  /** Crawlee names its default queue 'default' and drops it on a second run(); this is not it. */
  readonly name = 'seenstore';
  readonly #scope: FrontierScope;
  readonly #frontier: ScopeFrontierLike;
  readonly #owner: string;
  readonly #prefetch: number;
  readonly #perQueue: number;
  readonly #delayMs: number | undefined;
  #queueKey: QueueKeyMode | undefined;
  #leaseMs: number | undefined;
  #buffer: LeasedUrl[] = [];
  #inProgress = 0;
  #handled = 0;
  #pending = 0;
  #started: Promise<void> | undefined;

  constructor(scope: FrontierScope, options: RequestManagerOptions = {}) {
    this.#scope = scope;
    this.#frontier = scope.frontier();
    this.#owner = options.owner ?? 'crawlee';
    this.#prefetch = options.prefetch ?? 5;
    this.#perQueue = options.perQueue ?? 1;
    const delaySecs = options.sameDomainDelaySecs;
    if (delaySecs !== undefined && !(Number.isFinite(delaySecs) && delaySecs >= 0))
      throw new TypeError('sameDomainDelaySecs must be a number of seconds >= 0');
    this.#delayMs = delaySecs === undefined ? undefined : Math.round(delaySecs * 1000);
    this.#leaseMs = options.leaseMs;
  }

  /** Set by the crawler on the queue it is given: the lock it wants, in seconds. */
  set requestLockSecs(seconds: number) {
    this.#leaseMs ??= seconds * 1000;
  }

  /** Set by the crawler on the queue it is given; not used. */
  set internalTimeoutMillis(_ms: number) {}

  async addRequest(source: Source | string): Promise<{
    requestId: string;
    uniqueKey: string;
    wasAlreadyPresent: boolean;
    wasAlreadyHandled: boolean;
    forefront: boolean;
  }> {
    const [processed] = await this.#add([source]);
    return { ...processed!, forefront: false };
  }

  async addRequestsBatched(
    requests: Iterable<Source | string> | AsyncIterable<Source | string>,
    options: { readonly maxNewRequests?: number } = {},
  ): Promise<{
    addedRequests: Processed[];
    waitForAllRequestsToBeAdded: Promise<Processed[]>;
    requestsOverLimit?: Source[];
  }> {
    const added: Processed[] = [];
    const overLimit: Source[] = [];
    let fresh = 0;
    let batch: (Source | string)[] = [];
    const flush = async (): Promise<void> => {
      const results = await this.#add(batch);
      fresh += results.filter((r) => !r.wasAlreadyPresent).length;
      added.push(...results);
      batch = [];
    };
    for await (const source of requests) {
      const budget = options.maxNewRequests === undefined ? Infinity : options.maxNewRequests - fresh - batch.length;
      if (budget <= 0) {
        // Queued candidates may turn out seen: decide them before refusing more.
        if (batch.length > 0) await flush();
        if (options.maxNewRequests !== undefined && fresh >= options.maxNewRequests) {
          overLimit.push(typeof source === 'string' ? { url: source } : source);
          continue;
        }
      }
      batch.push(source);
      if (batch.length >= ADD_BATCH) await flush();
    }
    if (batch.length > 0) await flush();
    return {
      addedRequests: added,
      waitForAllRequestsToBeAdded: Promise.resolve([]),
      ...(overLimit.length > 0 ? { requestsOverLimit: overLimit } : {}),
    };
  }

  async fetchNextRequest<T extends Record<string, unknown> = Record<string, unknown>>(): Promise<Request<T> | null> {
    await this.#fill();
    const entry = this.#buffer.shift();
    if (entry === undefined) return null;
    this.#inProgress++;
    const stored = entry.data as StoredRequest;
    const request = new Request<T>(stored as unknown as RequestOptions<T>);
    request.id = entry.id;
    return request;
  }

  /**
   * Crawlee calls this for a request that succeeded and for one it gave up on (its retries spent,
   * or `noRetry`), the latter from its error handling: that one is finished as failed, counted in
   * the frontier's `failed` rather than its `done`.
   */
  async markRequestHandled(request: Request): Promise<null> {
    await this.#frontier.done([requestId(request)], { failed: request.state === RequestState.ERROR_HANDLER });
    this.#inProgress = Math.max(0, this.#inProgress - 1);
    this.#handled++;
    return null;
  }

  async reclaimRequest(request: Request): Promise<null> {
    await this.#frontier.release([requestId(request)], [stored(request)]);
    this.#inProgress = Math.max(0, this.#inProgress - 1);
    return null;
  }

  async isEmpty(): Promise<boolean> {
    await this.#fill();
    return this.#buffer.length === 0;
  }

  async isFinished(): Promise<boolean> {
    if (this.#buffer.length > 0 || this.#inProgress > 0) return false;
    const stats = await this.#frontier.stats();
    this.#handled = Math.max(this.#handled, stats.done + stats.failed);
    this.#pending = stats.pending + stats.leased;
    return this.#pending === 0;
  }

  /** As Crawlee's own queue counts it: requests finished, failed ones included (the crawler's stats tell them apart). */
  async handledCount(): Promise<number> {
    const stats = await this.#frontier.stats();
    this.#handled = stats.done + stats.failed;
    return this.#handled;
  }

  /** An approximation kept by this manager's own calls (Crawlee asks it synchronously). */
  getTotalCount(): number {
    return this.#handled + this.#pending + this.#buffer.length + this.#inProgress;
  }

  getPendingCount(): number {
    return this.#pending + this.#buffer.length + this.#inProgress;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Request> {
    for (;;) {
      const request = await this.fetchNextRequest();
      if (request === null) return;
      yield request;
    }
  }

  /** Gives back the requests taken ahead and never handed out (call when the crawler stops early). */
  async releaseBuffered(): Promise<number> {
    const ids = this.#buffer.map((entry) => entry.id);
    this.#buffer = [];
    return ids.length === 0 ? 0 : this.#frontier.release(ids);
  }

  async #add(sources: readonly (Source | string)[]): Promise<Processed[]> {
    const requests = sources.map((source) =>
      source instanceof Request
        ? source
        : new Request(typeof source === 'string' ? { url: source } : (source as RequestOptions)),
    );
    const keys = requests.map((request) => request.uniqueKey);
    // A request is polite to the host of its URL, whatever its uniqueKey (which need not be a URL).
    // Pinned: no configure (of this process or another) can change it while the manager keeps it.
    this.#queueKey ??= await this.#frontier.pinnedQueueKey();
    const mode = this.#queueKey;
    const queues = requests.map((request) => queueKeyOf(request.url, mode) ?? '');
    const fresh = await this.#scope.enqueue(keys, { data: requests.map(stored), queues });
    const added = fresh.filter(Boolean).length;
    this.#pending += added;
    return requests.map((request, i) => ({
      uniqueKey: request.uniqueKey,
      requestId: request.uniqueKey,
      wasAlreadyPresent: !fresh[i],
      wasAlreadyHandled: false,
    }));
  }

  /** Once: the scope's delay from sameDomainDelaySecs, and a dead predecessor's leases back. */
  async #start(): Promise<void> {
    if (this.#delayMs !== undefined) await this.#frontier.configure({ delayMs: this.#delayMs });
    await this.#frontier.reclaim(this.#owner);
  }

  /** Takes requests ahead when none is buffered; the first time, gives back a dead predecessor's leases. */
  async #fill(): Promise<void> {
    this.#started ??= this.#start();
    await this.#started;
    if (this.#buffer.length > 0) return;
    const taken = await this.#frontier.take(this.#prefetch, {
      leaseMs: this.#leaseMs ?? DEFAULT_LEASE_MS,
      owner: this.#owner,
      perQueue: this.#perQueue,
    });
    this.#pending = Math.max(0, this.#pending - taken.length);
    this.#buffer.push(...taken);
  }
}

type Processed = { uniqueKey: string; requestId: string; wasAlreadyPresent: boolean; wasAlreadyHandled: boolean };

function requestId(request: Request): string {
  if (request.id === undefined)
    throw new TypeError('the request did not come from this request manager (it has no id)');
  return request.id;
}

/** What the frontier keeps of a request (its JSON-able fields). */
function stored(request: Request): StoredRequest {
  return {
    url: request.url,
    uniqueKey: request.uniqueKey,
    method: request.method,
    ...(request.payload === undefined ? {} : { payload: String(request.payload) }),
    headers: request.headers ?? {},
    userData: JSON.parse(JSON.stringify(request.userData ?? {})) as Record<string, unknown>,
    retryCount: request.retryCount,
    errorMessages: request.errorMessages,
    noRetry: request.noRetry,
  };
}
