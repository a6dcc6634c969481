import { closeSync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Packr } from 'msgpackr';
import { SeenStoreError, asStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES } from './chunks.js';
import { readEpochHeader, type EpochHeader } from './records.js';
import { filterGeometries } from '../filters/keying.js';
import { faultPoint } from './faults.js';
import { safePoint } from './interruption.js';
import { removeExportLeftovers } from './leftovers.js';
import { openForReading, replaceDurably } from './file-open.js';
import { ENCODING_GAPS, ENCODING_RAW, ENCODING_RICE, decodeGaps, decodeRice, smallestEncoding } from './gap-codes.js';

/**
 * Export file, formats 1 and 2: one epoch's filters in a portable single file (docs/format.md).
 * Format 2 is written only for an epoch whose slices have a keying (eigen, multilayer): the bytes
 * are laid out alike, but a reader of format 1 would hash every filter's key as the whole URL.
 *
 *   magic "\x89SSEX\r\n\x1a" | u32 format version | u32 header length H | msgpack header | u32 xxh32(header)
 *   blocks: u32 filter | u32 chunk | u8 encoding (0 raw, 1 LEB128 gaps, 2 Rice gaps) | 3 zero bytes
 *           | u32 raw length | u32 stored length | u32 xxh32(stored) | stored bytes
 *           (all-zero chunks are omitted)
 *   end:    u32 0xffffffff | u32 0xffffffff | u32 block count | u32 0
 *   trailer: u64 xxh64 (seed 0) of every byte before it
 */
export const EXPORT_MAGIC = Buffer.from([0x89, 0x53, 0x53, 0x45, 0x58, 0x0d, 0x0a, 0x1a]);
export const EXPORT_FORMAT_VERSION = 2;
/** Written when no slice has a keying, so older versions keep reading such exports. */
const EXPORT_FORMAT_VERSION_PLAIN = 1;
const BLOCK_HEADER_BYTES = 24;
const END_MARK = 0xffffffff;
/** Magic, format version and header length: what is read before anything else. */
const PREAMBLE_BYTES = 16;
/** End mark (16 bytes) and trailer (8 bytes). */
const END_BYTES = 24;
/** An export header is a few KiB (seeds, geometry, sizing); a length past this is not a header. */
const MAX_HEADER_BYTES = 16 * 2 ** 20;
/** Bytes per read of an export file; between reads the reader reaches a safe point. */
const READ_CHUNK_BYTES = 4 * 2 ** 20;
/** Blocks written between the writer's safe points (at most 4 MiB of chunk payload). */
const BLOCKS_PER_SAFE_POINT = 64;

export interface ExportHeader {
  readonly v: 1;
  readonly exportedAtMs: number;
  /** The epoch header as stored (scope, epoch, seeds, slices, sizing, ...). */
  readonly epoch: EpochHeader;
  readonly counts: { readonly submitted: number; readonly added: number; readonly sliceAdded: readonly number[] };
  /** Estimates from the fill at export time. */
  readonly summary: { readonly estimatedDistinct: number; readonly fillRatio: number; readonly estimatedFpr: number };
  /** Present on a file written by `merge --out`: the exports it is the union of. */
  readonly mergedFrom?: readonly {
    readonly scope: string;
    readonly epoch: number;
    readonly exportedAtMs: number;
    readonly estimatedDistinct: number;
  }[];
}

export interface ExportContents {
  readonly header: ExportHeader;
  /** Filter bytes, one array per filter of all slices in order. */
  readonly filters: Uint8Array[];
  readonly stats: { readonly fileBytes: number; readonly rawBytes: number; readonly blocks: number };
}

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b;
}

/**
 * Writes an export file: to a temporary name beside the target, fsynced, then renamed over it and
 * the directory fsynced, so the target is either the old file or the complete new one.
 */
