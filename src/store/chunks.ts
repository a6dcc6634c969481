import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';

/**
 * A filter's bytes are stored as fixed-size chunks. The payload is 1023 cache lines, so a block of
 * the blocked layout never straddles two chunks, and with the 8-byte header the value is 65 480
 * bytes: LMDB keeps it in exactly 16 pages of 4096 bytes (16 * 4096 - 24 bytes of page header).
 * Never one huge value: LMDB fails on values over ~2 GiB.
 */
export const CHUNK_PAYLOAD_BYTES = 65_472;
export const CHUNK_HEADER_BYTES = 8;
/** What one stored chunk takes in the data file: 16 LMDB pages of 4096 bytes. */
export const CHUNK_STORED_BYTES = 16 * 4096;
const CHUNK_RECORD_VERSION = 1;

/** Chunk record: u8 version, 3 reserved zero bytes, u32 LE xxh32 of the payload, payload. */
export function encodeChunk(hash: XxHash, payload: Uint8Array): Buffer {
  const value = Buffer.allocUnsafe(CHUNK_HEADER_BYTES + payload.length);
  value.writeUInt32LE(CHUNK_RECORD_VERSION, 0);
  value.writeUInt32LE(hash.checksum(payload), 4);
  value.set(payload, CHUNK_HEADER_BYTES);
  return value;
}

/**
 * Returns the payload of a stored chunk after checking its version, size and checksum (`checksum`
 * false: a chunk this process read and checked before, unchanged since, is not hashed again).
 */
export function decodeChunk(
  hash: XxHash,
  value: Uint8Array,
  where: string,
  payloadBytes: number,
  checksum = true,
): Uint8Array {
  if (value.length < CHUNK_HEADER_BYTES) throw new SeenStoreError('STORE_CORRUPT', `${where}: chunk record truncated`);
  const view = Buffer.from(value.buffer, value.byteOffset, value.length);
  const version = view.readUInt8(0);
  if (version !== CHUNK_RECORD_VERSION) {
    throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where}: chunk record version ${version} is unknown`);
  }
  const payload = view.subarray(CHUNK_HEADER_BYTES);
  if (payload.length !== payloadBytes) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${where}: chunk holds ${payload.length} bytes, expected ${payloadBytes}`,
    );
  }
  if (checksum && hash.checksum(payload) !== view.readUInt32LE(4)) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: chunk checksum mismatch`);
  }
  return payload;
}
