import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';

/**
 * One journal record per acknowledged batch, keyed [scope, epoch, seq] with seq increasing by one
 * per record. Layout (little-endian):
 *
 *   u8  record version (1)      u8 filters per URL     u16 slice the URLs were added to
 *   u32 URLs submitted in the batch
 *   u32 URLs that were new (each has `filters` hashes below)
 *   u32 xxh32 of the hash bytes
 *   new * filters * u64 hashes, URL-major
 *
 * Only new URLs are journaled: the others already are in the filter. The hashes are those of the
 * slice's filters (its seeds).
 */
export const JOURNAL_HEADER_BYTES = 16;
const JOURNAL_RECORD_VERSION = 1;

export interface JournalRecord {
  readonly slice: number;
  readonly submitted: number;
  readonly added: number;
  readonly filterCount: number;
  /** Hash words, [lo, hi] per hash, `added * filterCount` hashes. Aligned copy. */
  readonly words: Uint32Array;
}

export function encodeJournalRecord(
  hash: XxHash,
  slice: number,
  submitted: number,
  filterCount: number,
  words: Uint32Array,
  added: number,
): Buffer {
  const hashBytes = added * filterCount * 8;
  const value = Buffer.allocUnsafe(JOURNAL_HEADER_BYTES + hashBytes);
  const payload = new Uint8Array(words.buffer, words.byteOffset, hashBytes);
  value.writeUInt8(JOURNAL_RECORD_VERSION, 0);
  value.writeUInt8(filterCount, 1);
  value.writeUInt16LE(slice, 2);
  value.writeUInt32LE(submitted, 4);
  value.writeUInt32LE(added, 8);
  value.writeUInt32LE(hash.checksum(payload), 12);
  value.set(payload, JOURNAL_HEADER_BYTES);
  return value;
}

export function decodeJournalRecord(hash: XxHash, value: Uint8Array, where: string): JournalRecord {
  if (value.length < JOURNAL_HEADER_BYTES) throw new SeenStoreError('STORE_CORRUPT', `${where}: journal record truncated`);
  const view = Buffer.from(value.buffer, value.byteOffset, value.length);
  const version = view.readUInt8(0);
  if (version !== JOURNAL_RECORD_VERSION) {
    throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where}: journal record version ${version} is unknown`);
  }
  const filterCount = view.readUInt8(1);
  const slice = view.readUInt16LE(2);
  const submitted = view.readUInt32LE(4);
  const added = view.readUInt32LE(8);
  const hashBytes = added * filterCount * 8;
  if (view.length !== JOURNAL_HEADER_BYTES + hashBytes || filterCount === 0 || added > submitted) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: journal record of ${view.length} bytes does not match its header`);
  }
  const payload = view.subarray(JOURNAL_HEADER_BYTES);
  if (hash.checksum(payload) !== view.readUInt32LE(12)) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: journal record checksum mismatch`);
  }
  const words = new Uint32Array(hashBytes / 4);
  new Uint8Array(words.buffer).set(payload);
  return { slice, submitted, added, filterCount, words };
}
