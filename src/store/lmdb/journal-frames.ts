import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';

/**
 * The frames of the journal file (docs/format.md, "The journal file"). Version 2, which this
 * seenstore writes, is a file of fixed size, zero-filled ahead of its frames, so that a sync after
 * an append writes data blocks only (an append that grows the file must also commit its new size
 * to the file system's journal). Its frames therefore say themselves where they end:
 *
 *   0  u32 frame bytes (header included)    16 u32 seq, low word
 *   4  u32 xxh32 of the bytes after this    20 u32 seq, high word
 *   8  u32 link: the checksum of the frame  24 u32 synced end, low word
 *          before (the file's nonce for     28 u16 synced end, high word
 *          the first)                       30 u16 scope bytes
 *   12 u32 epoch                            32 the scope (UTF-8), then the journal record
 *
 * The frames run from the file header to the first frame that does not follow: a length word of
 * zero (the zero-filled space), or a frame that fails its checksum or names another link (being
 * written, torn by a crash, or left of an older write that a crash cut short: the link keeps a
 * stale frame from ever following a newer one). "Synced end" is the offset below which the file
 * was known synced when the frame was written: a frame failing its checksum below a later frame's
 * synced end is damage, not a torn tail (`provesDamage`).
 *
 * Version 1 (read, and rewritten as version 2 by the first writer): 22-byte headers (frame bytes,
 * checksum, epoch, seq low and high, u16 scope bytes), no link, frames appended and delimited by
 * the file's size.
 */
export const FRAME_HEADER_BYTES = 32;
/** File header: the magic, then u32 file version and u32 nonce (version 2: the first frame's link; version 1: zero). */
export const FILE_MAGIC = Buffer.from('SSJOURNL', 'latin1');
export const FILE_VERSION = 2;
export const JOURNAL_FILE_HEADER_BYTES = 16;
export const V1_FRAME_HEADER_BYTES = 22;
/** Larger than any record the library writes (BATCH_URLS_MAX URLs of 24 filters): a longer length word is damage. */
export const FRAME_BYTES_MAX = 2 ** 28;

/** Writes a frame's header fields but link, synced end and checksum (`seal`); returns its bytes. */
export function encodeFrame(
  target: Buffer,
  at: number,
  scope: Buffer,
  epoch: number,
  seq: number,
  record: Uint8Array,
): number {
  const frameBytes = FRAME_HEADER_BYTES + scope.length + record.length;
  target.writeUInt32LE(frameBytes, at);
  target.writeUInt32LE(epoch, at + 12);
  target.writeUInt32LE(seq % 2 ** 32, at + 16);
  target.writeUInt32LE(Math.floor(seq / 2 ** 32), at + 20);
  target.writeUInt16LE(scope.length, at + 30);
  scope.copy(target, at + FRAME_HEADER_BYTES);
  target.set(record, at + FRAME_HEADER_BYTES + scope.length);
  return frameBytes;
}

/**
 * Links the encoded frames in `bytes` (whole frames, back to back) after `link`, stamps them with
 * `syncedEnd` and their checksums; returns the last frame's checksum (the link after them).
 */
export function sealFrames(hash: XxHash, bytes: Buffer, link: number, syncedEnd: number): number {
  for (let at = 0; at < bytes.length; ) {
    const frameBytes = bytes.readUInt32LE(at);
    bytes.writeUInt32LE(link, at + 8);
    bytes.writeUInt32LE(syncedEnd % 2 ** 32, at + 24);
    bytes.writeUInt16LE(Math.floor(syncedEnd / 2 ** 32), at + 28);
    link = hash.checksum(bytes.subarray(at + 8, at + frameBytes));
    bytes.writeUInt32LE(link, at + 4);
    at += frameBytes;
  }
  return link;
}

export function frameSeq(frame: Buffer, seqAt: number): number {
  return frame.readUInt32LE(seqAt) + frame.readUInt32LE(seqAt + 4) * 2 ** 32;
}

function syncedEndOf(bytes: Buffer, at: number): number {
  return bytes.readUInt32LE(at + 24) + bytes.readUInt16LE(at + 28) * 2 ** 32;
}

/**
 * Whether the bytes of `tail`, read from file offset `end` where a frame did not follow, prove
 * that frame damaged rather than torn: a frame header there whose synced end lies past `end` (up
 * to `fileBytes`, so random bytes do not count) was written after the bytes at `end` had been
 * synced. At `end` itself only the header is read (the frame failed its checksum; a frame written
 * by a compaction names the end of its whole file); after it, a frame must pass its checksum.
 * Stale and torn frames never qualify: each was written when the file was synced no further than
 * where it began. With `firstOnly`, only the frame at `end` and the one after it are tried (a
 * reader without the lock, which may be meeting a write under way).
 */
