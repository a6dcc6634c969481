import { DEFAULT_BIND, DEFAULT_PORT } from './limits.js';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { AuthThrottle } from './auth-throttle.js';
import { bloomCommands } from './bloom-commands.js';
import { CommandTable } from './command-table.js';
import { Connection } from './connection.js';
import type { ScopeHandle, ServerContext, ServerCounters } from './context.js';
import { epochCommands } from './epoch-commands.js';
import { frontierCommands } from './frontier-commands.js';
import { queueCommands } from './queue-commands.js';
import { setdiffCommands } from './setdiff-commands.js';
import { GroupCommit } from './group-commit.js';
import type { ServedStore } from './served-store.js';
import { serverLimits, type ServerLimits } from './limits.js';
import { createLogger, type Logger } from './logger.js';
import { ServerMetrics } from './metrics.js';
import { error } from './reply.js';
import { passwordDigest, serverCommands } from './server-commands.js';
import { SEENSTORE_VERSION } from './info.js';
import { transactionCommands } from './transaction.js';

export interface ServeOptions {
  /** TCP port (default 6380, beside a local Redis's 6379); 0 picks a free one (see SeenServer.port). */
  readonly port?: number;
  /** Address to listen on (default 127.0.0.1). Anything but loopback needs `password`. */
  readonly bind?: string;
  /** The password clients give with AUTH or HELLO ... AUTH; none: no AUTH (loopback only). */
  readonly password?: string;
  /** The --store argument as given, for INFO. */
  readonly storeSpec: string;
  readonly limits?: Partial<ServerLimits>;
  /** Capacity and FPR of scopes that BF.ADD / BF.MADD / BF.INSERT create (default 1,000,000 URLs at 0.01). */
  readonly autoCreate?: { readonly capacityUrls: number; readonly fprTarget: number };
  /** Serve Prometheus text on this port (on `metricsBind`, default 127.0.0.1); none: no metrics endpoint. */
  readonly metricsPort?: number;
  readonly metricsBind?: string;
  readonly logger?: Logger;
}

export { DEFAULT_BIND, DEFAULT_PORT };

/** Whether `address` reaches only this machine. */
export function isLoopback(address: string): boolean {
  return (
    address === 'localhost' ||
    address === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address) ||
    address === '::ffff:127.0.0.1'
  );
}

/**
 * `seenstore serve`: a RESP server over one open store. Owns the store handle only to use it;
 * the caller opens it before and closes it after stop().
 */
export class SeenServer implements ServerContext {
  readonly store: ServedStore;
  readonly storeSpec: string;
  readonly limits: ServerLimits;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
  readonly autoCreate: { readonly capacityUrls: number; readonly fprTarget: number };
  readonly startedAtMs = Date.now();
  readonly bind: string;
  readonly counters: ServerCounters = {
    connectionsReceived: 0,
    connectionsRejected: 0,
    commandsProcessed: 0,
    errorReplies: 0,
    protocolErrors: 0,
  };
  readonly passwordDigest: Buffer | undefined;
  readonly authThrottle = new AuthThrottle();

  readonly #options: ServeOptions;
  readonly #table: CommandTable;
  readonly #scopes = new Map<string, Promise<ScopeHandle>>();
  readonly #connections = new Set<Connection>();
  readonly #net: Server;
  #http: HttpServer | undefined;
  #nextId = 1;
  #port = 0;
  #stopping: Promise<void> | undefined;

  constructor(store: ServedStore, options: ServeOptions) {
    this.store = store;
    this.#options = options;
    this.storeSpec = options.storeSpec;
    this.limits = serverLimits(options.limits);
    this.logger = options.logger ?? createLogger(false);
    this.autoCreate = options.autoCreate ?? { capacityUrls: 1_000_000, fprTarget: 0.01 };
    this.bind = options.bind ?? DEFAULT_BIND;
    this.passwordDigest = options.password === undefined ? undefined : passwordDigest(options.password);
    this.metrics = new ServerMetrics(() => this.store.stats());
    const table: CommandTable = new CommandTable([
      ...serverCommands(() => table),
      ...bloomCommands(),
      ...epochCommands(),
      ...frontierCommands(),
      ...queueCommands(),
      ...setdiffCommands(),
      ...transactionCommands(),
    ]);
    this.#table = table;
    this.#net = createServer({ noDelay: true }, (socket) => this.#accept(socket));
  }

  get port(): number {
    return this.#port;
  }

