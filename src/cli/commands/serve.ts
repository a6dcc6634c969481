import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { MAX_THREADS } from '../../epochs/seen-store.js';
import { createLogger } from '../../server/logger.js';
import type { ServerLimits } from '../../server/limits.js';
import { DEFAULT_BIND, DEFAULT_PORT, isLoopback, SeenServer } from '../../server/server.js';
import { openServedStore } from '../../server/store-spec.js';
import { driverFor, redactLocation } from '../../store/open.js';
import { checkAdvertisedAddress } from '../../urlfrontier/node-presence.js';
import { parseCount, parseFpr, storeDir, warn, type GlobalOptions } from '../context.js';

interface ServeCliOptions extends GlobalOptions {
  readonly port?: string;
  readonly bind?: string;
  readonly requirepassFile?: string;
  readonly metricsPort?: string;
  readonly urlfrontierPort?: string;
  readonly putDiscoveredMaxInflight?: string;
  readonly advertise?: string;
  readonly metricsBind?: string;
  readonly logJson?: boolean;
  readonly maxClients?: string;
  readonly maxItems?: string;
  readonly maxBulkBytes?: string;
  readonly maxPendingReplies?: string;
  readonly idleTimeout?: string;
  readonly defaultCapacity?: string;
  readonly defaultFpr?: string;
}

/**
 * The password: --requirepass-file's first line, else $SEENSTORE_PASSWORD; none when neither is
 * given. One of only spaces or tabs is a mistake (a file of blanks guards nothing): USAGE.
 */
function password(options: ServeCliOptions): string | undefined {
  if (options.requirepassFile !== undefined) {
    const text = readFileSync(options.requirepassFile, 'utf8').split(/\r?\n/)[0] ?? '';
    if (text.trim() === '')
      throw new SeenStoreError(
        'USAGE',
        `--requirepass-file ${options.requirepassFile} holds no password on its first line (empty or only blanks)`,
      );
    return text;
  }
  const fromEnv = process.env.SEENSTORE_PASSWORD;
  if (fromEnv !== undefined && fromEnv !== '' && fromEnv.trim() === '')
    throw new SeenStoreError('USAGE', 'SEENSTORE_PASSWORD holds only blanks');
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}

function limits(options: ServeCliOptions): Partial<ServerLimits> {
  const idle = parseCount('idle-timeout', options.idleTimeout, 0);
  const pick = <K extends keyof ServerLimits>(key: K, value: number | undefined): Partial<ServerLimits> =>
    value === undefined ? {} : { [key]: value };
  return {
    ...pick('clientsMax', parseCount('max-clients', options.maxClients)),
    ...pick('itemsMax', parseCount('max-items', options.maxItems)),
    ...pick('bulkBytesMax', parseCount('max-bulk-bytes', options.maxBulkBytes)),
    ...pick('pendingRepliesMax', parseCount('max-pending-replies', options.maxPendingReplies)),
    ...pick('idleTimeoutMs', idle === undefined ? undefined : idle * 1000),
  };
}

/**
 * `seenstore serve`: a RedisBloom-compatible RESP server over the store (docs/server.md). Runs
 * until SIGTERM or SIGINT, then answers every request it took, closes the store (a checkpoint)
 * and exits 0.
 */