export async function writeExport(
  hash: XxHash,
  path: string,
  header: ExportHeader,
  filters: readonly Uint8Array[],
  signal?: AbortSignal,
): Promise<{ fileBytes: number; rawBytes: number }> {
  const temporary = `${path}.tmp-${process.pid}`;
  removeExportLeftovers(path);
  let fd: number | undefined;
  try {
    fd = openSync(temporary, 'w');
    const digest = hash.createHash64();
    let fileBytes = 0;
    const write = (bytes: Uint8Array): void => {
      writeSync(fd!, bytes);
      digest.update(bytes);
      fileBytes += bytes.length;
    };
    const headerBytes = packr.pack(header);
    write(EXPORT_MAGIC);
    write(
      u32(
        header.epoch.slices.some((slice) => slice.keying !== undefined)
          ? EXPORT_FORMAT_VERSION
          : EXPORT_FORMAT_VERSION_PLAIN,
      ),
    );
    write(u32(headerBytes.length));
    write(headerBytes);
    write(u32(hash.checksum(headerBytes)));
    let blocks = 0;
    let rawBytes = 0;
    for (let filter = 0; filter < filters.length; filter++) {
      const bytes = filters[filter]!;
      rawBytes += bytes.length;
      for (let chunk = 0; chunk * CHUNK_PAYLOAD_BYTES < bytes.length; chunk++) {
        if (chunk % BLOCKS_PER_SAFE_POINT === BLOCKS_PER_SAFE_POINT - 1) {
          faultPoint('export:mid-write');
          await safePoint(signal, `writing the export file ${path}`);
        }
        const raw = bytes.subarray(chunk * CHUNK_PAYLOAD_BYTES, (chunk + 1) * CHUNK_PAYLOAD_BYTES);
        const coded = smallestEncoding(raw);
        if (coded === undefined) continue;
        const { encoding, stored } = coded;
        const block = Buffer.alloc(BLOCK_HEADER_BYTES);
        block.writeUInt32LE(filter, 0);
        block.writeUInt32LE(chunk, 4);
        block.writeUInt8(encoding, 8);
        block.writeUInt32LE(raw.length, 12);
        block.writeUInt32LE(stored.length, 16);
        block.writeUInt32LE(hash.checksum(stored), 20);
        write(block);
        write(stored);
        blocks++;
      }
    }
    write(Buffer.concat([u32(END_MARK), u32(END_MARK), u32(blocks), u32(0)]));
    const trailer = Buffer.alloc(8);
    trailer.writeBigUInt64LE(digest.digest(), 0);
    writeSync(fd, trailer);
    fileBytes += 8;
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    await safePoint(signal, `writing the export file ${path}`);
    replaceDurably(temporary, path);
    return { fileBytes, rawBytes };
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temporary, { force: true });
    throw asStoreError(error, `writing the export file ${path}`);
  }
}

/**
 * Reads and fully checks an export file; any damage is a typed error before anything is used.
 * Only a regular file is read (a device, FIFO or directory is refused without reading), and only
 * after its header: a file larger than the most its header's geometry can take is refused before
 * its body is read, so memory stays bounded by the filters it declares. The body is read in
 * chunks with a safe point between them (`signal`).
 */
export async function readExport(hash: XxHash, path: string, signal?: AbortSignal): Promise<ExportContents> {
  const handle = await openForReading(path, 'export file');
  try {
    return parseExport(hash, path, await readBounded(hash, handle, path, signal));
  } catch (error) {
    throw asStoreError(error, `reading ${path}`);
  } finally {
    await handle.close();
  }
}

async function readBounded(
  hash: XxHash,
  handle: FileHandle,
  path: string,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  const stats = await handle.stat();
  if (!stats.isFile()) {
    const kind = stats.isDirectory()
      ? 'a directory'
      : stats.isFIFO()
        ? 'a FIFO'
        : stats.isCharacterDevice() || stats.isBlockDevice()
          ? 'a device'
          : 'not a regular file';
    throw new SeenStoreError('USAGE', `export file ${path} is ${kind}; give the path of an export file`);
  }
  const size = stats.size;
  const bad = (problem: string): SeenStoreError =>
    new SeenStoreError('STORE_CORRUPT', `export file ${path}: ${problem}`);
  const preamble = Buffer.alloc(Math.min(size, PREAMBLE_BYTES));
  await handle.read(preamble, 0, preamble.length, 0);
  checkPreamble(preamble, path);
  const headerLength = preamble.readUInt32LE(12);
  if (headerLength > MAX_HEADER_BYTES || PREAMBLE_BYTES + headerLength + 4 + END_BYTES > size) {
    throw bad(`a header of ${headerLength} bytes does not fit a file of ${size} bytes (truncated or damaged)`);
  }
  const headerBytes = Buffer.alloc(headerLength + 4);
  await handle.read(headerBytes, 0, headerBytes.length, PREAMBLE_BYTES);
  const maxBytes = maxExportBytes(headerLength, unpackHeader(hash, path, headerBytes).epoch);
  if (size > maxBytes) throw bad(`${size} bytes, more than the ${maxBytes} its header's filters can take`);
  const file = Buffer.alloc(size);
  for (let at = 0; at < size; ) {
    const { bytesRead } = await handle.read(file, at, Math.min(READ_CHUNK_BYTES, size - at), at);
    if (bytesRead === 0) throw bad(`shorter than its ${size} bytes while being read`);
    at += bytesRead;
    faultPoint('export:mid-read');
    await safePoint(signal, `reading the export file ${path}`);
  }
  return file;
}

function checkPreamble(preamble: Buffer, path: string): void {
  if (preamble.length < EXPORT_MAGIC.length + 8 || !preamble.subarray(0, 8).equals(EXPORT_MAGIC)) {
    throw new SeenStoreError('STORE_CORRUPT', `export file ${path}: not a seenstore export file (bad magic)`);
  }
  const version = preamble.readUInt32LE(8);
  if (version !== EXPORT_FORMAT_VERSION && version !== EXPORT_FORMAT_VERSION_PLAIN) {
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `export file ${path} has format ${version}; this version reads formats 1 and ${EXPORT_FORMAT_VERSION}`,
    );
  }
}

