import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { UndeliveredBatch } from '../backend.js';

/** Where a directory store keeps its undelivered batches: one file per owner (docs/format.md, "Delivery files"). */
export const DELIVERY_DIR = 'delivery';

const FILE_MAGIC = Buffer.from('SSDELIV1', 'latin1');
const FRAME_HEADER_BYTES = 12;
const KIND_BATCH = 1;
const KIND_DELIVERED = 2;
/** Larger than any frame seenstore writes (a batch of 65,536 URLs of 64 KiB): a longer one is not a frame. */
const FRAME_BYTES_MAX = 2 ** 33;

/**
 * One file's name: `SCOPE~OWNER~N.log`, N telling apart the files of one owner (its own, and the
 * ones it claimed from runs that are gone). Scope names and owners hold no `~`.
 */
export function deliveryFileName(scope: string, owner: string, n: number): string {
  return `${scope}~${owner}~${n}.log`;
}

export interface DeliveryFileName {
  readonly name: string;
  readonly scope: string;
  readonly owner: string;
}

/** The delivery files of a store (undefined scope: of every scope). */
export function listDeliveryFiles(storeDir: string, scope?: string): DeliveryFileName[] {
  let names: string[];
  try {
    names = readdirSync(join(storeDir, DELIVERY_DIR));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw asStoreError(error, `listing ${join(storeDir, DELIVERY_DIR)}`);
  }
  const files: DeliveryFileName[] = [];
  for (const name of names.sort()) {
    const match = /^([^~]+)~([^~]+)~\d+\.log$/.exec(name);
    if (match !== null && (scope === undefined || match[1] === scope))
      files.push({ name, scope: match[1]!, owner: match[2]! });
  }
  return files;
}

/**
 * The batches a delivery file still holds: its batch frames not named by a later delivered frame,
 * in file order. A file is written by its owner only, with plain writes that a killed process
 * never half-finishes before the add that recorded the batch appends its journal frame; a frame
 * cut short (a power cut: the file is never synced) ends the file. `seqs` of the batches.
 */
export function readDeliveryFile(path: string): {
  readonly batches: { seq: number; lines: Uint8Array }[];
  readonly cut: boolean;
} {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { batches: [], cut: false };
    throw asStoreError(error, `reading ${path}`);
  }
  if (bytes.length < FILE_MAGIC.length || !bytes.subarray(0, FILE_MAGIC.length).equals(FILE_MAGIC)) {
    // A file whose creator died before its header reached it holds nothing.
    if (bytes.every((byte) => byte === 0) || FILE_MAGIC.subarray(0, bytes.length).equals(bytes))
      return { batches: [], cut: bytes.length > 0 };
    throw new SeenStoreError('STORE_CORRUPT', `${path} is not a seenstore delivery file (bad header)`);
  }
  const batches = new Map<number, Uint8Array>();
  let at = FILE_MAGIC.length;
  let cut = false;
  while (at < bytes.length) {
    if (at + FRAME_HEADER_BYTES > bytes.length) {
      cut = true;
      break;
    }
    const length = bytes.readUInt32LE(at) + 2 ** 32 * bytes.readUInt8(at + 4);
    const kind = bytes.readUInt8(at + 5);
    const seq = bytes.readUInt32LE(at + 6);
    const end = at + FRAME_HEADER_BYTES + length;
    if (length > FRAME_BYTES_MAX || end > bytes.length || (kind !== KIND_BATCH && kind !== KIND_DELIVERED)) {
      cut = true;
      break;
    }
    const body = bytes.subarray(at + FRAME_HEADER_BYTES, end);
    if (kind === KIND_BATCH) {
      if (body.length > 0 && (body[body.length - 1] !== 0x0a || !isUtf8(body))) {
        cut = true;
        break;
      }
      batches.set(seq, body);
    } else {
      if (body.length % 4 !== 0) {
        cut = true;
        break;
      }
      for (let i = 0; i < body.length; i += 4) batches.delete(body.readUInt32LE(i));
    }
    at = end;
  }
  return { batches: [...batches].map(([seq, lines]) => ({ seq, lines })), cut };
}

/**
 * A delivery file this process owns and writes: batches appended, delivered ones named, the file
 * removed once it holds none. Writes are plain (not synced): they reach the kernel before the
 * add's journal frame does, which is what a killed process needs; see docs/reliability.md.
 */
export class DeliveryFile {
  readonly path: string;
  #fd: number | undefined;
  /** Seqs of the batches it holds. */
  readonly #live = new Set<number>();

  constructor(path: string) {
    this.path = path;
  }

  get empty(): boolean {
    return this.#live.size === 0;
  }

  /** Appends a batch (and first the delivered batches it names). */
  append(delivered: readonly number[], batch: { readonly seq: number; readonly lines: Uint8Array } | undefined): void {
    const parts: Buffer[] = [];
    const gone = delivered.filter((seq) => this.#live.has(seq));
    if (gone.length > 0) {
      const body = Buffer.allocUnsafe(4 * gone.length);
      gone.forEach((seq, i) => body.writeUInt32LE(seq, 4 * i));
      parts.push(frameHeader(KIND_DELIVERED, 0, body.length), body);
    }
    if (batch !== undefined && batch.lines.length > 0)
      parts.push(
        frameHeader(KIND_BATCH, batch.seq, batch.lines.length),
        Buffer.from(batch.lines.buffer, batch.lines.byteOffset, batch.lines.length),
      );
    if (parts.length === 0) return;
    this.#write(parts);
    for (const seq of gone) this.#live.delete(seq);
    if (batch !== undefined && batch.lines.length > 0) this.#live.add(batch.seq);
  }

  /** Removes the file when it holds no batch; closes it. */
  closeIfEmpty(): boolean {
    if (!this.empty) return false;
    this.close();
    rmSync(this.path, { force: true });
    return true;
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #write(parts: readonly Buffer[]): void {
    try {
      if (this.#fd === undefined) {
        mkdirSync(join(this.path, '..'), { recursive: true });
        this.#fd = openSync(this.path, 'a');
        if (fstatSync(this.#fd).size === 0) writeSync(this.#fd, FILE_MAGIC);
      }
      for (const part of parts) {
        for (let written = 0; written < part.length; ) written += writeSync(this.#fd, part, written);
      }
    } catch (error) {
      throw asStoreError(error, `writing ${this.path}`);
    }
  }
}

/** Moves a gone run's file to a name of its claimer's; false when another run took it first. */
export function claimDeliveryFile(storeDir: string, from: string, to: string): boolean {
  try {
    renameSync(join(storeDir, DELIVERY_DIR, from), join(storeDir, DELIVERY_DIR, to));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw asStoreError(error, `claiming ${join(storeDir, DELIVERY_DIR, from)}`);
  }
}

function frameHeader(kind: number, seq: number, bytes: number): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32LE(bytes % 2 ** 32, 0);
  header.writeUInt8(Math.floor(bytes / 2 ** 32), 4);
  header.writeUInt8(kind, 5);
  header.writeUInt32LE(seq, 6);
  header.writeUInt16LE(0, 10);
  return header;
}

export type { UndeliveredBatch };