export async function serve(command: Command): Promise<void> {
  const options = command.optsWithGlobals<ServeCliOptions>();
  const port = parseCount('port', options.port, 0) ?? DEFAULT_PORT;
  if (port > 65_535) throw new SeenStoreError('USAGE', `--port must be at most 65535, got ${port}`);
  const metricsPort = parseCount('metrics-port', options.metricsPort, 0);
  const urlfrontierPort = parseCount('urlfrontier-port', options.urlfrontierPort, 0);
  if (urlfrontierPort !== undefined && urlfrontierPort > 65_535)
    throw new SeenStoreError('USAGE', `--urlfrontier-port must be at most 65535, got ${urlfrontierPort}`);
  if (options.advertise !== undefined && urlfrontierPort === undefined)
    throw new SeenStoreError('USAGE', '--advertise names the URLFrontier address: give --urlfrontier-port too');
  const advertise = options.advertise === undefined ? undefined : checkAdvertisedAddress(options.advertise);
  const putDiscoveredInFlight = parseCount('put-discovered-max-inflight', options.putDiscoveredMaxInflight, 1);
  const bind = options.bind ?? DEFAULT_BIND;
  const secret = password(options);
  if (secret === undefined && !isLoopback(bind)) {
    throw new SeenStoreError(
      'USAGE',
      `refusing to listen on ${bind} without a password: give --requirepass-file FILE or SEENSTORE_PASSWORD, or bind 127.0.0.1`,
    );
  }
  const threads = parseCount('threads', options.threads);
  if (threads !== undefined && threads > MAX_THREADS)
    throw new SeenStoreError('USAGE', `--threads must be at most ${MAX_THREADS}, got ${threads}`);
  // The driver resolves the location: a directory becomes absolute, a redis:// URL passes through.
  const spec = storeDir(options);
  const logger = createLogger(options.logJson === true);
  const serverLimits = limits(options);
  const capacityUrls = parseCount('default-capacity', options.defaultCapacity) ?? 1_000_000;
  const fprTarget = parseFpr(options.defaultFpr) ?? 0.01;
  // --no-create guards the store only: scopes are still created by clients (RedisBloom's BF.ADD).
  const mayCreate = options.create !== false;
  const absent = await driverFor(spec).knownAbsent(spec);
  const store = await openServedStore(spec, {
    create: mayCreate,
    onWarning: (message) => logger.log('warning', { message }),
    ...(threads === undefined ? {} : { threads }),
  });
  // Said before the start line, like the other commands' `created store at DIR`: a mistyped
  // --store would otherwise serve an empty store, and every crawler behind it re-crawls everything.
  if (mayCreate && absent && options.quiet !== true) logger.log('created', { store: redactLocation(spec) });
  const server = new SeenServer(store, {
    port,
    bind,
    storeSpec: spec,
    limits: serverLimits,
    autoCreate: { capacityUrls, fprTarget },
    logger,
    ...(secret === undefined ? {} : { password: secret }),
    ...(metricsPort === undefined ? {} : { metricsPort }),
    ...(options.metricsBind === undefined ? {} : { metricsBind: options.metricsBind }),
  });
  // gRPC is loaded only for a server that serves URLFrontier: serve's start-up stays what it was.
  const urlfrontier =
    urlfrontierPort === undefined
      ? undefined
      : new (await import('../../urlfrontier/server.js')).UrlFrontierServer(store, {
          port: urlfrontierPort,
          bind,
          scopeOptions: { capacityUrls, fprTarget, keys: 'raw' },
          logger,
          authThrottle: server.authThrottle,
          registry: server.metrics.registry,
          ...(putDiscoveredInFlight === undefined ? {} : { putDiscoveredInFlight }),
          ...(advertise === undefined ? {} : { advertise }),
          ...(secret === undefined ? {} : { password: secret }),
        });
  // Listening before the start line: a SIGTERM sent as soon as it appears stops the server
  // cleanly once it has started, instead of killing it.
  const stopped = new Promise<string>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      resolve(signal);
      // A second signal while stopping: the operator insists; exit without waiting (acknowledged
      // writes are durable already; unacknowledged ones were never promised).
      process.once(signal, () => process.exit(signal === 'SIGINT' ? 130 : 143));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  try {
    // Logged before RESP's start line, so that whoever waits for that line knows both ports.
    if (urlfrontier !== undefined) {
      await urlfrontier.start().catch((error: unknown) => {
        throw new SeenStoreError(
          'IO_ERROR',
          `cannot serve URLFrontier on ${bind}:${urlfrontierPort}: ${(error as Error).message}`,
          { cause: error },
        );
      });
      logger.log('urlfrontier', {
        bind,
        port: urlfrontier.port,
        node: urlfrontier.address ?? null,
        auth: secret !== undefined,
      });
    }
    await server.start();
  } catch (error) {
    await urlfrontier?.stop();
    await store.close();
    const errno = (error as NodeJS.ErrnoException).code;
    if (errno === 'EADDRINUSE' || errno === 'EACCES' || errno === 'EADDRNOTAVAIL') {
      throw new SeenStoreError('IO_ERROR', `cannot listen on ${bind}:${port}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    throw error;
  }
  const signal = await Promise.race([stopped, store.failed]);
  if (signal instanceof Error) {
    // The store failed underneath (its thread died): nothing more can be acknowledged.
    logger.log('error', { event: 'store-failed', message: signal.message });
    await Promise.all([server.stop('store failed'), urlfrontier?.stop()]);
    throw signal;
  }
  await Promise.all([server.stop(signal), urlfrontier?.stop()]);
  try {
    await store.close();
  } catch (error) {
    warn(`closing the store failed (the journal keeps every acknowledged add): ${(error as Error).message}`);
    throw error;
  }
  process.exit(0);
}