export function provesDamage(
  hash: XxHash,
  tail: Buffer,
  end: number,
  fileBytes: number,
  firstOnly: boolean,
): number | undefined {
  const candidate = (q: number, checked: boolean): boolean => {
    if (q + FRAME_HEADER_BYTES > tail.length) return false;
    const frameBytes = tail.readUInt32LE(q);
    if (frameBytes < FRAME_HEADER_BYTES || frameBytes > tail.length - q) return false;
    const synced = syncedEndOf(tail, q);
    if (synced <= end || synced > fileBytes) return false;
    return !checked || hash.checksum(tail.subarray(q + 8, q + frameBytes)) === tail.readUInt32LE(q + 4);
  };
  if (candidate(0, false)) return end;
  if (firstOnly) {
    const first = tail.length >= 4 ? tail.readUInt32LE(0) : 0;
    return first >= FRAME_HEADER_BYTES && candidate(first, true) ? end + first : undefined;
  }
  for (let q = 1; q + FRAME_HEADER_BYTES <= tail.length; q++) if (candidate(q, true)) return end + q;
  return undefined;
}

/**
 * STORE_CORRUPT when the bytes at `end` of the journal file `fd` (at `path`), where its frames
 * stopped, are a damaged frame (provesDamage). With `firstOnly`, only that frame and the next are
 * read; else the whole rest of the file (of `size` bytes).
 */
export function refuseDamage(
  hash: XxHash,
  fd: number,
  path: string,
  end: number,
  firstOnly: boolean,
  size = fstatSync(fd).size,
): void {
  let tail = readTail(fd, end, size, firstOnly ? FRAME_HEADER_BYTES : size - end);
  if (firstOnly) {
    const first = tail.length >= 4 ? tail.readUInt32LE(0) : 0;
    if (first >= FRAME_HEADER_BYTES && first <= FRAME_BYTES_MAX) {
      tail = readTail(fd, end, size, first + 4);
      const next = tail.length >= first + 4 ? tail.readUInt32LE(first) : 0;
      tail = readTail(fd, end, size, first + Math.min(Math.max(next, FRAME_HEADER_BYTES), FRAME_BYTES_MAX));
    }
  }
  const at = provesDamage(hash, tail, end, size, firstOnly);
  if (at !== undefined) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${path}: the frame at byte ${end} is damaged (the frame at byte ${at} was written after it had been synced; run \`seenstore verify\`)`,
    );
  }
}

/** Up to `bytes` bytes of `fd` from `from` (fewer at its end, `size`). */
function readTail(fd: number, from: number, size: number, bytes: number): Buffer {
  const tail = Buffer.alloc(Math.max(0, Math.min(bytes, size - from)));
  let n = 0;
  while (n < tail.length) {
    const got = readSync(fd, tail, n, tail.length - n, from + n);
    if (got === 0) break;
    n += got;
  }
  return tail.subarray(0, n);
}

/** One frame's contents. */
export interface JournalFrame {
  readonly scope: Buffer;
  readonly epoch: number;
  readonly seq: number;
  readonly record: Buffer;
}

/**
 * A whole file of version 2 holding `frames`, exactly as long as they are (its first writer
 * grows it), under a fresh nonce. Its frames name the whole file as synced: it is fsynced before
 * it takes the journal's place.
 */
export function buildJournalFile(hash: XxHash, frames: readonly JournalFrame[]): Buffer {
  let fileBytes = JOURNAL_FILE_HEADER_BYTES;
  for (const frame of frames) fileBytes += FRAME_HEADER_BYTES + frame.scope.length + frame.record.length;
  const bytes = Buffer.alloc(fileBytes);
  FILE_MAGIC.copy(bytes, 0);
  bytes.writeUInt32LE(FILE_VERSION, 8);
  const nonce = (Math.random() * 2 ** 32) >>> 0;
  bytes.writeUInt32LE(nonce, 12);
  let at = JOURNAL_FILE_HEADER_BYTES;
  for (const { scope, epoch, seq, record } of frames) at += encodeFrame(bytes, at, scope, epoch, seq, record);
  sealFrames(hash, bytes.subarray(JOURNAL_FILE_HEADER_BYTES), nonce, fileBytes);
  return bytes;
}

/** The u32 at offset `at` of `fd` (0 past the end of the file): a frame's length word. */
export function readWord(fd: number, at: number): number {
  const word = Buffer.alloc(4);
  return readSync(fd, word, 0, 4, at) === 4 ? word.readUInt32LE(0) : 0;
}

/** Whether the journal file at `path` has a frame, or bytes where one would begin (a backup copies it then); false when there is none. */
export function journalFileHoldsFrames(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return false;
    throw asStoreError(error, `reading ${path}`);
  }
  try {
    return readWord(fd, JOURNAL_FILE_HEADER_BYTES) !== 0;
  } finally {
    closeSync(fd);
  }
}
