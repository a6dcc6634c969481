import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import { replaceDurably } from '../file-open.js';
import { faultPoint } from '../faults.js';
import { fdLink } from '../fd-link.js';
import { makeRoom, writeZeros } from './journal-room.js';
import { SyncPacing } from './journal-sync.js';
import {
  FILE_MAGIC,
  FILE_VERSION,
  FRAME_HEADER_BYTES,
  JOURNAL_FILE_HEADER_BYTES,
  buildJournalFile,
  encodeFrame,
  readWord,
  refuseDamage,
  sealFrames,
  type JournalFrame,
} from './journal-frames.js';
import { JournalReader, type FrameRead, type FrameVisitor, type JournalPosition } from './journal-reader.js';

export { JOURNAL_FILE_HEADER_BYTES, journalFileHoldsFrames } from './journal-frames.js';

/** The journal file beside data.mdb (docs/format.md, "Journal file"). */
export const JOURNAL_FILE = 'journal.log';

/** Frames of a batch are staged in a buffer of this size at first (grown for a larger batch). */
const STAGED_BUFFER_BYTES = 1 << 16;

/**
 * The store's write-ahead journal: one file shared by every process and scope (frames:
 * journal-frames.ts). Frames are written holding the store's open guard (the cross-process mutex
 * every LMDB commit also holds), at the end of the frames that their writer has just read up to,
 * into space zero-filled beforehand, so frames never interleave and a sync writes data blocks
 * only; a write is acknowledged once `durable` saw an fdatasync cover it, and one fdatasync covers
 * every frame written before it began, by any process (group commit). Checkpoints fold frames into
 * LMDB and `compact` drops the folded ones by writing a new file and renaming it over this one; a
 * process notices by the path's inode (`generation` grows) and reads the new file from its start.
 */
export class JournalFile {
  readonly path: string;
  readonly #hash: XxHash;
  readonly #readOnly: boolean;
  #fd: number | undefined;
  #ino = -1;
  #version = FILE_VERSION;
  /** The link the file's first frame names. */
  #nonce = 0;
  /** The file's size as this process last saw or made it (another process may have grown it). */
  #size = 0;
  /** Bumped whenever this process opens another file at the path (created, or compacted by anyone). */
  #generation = 0;
  readonly #reader: JournalReader;
  /** Frames of the batch under way, written by writeStaged. */
  #staged = Buffer.allocUnsafe(STAGED_BUFFER_BYTES);
  #stagedBytes = 0;
  /** The furthest offset of the current generation this process wrote or read up to. */
  #knownEnd = 0;
  #syncedGeneration = 0;
  #syncedEnd = 0;
  #syncing: Promise<void> | undefined;
  /** Where the running sync's file ends: a caller past it needs the next sync. */
  #syncingEnd = 0;
  readonly #pacing = new SyncPacing();
  /** Descriptors of replaced files, closed once no fdatasync may still use them. */
  #retired: number[] = [];

  constructor(dir: string, hash: XxHash, readOnly: boolean) {
    this.path = join(dir, JOURNAL_FILE);
    this.#hash = hash;
    this.#readOnly = readOnly;
    this.#reader = new JournalReader(this.path, hash);
  }

  get generation(): number {
    return this.#generation;
  }

  get exists(): boolean {
    return this.#fd !== undefined;
  }

  /** Where the file's frames begin. */
  get start(): JournalPosition {
    return { end: JOURNAL_FILE_HEADER_BYTES, link: this.#nonce };
  }

  /**
   * Opens the file at the path when it is not the one open (created, or replaced by a compaction).
   * While a file is open, its `/proc/self/fd` link says whether it was replaced (unlinked), with
   * no `stat` of the file, which would make the next sync cost more (fdLink).
   */
  refresh(): void {
    if (this.#fd !== undefined && this.#stillAtPath(this.#fd)) return;
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
      this.#readHeader(fd);
      const opened = fstatSync(fd);
      this.#ino = opened.ino;
      this.#size = opened.size;
    } catch (error) {
      closeSync(fd);
      throw asStoreError(error, `opening ${this.path}`);
    }
    if (this.#fd !== undefined) this.#retire(this.#fd);
    this.#fd = fd;
    this.#generation++;
    this.#knownEnd = JOURNAL_FILE_HEADER_BYTES;
  }

  /** False when the open file was unlinked, or when that cannot be told without a stat (no /proc). */
  #stillAtPath(fd: number): boolean {
    const link = fdLink(fd);
    return link !== undefined && !link.endsWith(' (deleted)');
  }

  #readHeader(fd: number): void {
    const header = Buffer.alloc(JOURNAL_FILE_HEADER_BYTES);
    const n = readSync(fd, header, 0, header.length, 0);
    if (n < JOURNAL_FILE_HEADER_BYTES || !header.subarray(0, FILE_MAGIC.length).equals(FILE_MAGIC)) {
      throw new SeenStoreError('STORE_CORRUPT', `${this.path} is not a seenstore journal file (bad header)`);
    }
    const version = header.readUInt32LE(8);
    if (version !== FILE_VERSION && version !== 1) {
      throw new SeenStoreError(
        'FORMAT_UNSUPPORTED',
        `${this.path}: journal file version ${version} is unknown (this seenstore reads 1 and ${FILE_VERSION})`,
      );
    }
    this.#version = version;
    this.#nonce = header.readUInt32LE(12);
  }

