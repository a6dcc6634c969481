/**
 * A probe of Crawlee's `requestManager` option, for notes/frontier-notes.md: an in-memory
 * IRequestManager with the frontier's shape (enqueue with add-if-absent, take under a lease, done,
 * release with the updated request) that counts every call the crawler makes, driven by a real
 * CheerioCrawler over the synthetic site. It checks the notes against the installed Crawlee; it is
 * not the seenstore request manager (that needs the frontier of issue 21, after issue 18).
 *
 *   node dist/bench/crawlee-manager-probe.js [--pages 500]
 *
 * Prints one JSON line: the calls by method, the options seen, and the site's coverage.
 */
import {
  BasicCrawler,
  CheerioCrawler,
  Configuration,
  Request,
  type RequestQueue,
  type IRequestManager,
  type RequestsLike,
  type Source,
} from 'crawlee';
import { coverage, startSite } from '../test/helpers/site.js';
import { option } from './crawl-run.js';

type Manager = IRequestManager & { requestLockSecs?: number; internalTimeoutMillis?: number };

interface Entry {
  request: Request;
  state: 'pending' | 'leased' | 'done';
}

/** The frontier's operations in memory: seen keys, a FIFO of pending ids, leases, done ids. */
class ProbeManager implements Manager {
  /** Set by the crawler's constructor (a cast: it treats the manager as its request queue). */
  requestLockSecs?: number;
  internalTimeoutMillis?: number;
  readonly calls = new Map<string, number>();
  readonly optionsSeen = new Set<string>();
  readonly #entries = new Map<string, Entry>();
  readonly #seen = new Set<string>();
  #pending: string[] = [];
  #done = 0;
  #nextId = 0;

  #count(method: string, options?: object): void {
    this.calls.set(method, (this.calls.get(method) ?? 0) + 1);
    for (const [key, value] of Object.entries(options ?? {}))
      if (value !== undefined) this.optionsSeen.add(`${method}.${key}`);
  }

  async isFinished(): Promise<boolean> {
    this.#count('isFinished');
    return [...this.#entries.values()].every((entry) => entry.state === 'done');
  }
  async isEmpty(): Promise<boolean> {
    this.#count('isEmpty');
    return this.#pending.length === 0;
  }
  async handledCount(): Promise<number> {
    this.#count('handledCount');
    return this.#done;
  }
  getTotalCount(): number {
    this.#count('getTotalCount');
    return this.#entries.size;
  }
  getPendingCount(): number {
    this.#count('getPendingCount');
    return this.#entries.size - this.#done;
  }
  async fetchNextRequest<T extends Record<string, unknown>>(): Promise<Request<T> | null> {
    this.#count('fetchNextRequest');
    const id = this.#pending.shift();
    if (id === undefined) return null;
    const entry = this.#entries.get(id)!;
    entry.state = 'leased';
    return entry.request as unknown as Request<T>;
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<Request> {
    for (let request = await this.fetchNextRequest(); request !== null; request = await this.fetchNextRequest())
      yield request;
  }
  async markRequestHandled(request: Request): Promise<null> {
    this.#count('markRequestHandled');
    const entry = this.#entries.get(request.id!)!;
    if (entry.state !== 'done') this.#done++;
    entry.state = 'done';
    return null;
  }
  async reclaimRequest(request: Request, options?: { forefront?: boolean }): Promise<null> {
    this.#count('reclaimRequest', options);
    const entry = this.#entries.get(request.id!)!;
    entry.request = request;
    entry.state = 'pending';
    if (options?.forefront === true) this.#pending.unshift(request.id!);
    else this.#pending.push(request.id!);
    return null;
  }
  async addRequest(source: Source, options?: { forefront?: boolean }) {
    this.#count('addRequest', options);
    const [processed] = this.#enqueue([source]);
    return { ...processed!, forefront: options?.forefront ?? false };
  }
  async addRequestsBatched(requests: RequestsLike, options?: Record<string, unknown>) {
    this.#count('addRequestsBatched', options);
    const sources: Source[] = [];
    for await (const source of requests as AsyncIterable<Source | string>)
      sources.push(typeof source === 'string' ? { url: source } : source);
    const addedRequests = this.#enqueue(sources);
    return { addedRequests, waitForAllRequestsToBeAdded: Promise.resolve([]), requestsOverLimit: [] };
  }

  /** enqueue: add-if-absent on uniqueKey and append the new ones, in one step. */
  #enqueue(sources: readonly Source[]) {
    return sources.map((source) => {
      const request = source instanceof Request ? source : new Request({ ...source, url: source.url ?? '' });
      const wasAlreadyPresent = this.#seen.has(request.uniqueKey);
      if (!wasAlreadyPresent) {
        this.#seen.add(request.uniqueKey);
        request.id = `r${this.#nextId++}`;
        this.#entries.set(request.id, { request, state: 'pending' });
        this.#pending.push(request.id);
      }
      return { uniqueKey: request.uniqueKey, requestId: request.id ?? '', wasAlreadyPresent, wasAlreadyHandled: false };
    });
  }
}

/** Whether a crawler class's constructor accepts `requestManager` (3.18.1's option validation may not). */
function acceptsRequestManager(make: (manager: ProbeManager) => unknown): string {
  try {
    make(new ProbeManager());
    return 'accepted';
  } catch (error) {
    return `rejected: ${(error as Error).message.split('\n')[0]}`;
  }
}

const pages = option('pages', 500);
const requestManagerOption = {
  BasicCrawler: acceptsRequestManager(
    (requestManager) => new BasicCrawler({ requestManager, requestHandler: async () => {} }),
  ),
  CheerioCrawler: acceptsRequestManager(
    (requestManager) => new CheerioCrawler({ requestManager, requestHandler: async () => {} }),
  ),
};
const site = await startSite({ pages });
try {
  const manager = new ProbeManager();
  let failures = 0;
  // Passed as `requestQueue` (the validator asks only for fetchNextRequest and addRequest), since
  // the `requestManager` option is refused above; the crawler then uses it as its request manager.
  const crawler = new CheerioCrawler(
    {
      requestQueue: manager as unknown as RequestQueue,
      maxConcurrency: 10,
      maxRequestRetries: 1,
      async requestHandler({ enqueueLinks }) {
        await enqueueLinks();
      },
      failedRequestHandler() {
        failures++;
      },
      // Statistics and session state in memory: the probe leaves no ./storage behind.
    },
    new Configuration({ persistStorage: false }),
  );
  await crawler.run([`${site.url}/`]);
  const result = coverage(await site.stats());
  process.stdout.write(
    `${JSON.stringify({
      pages,
      requestManagerOption,
      calls: Object.fromEntries([...manager.calls].sort()),
      optionsSeen: [...manager.optionsSeen].sort(),
      requestLockSecsSetByCrawler: manager.requestLockSecs ?? null,
      internalTimeoutMillisSetByCrawler: manager.internalTimeoutMillis ?? null,
      failedRequests: failures,
      missedPages: result.missedPages.length,
      duplicateFetches: result.duplicateFetches,
      notFound: result.notFound,
    })}\n`,
  );
} finally {
  await site.stop();
}
