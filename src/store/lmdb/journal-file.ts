import { closeSync, fdatasync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync, rmSync, statSync, writeSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import { replaceDurably } from '../file-open.js';
import { faultPoint } from '../faults.js';

/** The journal file beside data.mdb (docs/format.md, "Journal file"). */
export const JOURNAL_FILE = 'journal.log';

/** File header: the magic, then u32 file version and u32 zero. */
const FILE_MAGIC = Buffer.from('SSJOURNL', 'latin1');
const FILE_VERSION = 1;
export const JOURNAL_FILE_HEADER_BYTES = 16;

/**
 * Frame header (little-endian): u32 frame bytes (header included), u32 xxh32 of the bytes after
 * this word, u32 epoch, u32 seq low, u32 seq high, u16 scope bytes; then the scope (UTF-8) and the
 * journal record (journal.ts).
 */
const FRAME_HEADER_BYTES = 22;
/** Larger than any record the library writes (BATCH_URLS_MAX URLs of 24 filters): a longer length word is damage. */
const FRAME_BYTES_MAX = 2 ** 28;
const READ_BUFFER_BYTES = 1 << 16;

/** Called per complete frame, in file order; returns false to stop before this frame. */
export type FrameVisitor = (scope: Buffer, epoch: number, seq: number, record: Buffer) => boolean;

/** Where a read stopped: `end` is the offset after the last frame taken; `torn` when bytes follow it that are no complete frame. */
export interface FrameRead {
  readonly end: number;
  readonly torn: boolean;
}

/**
 * The store's write-ahead journal: one append-only file shared by every process and scope. An
 * append happens holding the store's open guard (the cross-process mutex every LMDB commit also
 * holds), at the end its appender has just read up to, so frames never interleave; the append is
 * acknowledged once `durable` saw an fdatasync cover it, and one fdatasync covers every frame
 * appended before it began, by any process (group commit). Checkpoints fold frames into LMDB and
 * `compact` drops the folded ones by writing a new file and renaming it over this one; a process
 * notices by the path's inode (`generation` grows) and reads the new file from its start.
 */
export class JournalFile {
  readonly path: string;
  readonly #hash: XxHash;
  readonly #readOnly: boolean;
  #fd: number | undefined;
  #ino = -1;
  /** Bumped whenever this process opens another file at the path (created, or compacted by anyone). */
  #generation = 0;
  #read = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  /** Frames of the batch under way, written by writeStaged. */
  #staged = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  #stagedBytes = 0;
  /** The furthest offset of the current generation this process appended or read up to. */
  #knownEnd = 0;
  #syncedGeneration = 0;
  #syncedEnd = 0;
  #syncing: Promise<void> | undefined;
  /** Descriptors of replaced files, closed once no fdatasync may still use them. */
  #retired: number[] = [];

  constructor(dir: string, hash: XxHash, readOnly: boolean) {
    this.path = join(dir, JOURNAL_FILE);
    this.#hash = hash;
    this.#readOnly = readOnly;
  }

  get generation(): number {
    return this.#generation;
  }

  get exists(): boolean {
    return this.#fd !== undefined;
  }

  /** Opens the file at the path when it is not the one open (created, or replaced by a compaction). One stat. */
  refresh(): void {
    let stats: Stats | undefined;
    try {
      stats = statSync(this.path, { throwIfNoEntry: false });
    } catch (error) {
      throw asStoreError(error, `reading ${this.path}`);
    }
    if (stats === undefined || stats.ino === this.#ino) return;
    let fd: number;
    try {
      fd = openSync(this.path, this.#readOnly ? 'r' : 'r+');
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return;
      throw asStoreError(error, `opening ${this.path}`);
    }
    try {
      this.#checkHeader(fd);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    if (this.#fd !== undefined) this.#retire(this.#fd);
    this.#fd = fd;
    this.#ino = fstatSync(fd).ino;
    this.#generation++;
    this.#knownEnd = JOURNAL_FILE_HEADER_BYTES;
  }

  #checkHeader(fd: number): void {
    const header = Buffer.alloc(JOURNAL_FILE_HEADER_BYTES);
    const n = readSync(fd, header, 0, header.length, 0);
    if (n < JOURNAL_FILE_HEADER_BYTES || !header.subarray(0, FILE_MAGIC.length).equals(FILE_MAGIC)) {
      throw new SeenStoreError('STORE_CORRUPT', `${this.path} is not a seenstore journal file (bad header)`);
    }
    const version = header.readUInt32LE(8);
    if (version !== FILE_VERSION) {
      throw new SeenStoreError('FORMAT_UNSUPPORTED', `${this.path}: journal file version ${version} is unknown (this seenstore writes ${FILE_VERSION})`);
    }
  }

  /** Creates the file (header only) when there is none; call holding the open guard. */
  ensureExists(): void {
    this.refresh();
    if (this.#fd !== undefined) return;
    const header = Buffer.alloc(JOURNAL_FILE_HEADER_BYTES);
    FILE_MAGIC.copy(header, 0);
    header.writeUInt32LE(FILE_VERSION, 8);
    this.#replaceWith(header);
  }

  /**
   * Reads complete frames from `from` on; stops at the end of the file, at bytes that are no
   * complete frame (`torn`: a frame being appended, or one whose appender died), or where the
   * visitor says so.
   */
  read(from: number, visit: FrameVisitor): FrameRead {
    const fd = this.#fd;
    if (fd === undefined) return { end: from, torn: false };
    let position = from;
    for (;;) {
      const n = this.#readAt(fd, position);
      if (n === 0) return this.#reached(position, false);
      let at = 0;
      while (at + FRAME_HEADER_BYTES <= n) {
        const frameBytes = this.#read.readUInt32LE(at);
        if (frameBytes < FRAME_HEADER_BYTES || frameBytes > FRAME_BYTES_MAX) return this.#reached(position + at, true);
        if (at + frameBytes > n) break;
        const frame = this.#read.subarray(at, at + frameBytes);
        // Bytes below the file's size are whole (an append extends it after copying them): a
        // complete frame that fails its checksum is damage, never an append under way.
        const scopeEnd = FRAME_HEADER_BYTES + frame.readUInt16LE(20);
        if (this.#hash.checksum(frame.subarray(8)) !== frame.readUInt32LE(4) || scopeEnd > frameBytes) {
          throw new SeenStoreError('STORE_CORRUPT', `${this.path}: the frame at byte ${position + at} fails its checksum (run \`seenstore verify\`)`);
        }
        const seq = frame.readUInt32LE(12) + frame.readUInt32LE(16) * 2 ** 32;
        if (!visit(frame.subarray(FRAME_HEADER_BYTES, scopeEnd), frame.readUInt32LE(8), seq, frame.subarray(scopeEnd))) return this.#reached(position + at, false);
        at += frameBytes;
      }
      if (at === 0) {
        // Not even one frame in the buffer: a frame longer than it, or the file ends inside one.
        const frameBytes = n >= 4 ? this.#read.readUInt32LE(0) : 0;
        if (n < this.#read.length || frameBytes <= this.#read.length) return this.#reached(position, true);
        this.#read = Buffer.allocUnsafe(frameBytes);
        continue;
      }
      position += at;
    }
  }

  #readAt(fd: number, position: number): number {
    try {
      return readSync(fd, this.#read, 0, this.#read.length, position);
    } catch (error) {
      throw asStoreError(error, `reading ${this.path}`);
    }
  }

  #reached(end: number, torn: boolean): FrameRead {
    if (end > this.#knownEnd) this.#knownEnd = end;
    return { end, torn };
  }

  /**
   * Cuts the file back to `end`, where a read found bytes that are no complete frame. Call holding
   * the open guard after reading to `end`: no live process is appending then, so the bytes are a
   * frame whose appender died before it was acknowledged, or the unsynced tail a power cut left
   * (zeros, or a frame cut short).
   */
  cutTornTail(end: number): void {
    const fd = this.#requireFd();
    if (fstatSync(fd).size <= end) return;
    try {
      ftruncateSync(fd, end);
    } catch (error) {
      throw asStoreError(error, `cutting the torn tail of ${this.path}`);
    }
  }

  /**
   * Adds one frame to the staged bytes that `writeStaged` appends: a batch's frames are written
   * only once nothing of the batch can fail any more (its LMDB commit included).
   */
  stage(scope: Buffer, epoch: number, seq: number, record: Uint8Array): void {
    const frameBytes = FRAME_HEADER_BYTES + scope.length + record.length;
    const at = this.#stagedBytes;
    if (this.#staged.length < at + frameBytes) {
      const grown = Buffer.allocUnsafe(Math.max(at + frameBytes, 2 * this.#staged.length));
      this.#staged.copy(grown, 0, 0, at);
      this.#staged = grown;
    }
    const frame = this.#staged.subarray(at, at + frameBytes);
    frame.writeUInt32LE(frameBytes, 0);
    frame.writeUInt32LE(epoch, 8);
    frame.writeUInt32LE(seq % 2 ** 32, 12);
    frame.writeUInt32LE(Math.floor(seq / 2 ** 32), 16);
    frame.writeUInt16LE(scope.length, 20);
    scope.copy(frame, FRAME_HEADER_BYTES);
    frame.set(record, FRAME_HEADER_BYTES + scope.length);
    frame.writeUInt32LE(this.#hash.checksum(frame.subarray(8)), 4);
    this.#stagedBytes = at + frameBytes;
  }

  get hasStaged(): boolean {
    return this.#stagedBytes > 0;
  }

  /** Forgets the staged frames (a batch that failed). */
  dropStaged(): void {
    this.#stagedBytes = 0;
  }

  /**
   * Appends the staged frames at `end` (the offset the caller has just read up to, holding the
   * open guard) in one write, and returns the offset after them. Nothing is synced here: see
   * `durable`.
   */
  writeStaged(end: number): number {
    const bytes = this.#stagedBytes;
    this.#stagedBytes = 0;
    if (bytes === 0) return end;
    const fd = this.#requireFd();
    try {
      let written = 0;
      while (written < bytes) written += writeSync(fd, this.#staged, written, bytes - written, end + written);
    } catch (error) {
      // Leave no partial frame for the next appender to find.
      try {
        ftruncateSync(fd, end);
      } catch {
        // The next appender cuts it (cutTornTail).
      }
      throw asStoreError(error, `appending to ${this.path}`);
    }
    this.#knownEnd = end + bytes;
    return end + bytes;
  }

  /**
   * Resolves once the file is synced up to `end` of generation `generation`. One fdatasync runs
   * at a time; callers that arrive while it runs share the next one. A newer generation was
   * fsynced whole by its compaction (and what it dropped is in durable LMDB pages).
   */
  async durable(generation: number, end: number): Promise<void> {
    // No file yet: nothing was appended.
    while (this.#fd !== undefined && generation === this.#generation && !(this.#syncedGeneration === generation && this.#syncedEnd >= end)) {
      if (this.#syncing === undefined) this.#syncing = this.#syncOnce();
      await this.#syncing;
    }
  }

  async #syncOnce(): Promise<void> {
    const fd = this.#requireFd();
    const generation = this.#generation;
    const end = this.#knownEnd;
    try {
      await new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error === null ? resolve() : reject(asStoreError(error, `syncing ${this.path}`)))));
      faultPoint('journal:after-sync', end);
      if (generation > this.#syncedGeneration) {
        this.#syncedGeneration = generation;
        this.#syncedEnd = end;
      } else if (generation === this.#syncedGeneration) {
        this.#syncedEnd = Math.max(this.#syncedEnd, end);
      }
    } finally {
      this.#syncing = undefined;
      this.#closeRetired();
    }
  }

  /**
   * Rewrites the file with only the frames `keep` accepts (a torn tail is dropped too), when any
   * would go: a new file, fsynced, renamed over the old one. Call holding the open guard, with
   * every frame `keep` refuses folded into LMDB pages that are already durable.
   */
  compact(keep: (scope: Buffer, epoch: number, seq: number) => boolean): { readonly keptBytes: number; readonly droppedBytes: number } {
    this.refresh();
    if (this.#fd === undefined) return { keptBytes: 0, droppedBytes: 0 };
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let droppedBytes = 0;
    const { end } = this.read(JOURNAL_FILE_HEADER_BYTES, (scope, epoch, seq, record) => {
      const frameBytes = FRAME_HEADER_BYTES + scope.length + record.length;
      if (keep(scope, epoch, seq)) {
        // A copy: the read buffer is reused for the next stretch of the file.
        kept.push(Buffer.from(Buffer.from(scope.buffer, scope.byteOffset - FRAME_HEADER_BYTES, frameBytes)));
        keptBytes += frameBytes;
      } else droppedBytes += frameBytes;
      return true;
    });
    const size = fstatSync(this.#fd).size;
    droppedBytes += size - end;
    if (droppedBytes === 0) return { keptBytes, droppedBytes };
    const header = Buffer.alloc(JOURNAL_FILE_HEADER_BYTES);
    readSync(this.#fd, header, 0, header.length, 0);
    this.#replaceWith(Buffer.concat([header, ...kept]));
    return { keptBytes, droppedBytes };
  }

  /** Writes `bytes` to a new file, fsyncs it, renames it to the path and fsyncs the directory; then opens it. */
  #replaceWith(bytes: Buffer): void {
    const temporary = `${this.path}.new-${process.pid}`;
    try {
      const fd = openSync(temporary, 'w');
      try {
        writeSync(fd, bytes, 0, bytes.length, 0);
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
      replaceDurably(temporary, this.path);
    } catch (error) {
      rmSync(temporary, { force: true });
      throw asStoreError(error, `writing ${this.path}`);
    }
    this.refresh();
    this.#syncedGeneration = this.#generation;
    this.#syncedEnd = bytes.length;
  }

  /** The frames of one epoch in the file, and their bytes (a torn tail is not counted). */
  epochFrames(scope: string, epoch: number): { readonly frames: number; readonly bytes: number } {
    this.refresh();
    const scopeBytes = Buffer.from(scope, 'utf8');
    let frames = 0;
    let bytes = 0;
    this.read(JOURNAL_FILE_HEADER_BYTES, (frameScope, frameEpoch, _seq, record) => {
      if (frameEpoch === epoch && frameScope.equals(scopeBytes)) {
        frames++;
        bytes += FRAME_HEADER_BYTES + frameScope.length + record.length;
      }
      return true;
    });
    return { frames, bytes };
  }

  /** The size of the file now (0 when there is none). */
  size(): number {
    return this.#fd === undefined ? 0 : fstatSync(this.#fd).size;
  }

  #requireFd(): number {
    if (this.#fd === undefined) throw new SeenStoreError('INTERNAL', `invariant broken: ${this.path} is open before it is written`);
    return this.#fd;
  }

  #retire(fd: number): void {
    this.#retired.push(fd);
    if (this.#syncing === undefined) this.#closeRetired();
  }

  #closeRetired(): void {
    for (const fd of this.#retired) closeSync(fd);
    this.#retired = [];
  }

  async close(): Promise<void> {
    await this.#syncing?.catch(() => undefined);
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
    this.#closeRetired();
  }
}
