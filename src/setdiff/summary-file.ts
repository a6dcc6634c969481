import { closeSync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { Packr } from 'msgpackr';
import { SeenStoreError, asStoreError } from '../errors.js';
import { BLOCK_BITS, isSeedHex } from '../hash/scheme.js';
import type { XxHash } from '../hash/xxhash.js';
import { openForReading, replaceDurably } from '../store/file-open.js';
import { ENCODING_RAW, ENCODING_RICE, decodeRice, encodeRice } from '../store/gap-codes.js';
import { NORMALIZE_MODES, type NormalizeMode } from '../url/normalize.js';
import { MAX_TREES, SETDIFF_SCHEME_ID, type TreeSeeds } from './universe.js';

/**
 * Set-difference summary file, format 1 (docs/format.md): BF(MT_A) of each tree, compressed.
 *
 *   magic "\x89SSSD\r\n\x1a" | u32 format version | u32 header length H | msgpack header | u32 xxh32(header)
 *   per tree, in order: its filter's stored bytes (header.trees[t].storedBytes of them; encoding
 *                       0: the bit array as is, 2: Rice-coded gaps, export-file.ts's codec)
 *   trailer: u64 xxh64 (seed 0) of every byte before it
 */
export const SUMMARY_MAGIC = Buffer.from([0x89, 0x53, 0x53, 0x53, 0x44, 0x0d, 0x0a, 0x1a]);
export const SUMMARY_FORMAT_VERSION = 1;
const PREAMBLE_BYTES = 16;
const TRAILER_BYTES = 8;
const MAX_HEADER_BYTES = 2 ** 20;
/** Largest filter a summary may declare: below 2^31 bits the filter's fast path applies. */
export const MAX_SUMMARY_FILTER_BITS = 2 ** 31 - BLOCK_BITS;
/** Largest file read: all trees at the largest filter, stored raw. */
const MAX_FILE_BYTES =
  PREAMBLE_BYTES + MAX_HEADER_BYTES + 4 + MAX_TREES * (MAX_SUMMARY_FILTER_BITS / 8) + TRAILER_BYTES;

export interface SummaryTree extends TreeSeeds {
  readonly mBits: number;
  readonly k: number;
  /** Nodes added to the filter (2 · leaves − 1). */
  readonly nodes: number;
  readonly onesBits: number;
  readonly encoding: number;
  readonly storedBytes: number;
}

export interface SummaryHeader {
  readonly v: 1;
  readonly scheme: typeof SETDIFF_SCHEME_ID;
  readonly normalize: NormalizeMode;
  readonly createdAtMs: number;
  /** Distinct elements of A (leaves of each tree). */
  readonly elements: number;
  /** How the geometry was chosen (summary-plan.ts). */
  readonly plan: {
    readonly recallTarget: number;
    readonly bUrls: number;
    readonly pathNodes: number;
    readonly fprTarget: number;
  };
  /** B's visit looks up no internal node above this depth (0: seed 004's visit, every node). */
  readonly skipDepth: number;
  readonly trees: readonly SummaryTree[];
}

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b;
}

/** A filter's stored form: Rice-coded when that is smaller, else the bytes as they are. */
export function encodeFilter(bytes: Uint8Array): { encoding: number; stored: Uint8Array } {
  const rice = encodeRice(bytes);
  return rice === undefined ? { encoding: ENCODING_RAW, stored: bytes } : { encoding: ENCODING_RICE, stored: rice };
}

/** The whole file's bytes; `stored[t]` is tree t's filter as encodeFilter made it. */
export function encodeSummary(hash: XxHash, header: SummaryHeader, stored: readonly Uint8Array[]): Buffer {
  const headerBytes = packr.pack(header);
  const body = Buffer.concat([
    SUMMARY_MAGIC,
    u32(SUMMARY_FORMAT_VERSION),
    u32(headerBytes.length),
    headerBytes,
    u32(hash.checksum(headerBytes)),
    ...stored,
  ]);
  const trailer = Buffer.alloc(TRAILER_BYTES);
  trailer.writeBigUInt64LE(hash.createHash64().update(body).digest(), 0);
  return Buffer.concat([body, trailer]);
}