  /** Creates the file (header only) when there is none; call holding the open guard. */
  ensureExists(): void {
    this.refresh();
    if (this.#fd === undefined) this.#replaceWith([]);
  }

  /**
   * Rewrites a version-1 file as version 2 with the same frames (a torn tail is dropped). Call
   * holding the open guard, before writing: this seenstore writes version 2 only.
   */
  upgrade(): void {
    if (this.#fd !== undefined && this.#version === 1) this.compact(() => true);
  }

  /**
   * Reads the frames from `from` on; stops at the end of the frames, at bytes that are no frame
   * that follows (`torn`: a frame being written, or one a crash cut short), or where the visitor
   * says so. A frame that fails its checksum where a later frame proves it was synced is damage
   * (STORE_CORRUPT).
   */
  read(from: JournalPosition, visit: FrameVisitor): FrameRead {
    const fd = this.#fd;
    if (fd === undefined) return { end: from.end, link: from.link, torn: false };
    const read = this.#reader.readFrames(fd, this.#version === 1, from, visit);
    if (read.torn && this.#version !== 1) refuseDamage(this.#hash, fd, this.path, read.end, true);
    if (read.end > this.#knownEnd) this.#knownEnd = read.end;
    return read;
  }

  /** Reads from `from` to the end of the frames. */
  readAll(visit: FrameVisitor): FrameRead {
    return this.read(this.start, visit);
  }

  /** STORE_CORRUPT when the bytes at `end`, where a read of the frames stopped torn, prove damage (the whole rest of the file is read). */
  checkTail(end: number): void {
    if (this.#version !== 1) refuseDamage(this.#hash, this.#requireFd(), this.path, end, false);
  }

  /**
   * Makes the bytes at `end`, where a read found no frame that follows, ready for the next frame.
   * Call holding the open guard after reading to `end`: no live process is writing then, so they
   * are a frame whose writer died before it was acknowledged, or the unsynced tail a power cut
   * left. Version 2: unless they prove damage, they are zeroed up to the file's size; version 1:
   * the file is cut back to `end`.
   */
  cutTornTail(end: number): void {
    const fd = this.#requireFd();
    const size = fstatSync(fd).size;
    if (size <= end) return;
    try {
      if (this.#version === 1) {
        ftruncateSync(fd, end);
        return;
      }
      refuseDamage(this.#hash, fd, this.path, end, false, size);
      writeZeros(fd, end, size);
    } catch (error) {
      throw asStoreError(error, `cutting the torn tail of ${this.path}`);
    }
  }

  /**
   * Adds one frame to the staged bytes that `writeStaged` writes: a batch's frames are written
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
    this.#stagedBytes = at + encodeFrame(this.#staged, at, scope, epoch, seq, record);
  }

  get hasStaged(): boolean {
    return this.#stagedBytes > 0;
  }

  /** Forgets the staged frames (a batch that failed). */
  dropStaged(): void {
    this.#stagedBytes = 0;
  }

  /**
   * Writes the staged frames at `at` (the end of the frames, which the caller has just read up
   * to, holding the open guard) in one write, into zero-filled space (the file grows first when
   * it has too little), and returns the position after them. Nothing is synced here: see
   * `durable`.
   */
  writeStaged(at: JournalPosition): JournalPosition {
    const bytes = this.#stagedBytes;
    this.#stagedBytes = 0;
    if (bytes === 0) return at;
    const fd = this.#requireFd();
    if (this.#version === 1)
      throw new SeenStoreError('INTERNAL', `invariant broken: ${this.path} is written before its upgrade`);
    const staged = this.#staged.subarray(0, bytes);
    const syncedEnd = this.#syncedGeneration === this.#generation ? this.#syncedEnd : 0;
    const link = sealFrames(this.#hash, staged, at.link, Math.min(syncedEnd, at.end));
    try {
      if (at.end + bytes > this.#size) this.#size = makeRoom(fd, this.path, at.end, bytes);
      let written = 0;
      while (written < bytes) written += writeSync(fd, staged, written, bytes - written, at.end + written);
    } catch (error) {
      // Leave no frame for the next writer to find.
      try {
        writeZeros(fd, at.end, Math.min(at.end + bytes, this.#size));
      } catch {
        // The next writer zeroes it (cutTornTail).
      }
      throw asStoreError(error, `appending to ${this.path}`);
    }
    this.#knownEnd = at.end + bytes;
    this.#pacing.wrote();
    return { end: at.end + bytes, link };
  }

  /**
   * Resolves once the file is synced up to `end` of generation `generation`. One fdatasync runs
   * at a time; callers that arrive while it runs share the next one. A newer generation was
   * fsynced whole by its compaction (and what it dropped is in durable LMDB pages).
   */
  async durable(generation: number, end: number): Promise<void> {
    // No file yet: nothing was appended.
    while (
      this.#fd !== undefined &&
      generation === this.#generation &&
      !(this.#syncedGeneration === generation && this.#syncedEnd >= end)
    ) {
      if (this.#syncing === undefined) {
        // Cleared once settled, never before the assignment (a sync on this thread may end first).
        this.#syncing = this.#syncOnce().finally(() => {
          this.#syncing = undefined;
          this.#closeRetired();
        });
      } else if (end > this.#syncingEnd) this.#pacing.waited();
      await this.#syncing;
    }
  }

  /** One fdatasync, on this thread or in libuv's pool (journal-sync.ts). */
  async #syncOnce(): Promise<void> {
    const inline = this.#pacing.inline;
    // Batches already waiting to run (events queued behind this one) write their frames first,
    // and share this sync.
    if (inline) await new Promise<void>((resolve) => setImmediate(resolve));
    const fd = this.#requireFd();
    const generation = this.#generation;
    const end = this.#knownEnd;
    this.#syncingEnd = end;
    const covered = this.#pacing.begin();
    const started = performance.now();
    if (inline) {
      try {
        fdatasyncSync(fd);
      } catch (error) {
        throw asStoreError(error, `syncing ${this.path}`);
      }
    } else {
      await new Promise<void>((resolve, reject) =>
        fdatasync(fd, (error) => (error === null ? resolve() : reject(asStoreError(error, `syncing ${this.path}`)))),
      );
    }
    this.#pacing.end(covered, performance.now() - started);
    faultPoint('journal:after-sync', end);
    if (generation > this.#syncedGeneration) {
      this.#syncedGeneration = generation;
      this.#syncedEnd = end;
    } else if (generation === this.#syncedGeneration) {
      this.#syncedEnd = Math.max(this.#syncedEnd, end);
    }
  }

  /**
   * Rewrites the file with only the frames `keep` accepts (a torn tail is dropped too), when any
   * would go or the file is of version 1: a new file of version 2, fsynced, renamed over the old
   * one. Call holding the open guard, with every frame `keep` refuses folded into LMDB pages that
   * are already durable.
   */
  compact(keep: (scope: Buffer, epoch: number, seq: number) => boolean): void {
    this.refresh();
    const fd = this.#fd;
    if (fd === undefined) return;
    const kept: JournalFrame[] = [];
    let dropped = false;
    const { end } = this.readAll((scope, epoch, seq, record) => {
      // Copies: the read buffer is reused for the next stretch of the file.
      if (keep(scope, epoch, seq)) kept.push({ scope: Buffer.from(scope), epoch, seq, record: Buffer.from(record) });
      else dropped = true;
      return true;
    });
    // Bytes after the frames: a torn tail (version 1: up to the file's size; version 2: not zeros).
    const torn = this.#version === 1 ? fstatSync(fd).size > end : readWord(fd, end) !== 0;
    if (dropped || torn || this.#version === 1) this.#replaceWith(kept);
  }

  /** Whether the file has a frame (or bytes where one would begin). */
  holdsFrames(): boolean {
    return this.#fd !== undefined && readWord(this.#fd, JOURNAL_FILE_HEADER_BYTES) !== 0;
  }

  /**
   * Writes a new file of `frames` (version 2, exactly as long as they are: the first writer grows
   * it), fsyncs it, renames it to the path and fsyncs the directory; then opens it. Its frames
   * name the whole file as synced.
   */
  #replaceWith(frames: readonly JournalFrame[]): void {
    const bytes = buildJournalFile(this.#hash, frames);
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
    this.readAll((frameScope, frameEpoch, _seq, record) => {
      if (frameEpoch === epoch && frameScope.equals(scopeBytes)) {
        frames++;
        bytes += FRAME_HEADER_BYTES + frameScope.length + record.length;
      }
      return true;
    });
    return { frames, bytes };
  }

  #requireFd(): number {
    if (this.#fd === undefined)
      throw new SeenStoreError('INTERNAL', `invariant broken: ${this.path} is open before it is written`);
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
