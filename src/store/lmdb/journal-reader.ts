import { fstatSync, readSync } from 'node:fs';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import { FRAME_BYTES_MAX, FRAME_HEADER_BYTES, V1_FRAME_HEADER_BYTES, frameSeq } from './journal-frames.js';

const READ_BUFFER_BYTES = 1 << 16;
const FIRST_READ_BYTES = 4096;

/** Called per complete frame, in file order; returns false to stop before this frame. */
export type FrameVisitor = (scope: Buffer, epoch: number, seq: number, record: Buffer) => boolean;

/** A place in the file: an offset where a frame may begin, and the link that frame must name. */
export interface JournalPosition {
  readonly end: number;
  readonly link: number;
}

/** Where a read stopped (after the last frame taken); `torn` when bytes there are no frame that follows (yet). */
export interface FrameRead extends JournalPosition {
  readonly torn: boolean;
}

/**
 * The reader of a journal file's frames (journal-file.ts), through one buffer it reuses and grows
 * for a frame longer than it: each frame checked for its length, its link to the frame before
 * (version 2) and its checksum before the visitor sees it.
 */
export class JournalReader {
  readonly #path: string;
  readonly #hash: XxHash;
  #read = Buffer.allocUnsafe(READ_BUFFER_BYTES);

  constructor(path: string, hash: XxHash) {
    this.#path = path;
    this.#hash = hash;
  }

  /**
   * The frames from `from` on. Version 1 has no link and ends where the file does: bytes below
   * its size are whole (an append extends it after copying them), so a frame failing its checksum
   * there is damage, never an append under way.
   */
  readFrames(fd: number, v1: boolean, from: JournalPosition, visit: FrameVisitor): FrameRead {
    const headerBytes = v1 ? V1_FRAME_HEADER_BYTES : FRAME_HEADER_BYTES;
    let position = from.end;
    let link = from.link;
    // A catch-up mostly finds no frame, where version 2 has zeros to the end of the file: the
    // first read is of one page.
    let wanted = v1 ? this.#read.length : FIRST_READ_BYTES;
    for (;;) {
      const n = this.#readAt(fd, position, wanted);
      if (n === 0) return { end: position, link, torn: false };
      let at = 0;
      while (at + 4 <= n) {
        const frameBytes = this.#read.readUInt32LE(at);
        if (frameBytes === 0 && !v1) return { end: position + at, link, torn: false };
        if (frameBytes < headerBytes || frameBytes > FRAME_BYTES_MAX) return { end: position + at, link, torn: true };
        if (at + frameBytes > n) break;
        const frame = this.#read.subarray(at, at + frameBytes);
        const scopeEnd = headerBytes + frame.readUInt16LE(headerBytes - 2);
        const checksum = frame.readUInt32LE(4);
        if (
          (!v1 && frame.readUInt32LE(8) !== link) ||
          scopeEnd > frameBytes ||
          this.#hash.checksum(frame.subarray(8)) !== checksum
        ) {
          if (v1)
            throw new SeenStoreError(
              'STORE_CORRUPT',
              `${this.#path}: the frame at byte ${position + at} fails its checksum (run \`seenstore verify\`)`,
            );
          return { end: position + at, link, torn: true };
        }
        const epoch = frame.readUInt32LE(v1 ? 8 : 12);
        if (
          !visit(frame.subarray(headerBytes, scopeEnd), epoch, frameSeq(frame, v1 ? 12 : 16), frame.subarray(scopeEnd))
        )
          return { end: position + at, link, torn: false };
        if (!v1) link = checksum;
        at += frameBytes;
      }
      if (at === 0) {
        // Not even one frame in what was read: a frame longer than it, or the file ends inside one.
        const frameBytes = n >= 4 ? this.#read.readUInt32LE(0) : 0;
        if (n < wanted || frameBytes <= wanted) return { end: position, link, torn: true };
        // A length the file cannot hold (a damaged word, or a frame still being written) is the
        // same torn end as a read that ends inside the frame, found without a buffer of its size.
        if (position + frameBytes > this.#fileBytes(fd)) return { end: position, link, torn: true };
        if (frameBytes > this.#read.length) this.#read = Buffer.allocUnsafe(frameBytes);
        wanted = this.#read.length;
        continue;
      }
      position += at;
      wanted = this.#read.length;
    }
  }

  #fileBytes(fd: number): number {
    try {
      return fstatSync(fd).size;
    } catch (error) {
      throw asStoreError(error, `reading ${this.#path}`);
    }
  }

  #readAt(fd: number, position: number, bytes: number): number {
    try {
      return readSync(fd, this.#read, 0, bytes, position);
    } catch (error) {
      throw asStoreError(error, `reading ${this.#path}`);
    }
  }
}
