import { SeenStoreError } from '../errors.js';

/** The version byte that starts every stored undelivered batch (docs/format.md, docs/redis.md). */
const UNDELIVERED_RECORD_VERSION = 1;

/** An undelivered batch as stored: its record version, then its lines, each ending in a newline. */
export function encodeUndelivered(lines: Uint8Array): Buffer {
  const value = Buffer.allocUnsafe(1 + lines.length);
  value[0] = UNDELIVERED_RECORD_VERSION;
  value.set(lines, 1);
  return value;
}

/** The lines of a stored batch (a copy); `where` names it in errors. */
export function decodeUndelivered(value: Uint8Array | undefined, where: string): Uint8Array {
  if (value === undefined || value.length === 0) throw new SeenStoreError('STORE_CORRUPT', `${where} is empty`);
  if (value[0] !== UNDELIVERED_RECORD_VERSION) {
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where} has record version ${value[0]}, this version reads ${UNDELIVERED_RECORD_VERSION}`,
    );
  }
  if (value.length > 1 && value[value.length - 1] !== 0x0a)
    throw new SeenStoreError('STORE_CORRUPT', `${where} does not end with a newline`);
  return Uint8Array.prototype.slice.call(value, 1);
}