/** Checks every byte of a summary and returns its header and each tree's filter bytes. */
export function decodeSummary(
  hash: XxHash,
  file: Buffer,
  where: string,
): { header: SummaryHeader; filters: Uint8Array[] } {
  const bad = (problem: string): SeenStoreError => new SeenStoreError('STORE_CORRUPT', `${where}: ${problem}`);
  if (file.length < SUMMARY_MAGIC.length || !file.subarray(0, SUMMARY_MAGIC.length).equals(SUMMARY_MAGIC))
    throw bad('not a seenstore set-difference summary (bad magic)');
  if (file.length < PREAMBLE_BYTES) throw bad('truncated');
  const version = file.readUInt32LE(8);
  if (version !== SUMMARY_FORMAT_VERSION) {
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where} has summary format ${version}; this version reads format ${SUMMARY_FORMAT_VERSION}`,
    );
  }
  const headerLength = file.readUInt32LE(12);
  const bodyStart = PREAMBLE_BYTES + headerLength + 4;
  if (headerLength > MAX_HEADER_BYTES || bodyStart + TRAILER_BYTES > file.length)
    throw bad(`a header of ${headerLength} bytes does not fit a file of ${file.length} bytes (truncated or damaged)`);
  if (
    hash
      .createHash64()
      .update(file.subarray(0, file.length - TRAILER_BYTES))
      .digest() !== file.readBigUInt64LE(file.length - TRAILER_BYTES)
  ) {
    throw bad('whole-file checksum mismatch (truncated or damaged)');
  }
  const headerBytes = file.subarray(PREAMBLE_BYTES, PREAMBLE_BYTES + headerLength);
  if (hash.checksum(headerBytes) !== file.readUInt32LE(PREAMBLE_BYTES + headerLength))
    throw bad('header checksum mismatch');
  const header = checkHeader(unpack(headerBytes, where), where);
  const filters: Uint8Array[] = [];
  let at = bodyStart;
  for (const [t, tree] of header.trees.entries()) {
    const stored = file.subarray(at, at + tree.storedBytes);
    at += tree.storedBytes;
    if (at > file.length - TRAILER_BYTES) throw bad(`tree ${t}'s filter runs past the end of the file`);
    const rawBytes = tree.mBits / 8;
    if (tree.encoding === ENCODING_RAW && stored.length === rawBytes) filters.push(Uint8Array.from(stored));
    else if (tree.encoding === ENCODING_RICE) filters.push(decodeRice(stored, rawBytes, `${where}: tree ${t}`));
    else throw bad(`tree ${t}: unknown encoding ${tree.encoding} or a raw filter of the wrong length`);
  }
  if (at !== file.length - TRAILER_BYTES) throw bad('bytes after the last filter');
  return { header, filters };
}

function unpack(bytes: Buffer, where: string): unknown {
  try {
    return packr.unpack(bytes);
  } catch (error) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: header is not msgpack`, { cause: error });
  }
}

/** The header's fields, each checked: an unknown version or scheme is FORMAT_UNSUPPORTED, a wrong shape STORE_CORRUPT. */
function checkHeader(value: unknown, where: string): SummaryHeader {
  const header = value as Partial<SummaryHeader> | null;
  if (header?.v !== 1)
    throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where}: summary header version ${String(header?.v)} is unknown`);
  if (header.scheme !== SETDIFF_SCHEME_ID)
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where}: hash scheme ${JSON.stringify(header.scheme)} is unknown (this version knows ${SETDIFF_SCHEME_ID})`,
    );
  if (!NORMALIZE_MODES.includes(header.normalize as NormalizeMode))
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where}: normalisation ${JSON.stringify(header.normalize)} is unknown`,
    );
  const bad = (problem: string): SeenStoreError => new SeenStoreError('STORE_CORRUPT', `${where}: ${problem}`);
  if (!Number.isSafeInteger(header.elements) || header.elements! < 0) throw bad('bad element count');
  if (!Number.isInteger(header.skipDepth) || header.skipDepth! < 0 || header.skipDepth! > 64)
    throw bad('bad skip depth');
  if (!Array.isArray(header.trees) || header.trees.length < 1 || header.trees.length > MAX_TREES)
    throw bad('bad tree list');
  for (const [t, tree] of header.trees.entries()) {
    const ok =
      isSeedHex(tree?.universeSeed) &&
      isSeedHex(tree?.leafSeed) &&
      Number.isSafeInteger(tree.mBits) &&
      tree.mBits > 0 &&
      tree.mBits % BLOCK_BITS === 0 &&
      tree.mBits <= MAX_SUMMARY_FILTER_BITS &&
      Number.isInteger(tree.k) &&
      tree.k >= 1 &&
      tree.k <= 32 &&
      Number.isSafeInteger(tree.storedBytes) &&
      tree.storedBytes >= 0;
    if (!ok) throw bad(`tree ${t} has a bad geometry or seeds`);
  }
  return header as SummaryHeader;
}

/** Writes `bytes` to `path` atomically: a temporary file beside it, fsynced, renamed over it. */
export function writeSummaryFile(path: string, bytes: Uint8Array): void {
  const temporary = `${path}.tmp-${process.pid}`;
  let fd: number | undefined;
  try {
    fd = openSync(temporary, 'w');
    writeSync(fd, bytes);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    replaceDurably(temporary, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temporary, { force: true });
    throw asStoreError(error, `writing the summary ${path}`);
  }
}

/** Reads a summary file whole (a regular file of at most the largest summary there can be). */
export async function readSummaryFile(path: string): Promise<Buffer> {
  const handle = await openForReading(path, 'summary file');
  try {
    const stats = await handle.stat();
    if (!stats.isFile())
      throw new SeenStoreError(
        'USAGE',
        `summary ${path} is not a regular file; give the path of a file written by setdiff summarize`,
      );
    if (stats.size > MAX_FILE_BYTES)
      throw new SeenStoreError('STORE_CORRUPT', `summary ${path}: ${stats.size} bytes, more than any summary can take`);
    return await handle.readFile();
  } catch (error) {
    throw asStoreError(error, `reading ${path}`);
  } finally {
    await handle.close();
  }
}
