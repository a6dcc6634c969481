import { SeenStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';

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
/**
 * Counting epochs (record version 2): every operation is journaled, since a count changes even
 * when the URL was seen before. Same 16-byte header, but the word at offset 4 counts the URLs in
 * the record (each has `filters` hashes) and the word at offset 8 holds the operation in its top
 * bit (0 add, 1 delete) and, below it, how many of the URLs were new (adds) or deleted (deletes).
 */
const COUNTING_RECORD_VERSION = 2;
const DELETE_BIT = 0x8000_0000;

export type JournalOp = 'bits' | 'add' | 'delete';

export interface JournalRecord {
  /** `bits`: a Bloom-filter record (new URLs only); `add` / `delete`: a counting record. */
  readonly op: JournalOp;
  readonly slice: number;
  /** URLs submitted (bits, add); 0 for delete. */
  readonly submitted: number;
  /** URLs that were new (bits, add), or were deleted (delete). */
  readonly added: number;
  /** URLs whose hashes the record holds. */
  readonly entries: number;
  readonly filterCount: number;
  /** Hash words, [lo, hi] per hash, `entries * filterCount` hashes. Aligned copy. */
  readonly words: Uint32Array;
}

/** A counting record: `entries` URLs' hashes (all of them), the operation, and how many changed. */
export function encodeCountingRecord(
  hash: XxHash,
  op: 'add' | 'delete',
  slice: number,
  entries: number,
  changed: number,
  filterCount: number,
  words: Uint32Array,
): Buffer {
  return encodeRecord(
    hash,
    COUNTING_RECORD_VERSION,
    filterCount,
    slice,
    entries,
    ((op === 'delete' ? DELETE_BIT : 0) | changed) >>> 0,
    words,
    entries,
  );
}

/**
 * A Bloom-filter record. With `scratch` large enough, the record is written into it (a view of it
 * is returned), so a writer that puts the record before encoding the next allocates nothing.
 */
export function encodeJournalRecord(
  hash: XxHash,
  slice: number,
  submitted: number,
  filterCount: number,
  words: Uint32Array,
  added: number,
  scratch?: Buffer,
): Buffer {
  return encodeRecord(hash, JOURNAL_RECORD_VERSION, filterCount, slice, submitted, added, words, added, scratch);
}

/** The 16-byte header (the two u32 fields as the record version defines them), then `entries` URLs' hashes. */
function encodeRecord(
  hash: XxHash,
  version: number,
  filterCount: number,
  slice: number,
  word4: number,
  word8: number,
  words: Uint32Array,
  entries: number,
  scratch?: Buffer,
): Buffer {
  const hashBytes = entries * filterCount * 8;
  const length = JOURNAL_HEADER_BYTES + hashBytes;
  const value =
    scratch !== undefined && scratch.length >= length ? scratch.subarray(0, length) : Buffer.allocUnsafe(length);
  const payload = new Uint8Array(words.buffer, words.byteOffset, hashBytes);
  value.writeUInt8(version, 0);
  value.writeUInt8(filterCount, 1);
  value.writeUInt16LE(slice, 2);
  value.writeUInt32LE(word4, 4);
  value.writeUInt32LE(word8, 8);
  value.writeUInt32LE(hash.checksum(payload), 12);
  value.set(payload, JOURNAL_HEADER_BYTES);
  return value;
}

export function decodeJournalRecord(hash: XxHash, value: Uint8Array, where: string): JournalRecord {
  if (value.length < JOURNAL_HEADER_BYTES)
    throw new SeenStoreError('STORE_CORRUPT', `${where}: journal record truncated`);
  const view = Buffer.from(value.buffer, value.byteOffset, value.length);
  const version = view.readUInt8(0);
  if (version !== JOURNAL_RECORD_VERSION && version !== COUNTING_RECORD_VERSION) {
    throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where}: journal record version ${version} is unknown`);
  }
  const filterCount = view.readUInt8(1);
  const slice = view.readUInt16LE(2);
  let op: JournalOp = 'bits';
  let submitted = view.readUInt32LE(4);
  let added = view.readUInt32LE(8);
  let entries = added;
  if (version === COUNTING_RECORD_VERSION) {
    entries = submitted;
    op = (added & DELETE_BIT) !== 0 ? 'delete' : 'add';
    added = (added & ~DELETE_BIT) >>> 0;
    if (op === 'delete') submitted = 0;
  }
  const hashBytes = entries * filterCount * 8;
  if (view.length !== JOURNAL_HEADER_BYTES + hashBytes || filterCount === 0 || added > Math.max(submitted, entries)) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${where}: journal record of ${view.length} bytes does not match its header`,
    );
  }
  const payload = view.subarray(JOURNAL_HEADER_BYTES);
  if (hash.checksum(payload) !== view.readUInt32LE(12)) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: journal record checksum mismatch`);
  }
  const words = new Uint32Array(hashBytes / 4);
  new Uint8Array(words.buffer).set(payload);
  return { op, slice, submitted, added, entries, filterCount, words };
}