/** The header (msgpack, then its u32 checksum), checked and decoded. */
function unpackHeader(hash: XxHash, path: string, bytes: Buffer): ExportHeader {
  const headerBytes = bytes.subarray(0, bytes.length - 4);
  if (hash.checksum(headerBytes) !== bytes.readUInt32LE(bytes.length - 4)) {
    throw new SeenStoreError('STORE_CORRUPT', `export file ${path}: header checksum mismatch`);
  }
  let header: ExportHeader;
  try {
    header = packr.unpack(headerBytes) as ExportHeader;
  } catch (error) {
    throw new SeenStoreError('STORE_CORRUPT', `export file ${path}: header is not msgpack`, { cause: error });
  }
  if (header?.v !== 1)
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `export file ${path}: header version ${String(header?.v)} is unknown`,
    );
  return { ...header, epoch: readEpochHeader(header.epoch) };
}

/**
 * The largest file a writer makes for `epoch`: every chunk of every filter stored raw (the writer
 * keeps a gap coding only when it is smaller) behind its block header.
 */
function maxExportBytes(headerLength: number, epoch: EpochHeader): number {
  let body = 0;
  for (const slice of epoch.slices) {
    for (const geometry of filterGeometries(slice)) {
      const bytes = geometry.mBits / 8;
      body += bytes + Math.ceil(bytes / CHUNK_PAYLOAD_BYTES) * BLOCK_HEADER_BYTES;
    }
  }
  return PREAMBLE_BYTES + headerLength + 4 + body + END_BYTES;
}

/** Checks and decodes the whole file, its bytes in memory. */
function parseExport(hash: XxHash, path: string, file: Buffer): ExportContents {
  const bad = (problem: string): SeenStoreError =>
    new SeenStoreError('STORE_CORRUPT', `export file ${path}: ${problem}`);
  checkPreamble(file, path);
  if (file.length < 8 + 8 + 8) throw bad('truncated');
  const expected = file.readBigUInt64LE(file.length - 8);
  if (
    hash
      .createHash64()
      .update(file.subarray(0, file.length - 8))
      .digest() !== expected
  ) {
    throw bad('whole-file checksum mismatch (truncated or damaged)');
  }
  const headerLength = file.readUInt32LE(12);
  let at = PREAMBLE_BYTES + headerLength;
  if (at + 4 > file.length) throw bad('header checksum mismatch');
  const header = unpackHeader(hash, path, file.subarray(PREAMBLE_BYTES, at + 4));
  at += 4;
  const epoch = header.epoch;
  const filters = epoch.slices.flatMap((slice) => filterGeometries(slice).map((g) => new Uint8Array(g.mBits / 8)));
  let blocks = 0;
  for (;;) {
    if (at + 16 > file.length - 8) throw bad('truncated before the end mark');
    const filter = file.readUInt32LE(at);
    const chunk = file.readUInt32LE(at + 4);
    if (filter === END_MARK && chunk === END_MARK) {
      if (file.readUInt32LE(at + 8) !== blocks) throw bad('block count mismatch');
      at += 16;
      break;
    }
    if (at + BLOCK_HEADER_BYTES > file.length - 8) throw bad('truncated inside a block header');
    const encoding = file.readUInt8(at + 8);
    const rawLength = file.readUInt32LE(at + 12);
    const storedLength = file.readUInt32LE(at + 16);
    const checksum = file.readUInt32LE(at + 20);
    const where = `export file ${path}: block ${blocks} (filter ${filter}, chunk ${chunk})`;
    at += BLOCK_HEADER_BYTES;
    const stored = file.subarray(at, at + storedLength);
    at += storedLength;
    const target = filters[filter];
    const offset = chunk * CHUNK_PAYLOAD_BYTES;
    if (
      target === undefined ||
      stored.length !== storedLength ||
      rawLength !== Math.min(CHUNK_PAYLOAD_BYTES, target.length - offset)
    ) {
      throw new SeenStoreError('STORE_CORRUPT', `${where}: does not fit the epoch's geometry`);
    }
    if (hash.checksum(stored) !== checksum) throw new SeenStoreError('STORE_CORRUPT', `${where}: checksum mismatch`);
    if (encoding === ENCODING_RAW && storedLength === rawLength) target.set(stored, offset);
    else if (encoding === ENCODING_GAPS) target.set(decodeGaps(stored, rawLength, where), offset);
    else if (encoding === ENCODING_RICE) target.set(decodeRice(stored, rawLength, where), offset);
    else throw new SeenStoreError('STORE_CORRUPT', `${where}: unknown encoding ${encoding}`);
    blocks++;
  }
  if (at !== file.length - 8) throw bad('bytes after the end mark');
  return {
    header: { ...header, epoch },
    filters,
    stats: { fileBytes: file.length, rawBytes: filters.reduce((n, f) => n + f.length, 0), blocks },
  };
}
