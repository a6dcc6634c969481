/**
 * RESP reply encoding, RESP2 and RESP3. A reply is its wire bytes: a string (ASCII or UTF-8 text)
 * or a Buffer (a bulk string that may hold any bytes). RESP3 types a client negotiated with
 * `HELLO 3` (maps, booleans, doubles, null) fall back to their RESP2 shapes on a RESP2 connection,
 * as Redis does: a map is a flat array of keys and values, a boolean an integer 1 or 0.
 */

export type Encoded = string | Buffer;
export type Protocol = 2 | 3;

export const OK = '+OK\r\n';
export const PONG = '+PONG\r\n';
const INT_ONE = ':1\r\n';
const INT_ZERO = ':0\r\n';
const TRUE = '#t\r\n';
const FALSE = '#f\r\n';

export function simple(text: string): string {
  return `+${oneLine(text)}\r\n`;
}

/** An error reply; `text` starts with its code word (`ERR`, `NOAUTH`, ...). Never more than one line. */
export function error(text: string): string {
  return `-${oneLine(text)}\r\n`;
}

export function integer(n: number): string {
  return `:${Math.trunc(n)}\r\n`;
}

export function bulk(value: string | Buffer): Encoded {
  if (typeof value === 'string') return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  return join([`$${value.length}\r\n`, value, '\r\n']);
}

export function nil(proto: Protocol): string {
  return proto === 3 ? '_\r\n' : '$-1\r\n';
}

export function nilArray(proto: Protocol): string {
  return proto === 3 ? '_\r\n' : '*-1\r\n';
}

export function bool(value: boolean, proto: Protocol): string {
  if (proto === 3) return value ? TRUE : FALSE;
  return value ? INT_ONE : INT_ZERO;
}

export function double(value: number, proto: Protocol): Encoded {
  const text = Number.isFinite(value) ? String(value) : value > 0 ? 'inf' : value < 0 ? '-inf' : 'nan';
  return proto === 3 ? `,${text}\r\n` : bulk(text);
}

export function array(items: readonly Encoded[]): Encoded {
  return join([`*${items.length}\r\n`, ...items]);
}

/**
 * A RESP3 map, or on RESP2 a flat array of key, value, key, value. Keys are bulk strings, as Redis
 * sends them (redis-cli asserts it of COMMAND DOCS); `simple` keys for BF.INFO, as RedisBloom sends them.
 */
export function map(
  entries: readonly (readonly [string, Encoded])[],
  proto: Protocol,
  keys: 'bulk' | 'simple' = 'bulk',
): Encoded {
  const parts: Encoded[] = [proto === 3 ? `%${entries.length}\r\n` : `*${2 * entries.length}\r\n`];
  for (const [key, value] of entries) parts.push(keys === 'simple' ? simple(key) : bulk(key), value);
  return join(parts);
}

/**
 * Booleans as one array reply, without a string per element past the shared constants: what
 * BF.MADD and BF.MEXISTS answer for a thousand URLs. `from` and `count` select a part of `values`.
 */
export function boolArray(values: readonly boolean[], from: number, count: number, proto: Protocol): string {
  const yes = proto === 3 ? TRUE : INT_ONE;
  const no = proto === 3 ? FALSE : INT_ZERO;
  let out = `*${count}\r\n`;
  for (let i = from; i < from + count; i++) out += values[i] ? yes : no;
  return out;
}

export function join(parts: readonly Encoded[]): Encoded {
  if (parts.every((part) => typeof part === 'string')) return (parts as string[]).join('');
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
}

/** Error and status texts must not break the frame: CR and LF become spaces. */
function oneLine(text: string): string {
  return /[\r\n]/.test(text) ? text.replace(/[\r\n]+/g, ' ') : text;
}
