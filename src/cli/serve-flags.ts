import { DEFAULT_BIND, DEFAULT_LIMITS, DEFAULT_PORT } from '../server/limits.js';

/** `seenstore serve`'s options: flags and help (the command's module reads them when it runs). */
export const SERVE_FLAGS: readonly (readonly [string, string])[] = [
  ['--port <n>', `TCP port (default ${DEFAULT_PORT}; 0: a free one, printed in the start line)`],
  ['--bind <addr>', `address to listen on (default ${DEFAULT_BIND}); any other than loopback needs a password`],
  [
    '--requirepass-file <file>',
    'clients must AUTH with the password in FILE (default: $SEENSTORE_PASSWORD, else none)',
  ],
  [
    '--urlfrontier-port <n>',
    'also serve the URLFrontier gRPC API on port N (usually 7071; 0: a free one, logged) on --bind; needs the password as a Bearer token where RESP needs AUTH',
  ],
  [
    '--advertise <host:port>',
    "URLFrontier: the address clients reach this node at, as ListNodes lists it for the store's other nodes (default: --bind and the URLFrontier port; give it behind NAT, a container or --bind 0.0.0.0)",
  ],
  [
    '--put-discovered-max-inflight <n>',
    "URLFrontier: batches one PutDiscovered stream may send ahead of their acks before it is no longer read (default 16, as the reference's putDiscovered.max.inflight)",
  ],
  ['--metrics-port <n>', 'serve Prometheus metrics on http://127.0.0.1:N/metrics'],
  ['--metrics-bind <addr>', 'address of the metrics endpoint (default 127.0.0.1)'],
  ['--log-json', 'log lines as JSON objects'],
  ['--max-clients <n>', `connections at once (default ${DEFAULT_LIMITS.clientsMax})`],
  ['--max-items <n>', `items in one command (default ${DEFAULT_LIMITS.itemsMax})`],
  ['--max-bulk-bytes <n>', `largest argument in bytes (default ${DEFAULT_LIMITS.bulkBytesMax})`],
  [
    '--max-pending-replies <n>',
    `unanswered requests per connection before it is no longer read (default ${DEFAULT_LIMITS.pendingRepliesMax})`,
  ],
  [
    '--idle-timeout <seconds>',
    `close connections idle this long; 0: never (default ${DEFAULT_LIMITS.idleTimeoutMs / 1000})`,
  ],
  ['--default-capacity <n>', 'capacity of scopes that BF.ADD / BF.MADD / BF.INSERT create (default 1000000)'],
  ['--default-fpr <p>', 'target FPR of scopes they create (default 0.01)'],
  ['--threads <n>', 'threads for adds (SeenStoreOptions.threads; default 1)'],
];
