import { createRequire } from 'node:module';

/**
 * tldts, loaded at the first `domain` key: its Public Suffix List is ~200 KB of CommonJS, whose
 * parse and compile cost every command ~15 ms of start-up when imported with this module (which
 * every add and query loads, for the frontier).
 */
let tldts: typeof import('tldts') | undefined;
const requireModule = createRequire(import.meta.url);

/**
 * How a frontier groups URLs into politeness queues; fixed per scope when its frontier is created.
 *
 * - `host`: the URL's host, lower-cased, with `:port` when the port is not the scheme's default
 *   (`example.com`, `example.com:8080`, `[2001:db8::1]:8443`). What StormCrawler's `byHost` and
 *   URLFrontier's reference service do.
 * - `domain`: the registrable domain by the Public Suffix List, its private section included
 *   (`news.example.co.uk` and `www.example.co.uk` -> `example.co.uk`, but `a.github.io` and
 *   `b.github.io` stay apart, as browsers keep their cookies apart); the port is dropped. A host
 *   with no registrable domain (an IP address, `localhost`) is its own queue.
 * - `none`: one queue for the whole scope, whose key is the empty string.
 */
export type QueueKeyMode = 'host' | 'domain' | 'none';

export const QUEUE_KEY_MODES: readonly QueueKeyMode[] = ['host', 'domain', 'none'];

/** Longest queue key accepted, in UTF-16 code units: a DNS name is at most 253 characters, plus a port. */
export const MAX_QUEUE_KEY_LENGTH = 512;

const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: '80', https: '443', ws: '80', wss: '443', ftp: '21' };

/**
 * The queue key of an absolute URL, or undefined when it has no host to be polite to (`mailto:`,
 * a relative path, a line that is not a URL). Hosts of letters, digits, dots and dashes are read
 * from the text without a parse; any other host (an IDN, a percent-escape) goes through the WHATWG
 * parser, so that every spelling of one host is one queue.
 */
export function queueKeyOf(url: string, mode: QueueKeyMode): string | undefined {
  if (mode === 'none') return '';
  const authority = authorityOf(url);
  if (authority === undefined) return undefined;
  const host =
    authority.port === undefined || authority.port === DEFAULT_PORTS[authority.scheme]
      ? authority.host
      : `${authority.host}:${authority.port}`;
  if (mode === 'host') return host.length > MAX_QUEUE_KEY_LENGTH ? undefined : host;
  if (mode !== 'domain') throw new TypeError(`unknown queue key mode ${JSON.stringify(mode)}`);
  tldts ??= requireModule('tldts') as typeof import('tldts');
  return tldts.getDomain(authority.host, { allowPrivateDomains: true }) ?? authority.host;
}

interface Authority {
  readonly scheme: string;
  readonly host: string;
  readonly port: string | undefined;
}

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const PLAIN_HOST = /^[a-z0-9.-]+$/;

function authorityOf(url: string): Authority | undefined {
  const scheme = SCHEME.exec(url);
  if (scheme === null) return undefined;
  const start = scheme[0].length;
  let end = start;
  while (end < url.length && !isAuthorityEnd(url.charCodeAt(end))) end++;
  const at = url.lastIndexOf('@', end - 1);
  let hostPort = url.slice(at >= start ? at + 1 : start, end);
  const colon = hostPort.startsWith('[') ? hostPort.indexOf(':', hostPort.indexOf(']')) : hostPort.lastIndexOf(':');
  let port: string | undefined;
  if (colon >= 0) {
    port = hostPort.slice(colon + 1);
    hostPort = hostPort.slice(0, colon);
    if (port === '') port = undefined;
    else if (!/^[0-9]{1,5}$/.test(port) || Number(port) > 65_535) return undefined;
    else port = String(Number(port));
  }
  const host = hostPort.toLowerCase();
  if (host === '') return undefined;
  if (PLAIN_HOST.test(host) || /^\[[0-9a-f:.]+\]$/.test(host)) return { scheme: scheme[1]!.toLowerCase(), host, port };
  return parsedAuthority(url);
}

/** `/`, `?`, `#` and `\` (a path separator in the WHATWG parser's special schemes) end the authority. */
function isAuthorityEnd(code: number): boolean {
  return code === 0x2f || code === 0x3f || code === 0x23 || code === 0x5c;
}

function parsedAuthority(url: string): Authority | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.hostname === '') return undefined;
  return {
    scheme: parsed.protocol.slice(0, -1),
    host: parsed.hostname,
    port: parsed.port === '' ? undefined : parsed.port,
  };
}
