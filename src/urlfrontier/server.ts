import { timingSafeEqual } from 'node:crypto';
import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type Metadata,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { ScopeOptions } from '../index.js';
import type { AuthThrottle } from '../server/auth-throttle.js';
import type { Logger } from '../server/logger.js';
import type { ServedStore } from '../server/served-store.js';
import { passwordDigest } from '../server/server-commands.js';
import { isLoopback } from '../server/server.js';
import { Crawls } from './crawls.js';
import { Registry } from 'prom-client';
import { UrlFrontierMetrics } from './metrics.js';
import { Peers } from './peers.js';
import { urlFrontierService } from './proto.js';
import { PUT_DISCOVERED_IN_FLIGHT_DEFAULT } from './put-discovered.js';
import { urlFrontierHandlers } from './service.js';
import { addressOf, NODE_TTL_MS, NodePresence } from './node-presence.js';

/** URLFrontier's usual port. */
export const URLFRONTIER_DEFAULT_PORT = 7071;
/** How long stop() lets open calls (a crawler's endless PutURLs stream) finish before it ends them. */
const STOP_GRACE_MS = 5_000;

export interface UrlFrontierServerOptions {
  /** 0 picks a free port (see UrlFrontierServer.port). */
  readonly port: number;
  /** Address to listen on; anything but loopback needs `password`. */
  readonly bind: string;
  /** The token clients send as `authorization: Bearer TOKEN` metadata (RESP's password); none: no check (loopback only). */
  readonly password?: string;
  /** How a crawl's scope is created by its first URL (RESP's auto-create plan). */
  readonly scopeOptions: ScopeOptions;
  readonly logger: Logger;
  /** Paces answers to wrong tokens, shared with RESP's AUTH. */
  readonly authThrottle: AuthThrottle;
  /** The store's clock (SeenStoreOptions.clock), for what is due now (default Date.now). */
  readonly clock?: () => number;
  /** Batches a PutDiscovered stream may have received and not yet acked before it is no longer read (default 16, the reference's putDiscovered.max.inflight). */
  readonly putDiscoveredInFlight?: number;
  /** HOST:PORT clients reach this node at, listed by ListNodes (`--advertise`); none: `bind:port`. */
  readonly advertise?: string;
  /** serve's Prometheus registry (ServerMetrics.registry): the service's metrics join it. None: they are kept but not served. */
  readonly registry?: Registry;
}

/**
 * `seenstore serve --urlfrontier-port N`: URLFrontier's gRPC service (crawler-commons/url-frontier
 * API v2) over the store that RESP serves, in the same process. Calls reach the store as RESP's do:
 * through the ServedStore, so on a directory store they run on its store thread in arrival order.
 */
export class UrlFrontierServer {
  readonly #options: UrlFrontierServerOptions;
  readonly #server = new Server();
  readonly #digest: Buffer | undefined;
  readonly #presence: NodePresence;
  readonly #peers: Peers;
  #port = 0;

  constructor(store: ServedStore, options: UrlFrontierServerOptions) {
    this.#options = options;
    this.#digest = options.password === undefined ? undefined : passwordDigest(options.password);
    this.#presence = new NodePresence(store.nodes, options.logger);
    this.#peers = new Peers(
      () => this.#presence.list(),
      () => this.#presence.address,
      options.password,
      (address, error) =>
        options.logger.log('warning', {
          event: 'urlfrontier',
          node: address,
          message: `another node did not answer (left out): ${error.message}`,
        }),
    );
    const handlers = urlFrontierHandlers({
      crawls: new Crawls(store, options.scopeOptions),
      nodes: () => this.#presence.list(),
      peers: this.#peers,
      clock: options.clock ?? Date.now,
      putDiscoveredInFlight: options.putDiscoveredInFlight ?? PUT_DISCOVERED_IN_FLIGHT_DEFAULT,
      logger: options.logger,
      metrics: new UrlFrontierMetrics(options.registry ?? new Registry()),
      onUnusableCrawl: (method, crawlID, message) =>
        options.logger.log('warning', {
          event: 'urlfrontier',
          method,
          crawl_id: crawlID.slice(0, 80),
          message: `its URLs are acked SKIPPED: ${message}`,
        }),
      onInternalError: (method, error) =>
        options.logger.log('error', {
          event: 'urlfrontier',
          method,
          message: (error as Error).message,
          stack: (error as Error).stack ?? null,
        }),
    });
    this.#server.addService(urlFrontierService(), this.#digest === undefined ? handlers : this.#guarded(handlers));
  }

  get port(): number {
    return this.#port;
  }

  /** The address ListNodes lists for this node, once started. */
  get address(): string | undefined {
    return this.#presence.address;
  }

  async start(): Promise<void> {
    if (this.#digest === undefined && !isLoopback(this.#options.bind)) {
      throw new Error(
        `refusing to serve URLFrontier on ${this.#options.bind} without a token: give --requirepass-file FILE or SEENSTORE_PASSWORD, or bind 127.0.0.1`,
      );
    }
    const host = this.#options.bind.includes(':') ? `[${this.#options.bind}]` : this.#options.bind;
    this.#port = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync(`${host}:${this.#options.port}`, ServerCredentials.createInsecure(), (error, port) =>
        error === null ? resolve(port) : reject(error),
      );
    });
    // Listed once it can answer; a node that cannot register in its store does not serve.
    try {
      await this.#presence.join(this.#options.advertise ?? addressOf(this.#options.bind, this.#port));
    } catch (error) {
      this.#server.forceShutdown();
      throw error;
    }
  }

  /**
   * Leaves the store's node list first (clients that ask ListNodes stop coming here), then takes
   * no new calls; open ones get STOP_GRACE_MS to finish (each PutURLs ack already sent is
   * durable), then are ended. A store that cannot be reached to leave is logged: the entry then
   * ends by itself after NODE_TTL_MS.
   */
  async stop(): Promise<void> {
    await this.#presence.leave().catch((error: unknown) =>
      this.#options.logger.log('warning', {
        event: 'urlfrontier',
        message: `cannot remove this node from the store's node list (it ends by itself in ${NODE_TTL_MS} ms): ${(error as Error).message}`,
      }),
    );
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, STOP_GRACE_MS);
      timer.unref();
      this.#server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.#peers.close();
  }

  /** Every handler behind the token check: a call without the right `authorization: Bearer TOKEN` is UNAUTHENTICATED. */
  #guarded(handlers: UntypedServiceImplementation): UntypedServiceImplementation {
    const guarded: UntypedServiceImplementation = {};
    for (const [name, handler] of Object.entries(handlers)) {
      guarded[name] = ((
        call: { metadata: Metadata; emit?: (event: string, error: unknown) => void },
        callback?: (error: unknown) => void,
      ) => {
        if (this.#authorized(call.metadata)) {
          (handler as (...args: unknown[]) => void)(call, callback);
          return;
        }
        this.#options.logger.log('warning', { event: 'auth-failed', protocol: 'urlfrontier', method: name });
        const refusal = {
          code: GrpcStatus.UNAUTHENTICATED,
          details: "URLFrontier calls need metadata authorization: Bearer TOKEN (the server's password)",
        };
        void this.#options.authThrottle
          .failed()
          .then(() => (callback === undefined ? call.emit!('error', refusal) : callback(refusal)));
      }) as UntypedHandleCall;
    }
    return guarded;
  }

  #authorized(metadata: Metadata): boolean {
    const value = metadata.get('authorization')[0];
    if (typeof value !== 'string' || !value.startsWith('Bearer ')) return false;
    return timingSafeEqual(passwordDigest(value.slice('Bearer '.length)), this.#digest!);
  }
}
