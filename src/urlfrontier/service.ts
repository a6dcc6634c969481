import {
  status as GrpcStatus,
  type ServerDuplexStream,
  type ServerWritableStream,
  type ServiceError,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { DEFAULT_FRONTIER_SETTINGS, MAX_TAKE } from '../epochs/frontier.js';
import type { QueueStats } from '../epochs/frontier.js';
import type { ServedFrontier } from '../server/served-store.js';
import { type Crawls, scopeOfCrawl } from './crawls.js';
import type { UrlFrontierMetrics } from './metrics.js';
import {
  countUrls,
  listUrls,
  metadataOf,
  purgeUrls,
  urlItemOf,
  type CountUrlParams,
  type ListUrlParams,
  type PurgeUrlParams,
} from './url-listing.js';
import type { Logger, LogLevel } from '../server/logger.js';
import { PutDiscoveredStream, type BatchAck, type DiscoveredBatch } from './put-discovered.js';
import { PutUrlsStream } from './put-urls.js';
import type {
  AckMessage,
  BlockQueueParams,
  CrawlLimitParams,
  GetParams,
  LogLevelParams,
  MalformedMessage,
  Pagination,
  QueueDelayParams,
  QueueWithinCrawlParams,
  UrlInfo,
  UrlItem,
  UrlStatusRequest,
} from './proto.js';
import type { Peers } from './peers.js';
import { isMalformed } from './proto.js';
import { invalidArgument, RpcError, toServiceError } from './status.js';

/** URLFrontier's default lease of a handed-out URL when GetURLs gives no delay_requestable. */
const DEFAULT_LEASE_S = 30;
/** Longest delay, lease or block accepted, in seconds (the library's limit: 10 years ahead). */
const DELAY_S_MAX = 10 * 365 * 24 * 3600;
/** ListQueues' page when Pagination.size is 0 (URLFrontier's default). */
const LIST_QUEUES_SIZE_DEFAULT = 100;
/** Queues read from the store per step while ListQueues counts and pages. */
const QUEUE_PAGE = 1_000;
const SECONDS_TO_MS = 1_000;

export interface UrlFrontierServiceOptions {
  readonly crawls: Crawls;
  readonly clock: () => number;
  /** The live serve nodes of the store, this one among them (ListNodes). */
  readonly nodes: () => Promise<string[]>;
  /** The other nodes, for the calls whose `local: false` applies to every node (SetActive, GetActive, SetLogLevel). */
  readonly peers: Peers;
  /** Logs a failure that is a bug (answered INTERNAL). */
  readonly onInternalError: (method: string, error: unknown) => void;
  /** Logs the items of a put stream SKIPPED because their crawl ID cannot be a crawl (once per stream and crawl ID). */
  readonly onUnusableCrawl: (method: string, crawlID: string, message: string) => void;
  /** Batches a PutDiscovered stream may have received and not acked (PUT_DISCOVERED_IN_FLIGHT_DEFAULT). */
  readonly putDiscoveredInFlight: number;
  readonly metrics: UrlFrontierMetrics;
  /** serve's log: SetLogLevel sets its level; at debug, each call is logged. */
  readonly logger: Logger;
}

/**
 * The URLFrontier RPCs over a served store (docs/frontier.md "URLFrontier"). Every handler checks
 * its request, calls the engine (a crawl is a scope, its queues the scope's frontier queues) and
 * answers; a thrown error becomes the status toServiceError gives. Every RPC of the API is
 * served (ListURLs, CountURLs and PurgeURLs in url-listing.ts).
 */
export function urlFrontierHandlers(options: UrlFrontierServiceOptions): UntypedServiceImplementation {
  const { crawls, metrics } = options;
  let active = true;
  const unary =
    <Request, Reply>(method: string, run: (request: Request) => Promise<Reply>) =>
    (
      call: { request: Request | MalformedMessage },
      callback: (error: Partial<ServiceError> | null, reply?: Reply) => void,
    ): void => {
      metrics.call(method);
      const startNs = process.hrtime.bigint();
      const request = call.request;
      if (options.logger.enabled('debug'))
        options.logger.log('debug', { service: 'urlfrontier', method, request: JSON.stringify(request).slice(0, 500) });
      const answer = isMalformed(request) ? Promise.reject(invalidArgument(request.malformed)) : run(request);
      answer.then(
        (reply) => {
          metrics.elapsed(method, startNs);
          callback(null, reply);
        },
        (error: unknown) => {
          metrics.elapsed(method, startNs);
          callback(failure(options, method, error));
        },
      );
    };
  const putHooks = <Ack>(method: string, statusesOf: (ack: Ack) => readonly string[]) => ({
    onUnusableCrawl: (crawlID: string, message: string) => options.onUnusableCrawl(method, crawlID, message),
    onAcks: (acks: readonly Ack[], startNs: bigint) => {
      metrics.elapsed(method, startNs);
      const counts = new Map<string, number>();
      for (const ack of acks) for (const status of statusesOf(ack)) counts.set(status, (counts.get(status) ?? 0) + 1);
      for (const [status, count] of counts) metrics.urlsIn(method, status, count);
    },
  });
  return {
    ListNodes: unary('ListNodes', async () => ({ values: await options.nodes() })),
    ListCrawls: unary('ListCrawls', async () => ({ values: await crawls.names() })),
    DeleteCrawl: unary('DeleteCrawl', async (request: { value: string }) => ({
      value: await deleteCrawl(crawls, request.value),
    })),
    ListQueues: unary('ListQueues', (request: Pagination) => listQueues(crawls, request, options.clock())),
    GetStats: unary('GetStats', (request: QueueWithinCrawlParams) => stats(crawls, request)),
    DeleteQueue: unary('DeleteQueue', async (request: QueueWithinCrawlParams) => ({
      value: await ((await crawls.find(request.crawlID))?.frontier().deleteQueue(request.key) ?? 0),
    })),
    BlockQueueUntil: unary('BlockQueueUntil', async (request: BlockQueueParams) => {
      await (await crawls.frontier(request.crawlID)).blockUntil(request.key, request.time * SECONDS_TO_MS);
      return {};
    }),
    // A node's own state; `local: false` (the default of proto3) applies it to every node.
    SetActive: unary('SetActive', async (request: { state: boolean; local?: boolean }) => {
      active = request.state;
      if (request.local !== true) await options.peers.each('SetActive', { state: request.state, local: true });
      return {};
    }),
    GetActive: unary('GetActive', async (request: { local?: boolean }) => {
      if (!active || request.local === true) return { state: active };
      const others = (await options.peers.each('GetActive', { local: true })) as { state?: boolean }[];
      return { state: others.every((reply) => reply.state === true) };
    }),
    SetDelay: unary('SetDelay', async (request: QueueDelayParams) => {
      const delayMs = checkedSeconds('delay_requestable', request.delay_requestable) * SECONDS_TO_MS;
      const frontier = await crawls.frontier(request.crawlID);
      // An empty key sets the crawl's default delay (URLFrontier: "the default for all the queues").
      if (request.key === '') await frontier.configure({ delayMs });
      else await frontier.setDelay(request.key, delayMs);
      return {};
    }),
    SetCrawlLimit: unary('SetCrawlLimit', async (request: CrawlLimitParams) => {
      await (await crawls.frontier(request.crawlID)).setCrawlLimit(
        request.key,
        request.limit === 0 ? null : request.limit,
      );
      return {};
    }),
    SetLogLevel: unary('SetLogLevel', async (request: LogLevelParams) => {
      setLogLevel(options.logger, request);
      if (request.local !== true) await options.peers.each('SetLogLevel', { ...request, local: true });
      return {};
    }),
    GetURLStatus: unary('GetURLStatus', (request: UrlStatusRequest) => urlStatus(crawls, request)),
    CountURLs: unary('CountURLs', (request: CountUrlParams) => countUrls(crawls, request)),
    PurgeURLs: unary('PurgeURLs', (request: PurgeUrlParams) => purgeUrls(crawls, request, options.clock())),
    ListURLs: (call: ServerWritableStream<ListUrlParams | MalformedMessage, object>) => {
      metrics.call('ListURLs');
      const startNs = process.hrtime.bigint();
      listUrls(crawls, call).then(
        (sent) => {
          metrics.urlsOut('ListURLs', sent);
          metrics.elapsed('ListURLs', startNs);
          call.end();
        },
        (error: unknown) => call.emit('error', failure(options, 'ListURLs', error)),
      );
    },
    GetURLs: (call: ServerWritableStream<GetParams | MalformedMessage, UrlInfo>) => {
      metrics.call('GetURLs');
      const startNs = process.hrtime.bigint();
      getUrls(crawls, call, active).then(
        (sent) => {
          metrics.urlsOut('GetURLs', sent);
          metrics.elapsed('GetURLs', startNs);
          call.end();
        },
        (error: unknown) => call.emit('error', failure(options, 'GetURLs', error)),
      );
    },
    PutURLs: (call: ServerDuplexStream<UrlItem | MalformedMessage, AckMessage>) => {
      metrics.call('PutURLs');
      new PutUrlsStream(
        call,
        crawls,
        putHooks<AckMessage>('PutURLs', (ack) => [ack.status]),
      );
    },
    PutDiscovered: (call: ServerDuplexStream<DiscoveredBatch | MalformedMessage, BatchAck>) => {
      metrics.call('PutDiscovered');
      new PutDiscoveredStream(call, {
        crawls,
        maxInFlight: options.putDiscoveredInFlight,
        ...putHooks<BatchAck>('PutDiscovered', (ack) => ack.statuses),
      });
    },
  };
}

function failure(
  options: UrlFrontierServiceOptions,
  method: string,
  error: unknown,
): ReturnType<typeof toServiceError> {
  const status = toServiceError(error);
  options.metrics.error(method, status.code);
  if (status.code === GrpcStatus.INTERNAL) options.onInternalError(method, error);
  return status;
}

/** URLFrontier's levels as serve's: TRACE and DEBUG are debug (every call logged), WARN warning. */
const LEVEL_OF: Readonly<Record<LogLevelParams['level'], LogLevel>> = {
  TRACE: 'debug',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warning',
  ERROR: 'error',
};

/**
 * SetLogLevel: serve has one log, so the level applies to it whatever `package` names (the
 * reference's loggers are per Java package). The change is logged (at info: a level of warning or
 * error hides it).
 */
function setLogLevel(logger: Logger, request: LogLevelParams): void {
  const level = LEVEL_OF[request.level];
  if (level === undefined) throw invalidArgument(`unknown log level ${JSON.stringify(request.level)}`);
  logger.setLevel(level);
  logger.log('urlfrontier', { method: 'SetLogLevel', level, package: request.package.slice(0, 200) });
}

function checkedSeconds(name: string, seconds: number): number {
  if (!Number.isSafeInteger(seconds) || seconds < 0 || seconds > DELAY_S_MAX) {
    throw invalidArgument(
      `${name} must be 0 to ${DELAY_S_MAX} seconds, got ${seconds} (a negative number sent as a uint32 arrives as ${2 ** 32 - 1})`,
    );
  }
  return seconds;
}

/**
 * GetURLs: due URLs of ready queues, each leased for delay_requestable seconds (default 30, as the
 * reference service): until then it is not handed out again, and if it is not reported back (a
 * known item) by then, it is. Inactive (SetActive false): nothing.
 */
async function getUrls(
  crawls: Crawls,
  call: ServerWritableStream<GetParams | MalformedMessage, UrlInfo>,
  active: boolean,
): Promise<number> {
  const request = call.request;
  if (isMalformed(request)) throw invalidArgument(request.malformed);
  const leaseMs =
    checkedSeconds('delay_requestable', request.delay_requestable === 0 ? DEFAULT_LEASE_S : request.delay_requestable) *
    SECONDS_TO_MS;
  if (!active) return 0;
  let sent = 0;
  const perQueue = request.max_urls_per_queue === 0 ? MAX_TAKE : Math.min(request.max_urls_per_queue, MAX_TAKE);
  let count =
    request.max_queues === 0 || request.max_urls_per_queue === 0
      ? MAX_TAKE
      : Math.min(MAX_TAKE, request.max_queues * request.max_urls_per_queue);
  let queuesLeft = request.max_queues;
  const names = request.item === 'anyCrawlID' ? await crawls.names() : [request.crawlID ?? ''];
  for (const name of names) {
    if (count === 0 || (request.max_queues > 0 && queuesLeft === 0)) break;
    // A crawl that does not exist answers nothing, as a poll before the first PutURLs should, and gets no state made for it.
    if (!(await crawls.exists(name))) continue;
    const frontier = await crawls.frontier(name);
    const leased = await frontier.take(count, {
      leaseMs,
      perQueue,
      maxQueues: queuesLeft,
      ...(request.key === '' ? {} : { queue: request.key }),
    });
    const crawlID = (await crawls.scope(name)).name;
    const queues = new Set<string>();
    for (const entry of leased) {
      queues.add(entry.queue);
      call.write({ url: entry.url, key: entry.queue, metadata: metadataOf(entry.data), crawlID });
    }
    count -= leased.length;
    sent += leased.length;
    if (request.max_queues > 0) queuesLeft -= queues.size;
  }
  return sent;
}

/**
 * DeleteCrawl, as the reference service does it: the crawl's frontier is emptied (queues, URLs,
 * their settings, the crawl's default delay and in-flight limit, its completed count), so that
 * ListCrawls no longer lists it and GetStats answers zeros; its scope is rotated, so that URLs
 * put again afterwards are new again. The rotation carries the capacity over rather than sizing
 * the next epoch from one cut short. An unknown crawl answers 0. Resolves with how many URLs
 * were queued.
 */
async function deleteCrawl(crawls: Crawls, crawlID: string): Promise<number> {
  const scope = await crawls.find(crawlID);
  if (scope === undefined) return 0;
  const frontier = scope.frontier();
  const removed = await frontier.clear({ completed: true });
  await frontier.configure({
    delayMs: DEFAULT_FRONTIER_SETTINGS.delayMs,
    maxInFlightPerQueue: DEFAULT_FRONTIER_SETTINGS.maxInFlightPerQueue,
  });
  if ((await scope.openEpoch()) !== null) await scope.rotate({ afterDeletion: true });
  return removed;
}

/** ListQueues: queue keys in key order, paged by start and size; inactive ones (nothing takeable now) only when asked for. */
async function listQueues(crawls: Crawls, request: Pagination, nowMs: number): Promise<object> {
  const scope = await crawls.find(request.crawlID);
  const size = request.size === 0 ? LIST_QUEUES_SIZE_DEFAULT : request.size;
  if (scope === undefined)
    return { values: [], total: 0, start: request.start, size: 0, crawlID: scopeOfCrawl(request.crawlID) };
  const frontier = scope.frontier();
  const values: string[] = [];
  let total = 0;
  await forEachQueue(frontier, (queue) => {
    if (!request.include_inactive && !isActive(queue, nowMs)) return;
    if (total >= request.start && values.length < size) values.push(queue.key);
    total++;
  });
  return { values, total, start: request.start, size: values.length, crawlID: scope.name };
}

/** Active, as URLFrontier means it: the queue could hand out a URL now. */
function isActive(queue: QueueStats, nowMs: number): boolean {
  return queue.readyAtMs !== undefined && queue.readyAtMs <= nowMs;
}

async function forEachQueue(frontier: ServedFrontier, visit: (queue: QueueStats) => void): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const page = await frontier.listQueues({ limit: QUEUE_PAGE, ...(after === undefined ? {} : { after }) });
    page.forEach(visit);
    if (page.length < QUEUE_PAGE) return;
    after = page[page.length - 1]!.key;
  }
}

