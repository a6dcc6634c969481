import { SeenStoreError } from '../../errors.js';

/** What a redis:// or rediss:// store location names. */
export interface RedisLocation {
  readonly tls: boolean;
  /** host:port of every listed node (a cluster is discovered from any of them). */
  readonly nodes: readonly { readonly host: string; readonly port: number }[];
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** The key prefix: every key of this store starts with `{PREFIX/` (default `seenstore`). */
  readonly prefix: string;
  /** `timeout-ms=N`: the deadline of every call (deadline.ts), overriding the `unavailableAfterMs` option. */
  readonly timeoutMs: number | undefined;
}

const PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Parses `redis[s]://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...][/][?prefix=NAME][&timeout-ms=N]`. The password
 * comes from the location or else from SEENSTORE_REDIS_PASSWORD; it is never part of a message
 * (store/open.ts redactLocation). `prefix` lets several independent stores share one Redis.
 */
export function parseRedisLocation(location: string, env: NodeJS.ProcessEnv = process.env): RedisLocation {
  const match = /^(rediss?):\/\/(?:([^@/]*)@)?([^/?]+)\/?(?:\?(.*))?$/i.exec(location);
  if (match === null) throw usage('expected redis://[PASSWORD@]HOST:PORT[,HOST:PORT...][?prefix=NAME]');
  const [, scheme, auth, hosts, query] = match;
  let username: string | undefined;
  let password: string | undefined;
  if (auth !== undefined) {
    const colon = auth.indexOf(':');
    if (colon < 0) password = decodeURIComponent(auth);
    else {
      username = auth.slice(0, colon) === '' ? undefined : decodeURIComponent(auth.slice(0, colon));
      password = decodeURIComponent(auth.slice(colon + 1));
    }
  }
  if (password === undefined || password === '')
    password = env.SEENSTORE_REDIS_PASSWORD === '' ? undefined : env.SEENSTORE_REDIS_PASSWORD;
  const nodes = hosts!.split(',').map((hostPort) => {
    const at = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(hostPort);
    const port = at === null ? NaN : Number(at[2]);
    if (at === null || !(port >= 1 && port <= 65535)) throw usage(`${JSON.stringify(hostPort)} is not HOST:PORT`);
    return { host: at[1]!.replace(/^\[|\]$/g, ''), port };
  });
  let prefix = 'seenstore';
  let timeoutMs: number | undefined;
  for (const pair of (query ?? '').split('&').filter((part) => part !== '')) {
    const [name, value] = pair.split('=');
    if (name === 'prefix' && value !== undefined && PREFIX_PATTERN.test(decodeURIComponent(value)))
      prefix = decodeURIComponent(value);
    else if (name === 'timeout-ms' && value !== undefined && /^[1-9][0-9]{2,8}$/.test(value)) timeoutMs = Number(value);
    else
      throw usage(
        `unknown or invalid option ${JSON.stringify(name)} (known: prefix=NAME, 1-64 of A-Z a-z 0-9 . _ -; timeout-ms=N, 100 to 999999999)`,
      );
  }
  return { tls: scheme!.toLowerCase() === 'rediss', nodes, username, password, prefix, timeoutMs };
}

function usage(why: string): SeenStoreError {
  return new SeenStoreError('USAGE', `invalid Redis store location: ${why}`);
}