  /** The metrics endpoint's port, once listening (0 without one). */
  get metricsPort(): number {
    const address = this.#http?.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  }

  scope(key: string): Promise<ScopeHandle> {
    const name = scopeOfKey(key);
    let handle = this.#scopes.get(name);
    if (handle === undefined) {
      // Items of a RedisBloom filter are any strings (scrapy-redis adds request fingerprints): raw keys.
      handle = this.store
        .scope(name, { ...this.autoCreate, keys: 'raw' })
        .then((scope) => ({ scope, commit: new GroupCommit(scope, this.metrics) }));
      // A refused name is not kept (an attacker could otherwise fill the map with refusals).
      handle.catch(() => this.#scopes.delete(name));
      this.#scopes.set(name, handle);
    }
    return handle;
  }

  clients(): Iterable<Connection> {
    return this.#connections;
  }

  commands(): CommandTable {
    return this.#table;
  }

  async start(): Promise<void> {
    if (this.passwordDigest === undefined && !isLoopback(this.bind)) {
      throw new Error(
        `refusing to listen on ${this.bind} without a password: give --requirepass-file FILE or SEENSTORE_PASSWORD, or bind 127.0.0.1`,
      );
    }
    await listen(this.#net, this.#options.port ?? DEFAULT_PORT, this.bind);
    const address = this.#net.address();
    this.#port = typeof address === 'object' && address !== null ? address.port : 0;
    if (this.#options.metricsPort !== undefined) {
      this.#http = createHttpServer((request, response) => void this.#serveMetrics(request.url ?? '/', response));
      await listen(this.#http, this.#options.metricsPort, this.#options.metricsBind ?? DEFAULT_BIND);
    }
    this.logger.log('start', {
      version: SEENSTORE_VERSION,
      pid: process.pid,
      bind: this.bind,
      port: this.#port,
      store: this.storeSpec,
      auth: this.passwordDigest !== undefined,
      metrics_port: this.#http === undefined ? null : this.metricsPort,
    });
  }

  /**
   * Graceful stop: no new connections, no new requests; every request already taken is answered
   * (writes once their batches are durable); then the sockets close. The caller closes the store.
   */
  stop(reason: string): Promise<void> {
    this.#stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => this.#net.close(() => resolve()));
      await Promise.all([...this.#connections].map((connection) => connection.finish()));
      for (const handle of this.#scopes.values())
        await handle.then(
          (h) => h.commit.idle(),
          () => undefined,
        );
      await closed;
      // A scraper's keep-alive connection would hold close() open: end them.
      this.#http?.closeAllConnections();
      await new Promise<void>((resolve) => (this.#http === undefined ? resolve() : this.#http.close(() => resolve())));
      this.logger.log('stop', {
        reason,
        commands: this.counters.commandsProcessed,
        connections: this.counters.connectionsReceived,
      });
    })();
    return this.#stopping;
  }

  #accept(socket: Socket): void {
    this.counters.connectionsReceived++;
    if (this.#stopping !== undefined || this.#connections.size >= this.limits.clientsMax) {
      this.counters.connectionsRejected++;
      socket.on('error', () => socket.destroy());
      socket.end(error('ERR max number of clients reached'));
      return;
    }
    const connection = new Connection(socket, this, this.#table, this.#nextId++);
    this.#connections.add(connection);
    this.metrics.connections.set(this.#connections.size);
    this.metrics.connectionsTotal.inc();
    socket.on('close', () => {
      this.#connections.delete(connection);
      this.metrics.connections.set(this.#connections.size);
    });
  }

  async #serveMetrics(url: string, response: import('node:http').ServerResponse): Promise<void> {
    if (url !== '/metrics' && url !== '/') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    try {
      const body = await this.metrics.registry.metrics();
      response.writeHead(200, { 'content-type': this.metrics.registry.contentType }).end(body);
    } catch (thrown) {
      this.logger.log('error', { event: 'metrics', message: (thrown as Error).message });
      response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed: see the server log\n');
    }
  }
}

function listen(server: Server | HttpServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * The scope a key names. Clients name keys the Redis way, with `:` between parts (scrapy-redis's
 * `spider:dupefilter`), which a scope name cannot hold: each `:` stands for a `.`, so that key is
 * scope `spider.dupefilter` (and `spider.dupefilter` names the same scope). Nothing else changes;
 * a name still invalid after that is refused as before.
 */
export function scopeOfKey(key: string): string {
  return key.replaceAll(':', '.');
}