/** GetStats of a queue (key given) or of the whole crawl: size = URLs waiting (due or scheduled), inProcess = leased. An unknown crawl: zeros. */
async function stats(crawls: Crawls, request: QueueWithinCrawlParams): Promise<object> {
  const scope = await crawls.find(request.crawlID);
  if (scope === undefined)
    return {
      size: 0,
      inProcess: 0,
      counts: { completed: 0 },
      numberOfQueues: 0,
      crawlID: scopeOfCrawl(request.crawlID),
    };
  const frontier = scope.frontier();
  if (request.key !== '') {
    const queue = await frontier.queue(request.key);
    return {
      size: queue?.waiting ?? 0,
      inProcess: queue?.leased ?? 0,
      counts: { completed: queue?.completed ?? 0 },
      numberOfQueues: queue === undefined || queue.waiting + queue.leased === 0 ? 0 : 1,
      crawlID: scope.name,
    };
  }
  const s = await frontier.stats();
  return {
    size: s.pending,
    inProcess: s.leased,
    counts: { completed: s.done },
    numberOfQueues: s.queues,
    crawlID: scope.name,
  };
}

/**
 * GetURLStatus: a URL in the frontier is answered exactly (discovered while it waits to be
 * fetched, known with its refetch date while it is scheduled for later); one that is not there but
 * in the crawl's filter is known with no refetch date — "probably seen", finished or a false
 * positive of the filter; any other NOT_FOUND.
 */
async function urlStatus(crawls: Crawls, request: UrlStatusRequest): Promise<object> {
  if (request.url === '') throw invalidArgument('GetURLStatus needs a url');
  const scope = await crawls.find(request.crawlID);
  if (scope === undefined)
    throw new RpcError(
      GrpcStatus.NOT_FOUND,
      `${request.url.slice(0, 200)} is not in crawl ${scopeOfCrawl(request.crawlID)}: no such crawl`,
    );
  const entry = await scope.frontier().urlStatus(request.url);
  if (entry !== undefined)
    return urlItemOf(
      { url: request.url, queue: entry.queue, state: entry.state, atMs: entry.atMs, createdMs: entry.createdMs },
      scope.name,
    );
  const info = { url: request.url, key: request.key, metadata: {}, crawlID: scope.name };
  const [seen] = await scope.has([request.url]);
  if (seen === true) return { known: { info, refetchable_from_date: 0 }, ID: request.url };
  throw new RpcError(GrpcStatus.NOT_FOUND, `${request.url.slice(0, 200)} is not in crawl ${scope.name}`);
}
