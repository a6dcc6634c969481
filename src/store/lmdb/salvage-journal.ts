import { readFileSync } from 'node:fs';
import type { XxHash } from '../../hash/xxhash.js';
import {
  FILE_MAGIC,
  FRAME_BYTES_MAX,
  FRAME_HEADER_BYTES,
  JOURNAL_FILE_HEADER_BYTES,
  V1_FRAME_HEADER_BYTES,
  frameSeq,
  type JournalFrame,
} from './journal-frames.js';

export interface SalvagedJournal {
  readonly frames: JournalFrame[];
  /** Byte ranges of the file that held damaged frames, stepped over (a torn tail is not among them: it was never acknowledged). */
  readonly skipped: { readonly from: number; readonly to: number; readonly problem: string }[];
}

/**
 * The readable frames of a journal file (docs/format.md, "The journal file"), for salvage. A read
 * for replay stops at the first frame that does not follow; salvage steps over damage instead: from
 * where the chain broke it looks for the next frame that passes its checksum and was written after
 * the broken bytes had been synced (its synced end lies past them, as `provesDamage` asks), and
 * goes on from there. A torn or stale frame never qualifies, so a torn tail stays a torn tail.
 */
export function salvageJournal(hash: XxHash, path: string): SalvagedJournal {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return { frames: [], skipped: [] };
    throw error;
  }
  if (bytes.length < JOURNAL_FILE_HEADER_BYTES || !bytes.subarray(0, FILE_MAGIC.length).equals(FILE_MAGIC)) {
    return {
      frames: [],
      skipped: [{ from: 0, to: bytes.length, problem: 'not a seenstore journal file (bad header)' }],
    };
  }
  const version = bytes.readUInt32LE(8);
  if (version === 1) return salvageV1(hash, bytes);
  if (version !== 2)
    return {
      frames: [],
      skipped: [{ from: 0, to: bytes.length, problem: `journal file version ${version} is unknown` }],
    };
  const frames: JournalFrame[] = [];
  const skipped: SalvagedJournal['skipped'] = [];
  let at = JOURNAL_FILE_HEADER_BYTES;
  let link = bytes.readUInt32LE(12);
  while (at + 4 <= bytes.length) {
    const frameBytes = bytes.readUInt32LE(at);
    if (frameBytes === 0) break;
    const checksum = frameChecksum(hash, bytes, at);
    if (checksum !== undefined && bytes.readUInt32LE(at + 8) === link) {
      frames.push(frameAt(bytes, at, FRAME_HEADER_BYTES, 12, 16));
      link = checksum;
      at += frameBytes;
      continue;
    }
    const next = nextSyncedFrame(hash, bytes, at);
    if (next === undefined) break;
    skipped.push({
      from: at,
      to: next,
      problem: `bytes ${at}..${next} hold damaged frames (the frame at byte ${next} was written after they were synced)`,
    });
    at = next;
    link = bytes.readUInt32LE(at + 8);
  }
  return { frames, skipped };
}

/** The checksum of a whole, sound version-2 frame at `at`, or undefined. */
function frameChecksum(hash: XxHash, bytes: Buffer, at: number): number | undefined {
  if (at + FRAME_HEADER_BYTES > bytes.length) return undefined;
  const frameBytes = bytes.readUInt32LE(at);
  if (frameBytes < FRAME_HEADER_BYTES || frameBytes > FRAME_BYTES_MAX || at + frameBytes > bytes.length)
    return undefined;
  if (FRAME_HEADER_BYTES + bytes.readUInt16LE(at + 30) > frameBytes) return undefined;
  const checksum = bytes.readUInt32LE(at + 4);
  return hash.checksum(bytes.subarray(at + 8, at + frameBytes)) === checksum ? checksum : undefined;
}

/** The first sound frame after `end` whose synced end lies past `end` (and inside the file). */
function nextSyncedFrame(hash: XxHash, bytes: Buffer, end: number): number | undefined {
  for (let q = end + 1; q + FRAME_HEADER_BYTES <= bytes.length; q++) {
    const synced = bytes.readUInt32LE(q + 24) + bytes.readUInt16LE(q + 28) * 2 ** 32;
    if (synced > end && synced <= bytes.length && frameChecksum(hash, bytes, q) !== undefined) return q;
  }
  return undefined;
}

function frameAt(bytes: Buffer, at: number, headerBytes: number, epochAt: number, seqAt: number): JournalFrame {
  const frame = bytes.subarray(at, at + bytes.readUInt32LE(at));
  const scopeEnd = headerBytes + frame.readUInt16LE(headerBytes - 2);
  return {
    scope: frame.subarray(headerBytes, scopeEnd),
    epoch: frame.readUInt32LE(epochAt),
    seq: frameSeq(frame, seqAt),
    record: frame.subarray(scopeEnd),
  };
}

/** Version 1: frames appended back to back up to the file's size, no links; the first that fails ends them. */
function salvageV1(hash: XxHash, bytes: Buffer): SalvagedJournal {
  const frames: JournalFrame[] = [];
  let at = JOURNAL_FILE_HEADER_BYTES;
  while (at + V1_FRAME_HEADER_BYTES <= bytes.length) {
    const frameBytes = bytes.readUInt32LE(at);
    // A frame the file's end cuts is the torn tail a crash leaves (never acknowledged), not damage.
    if (frameBytes >= V1_FRAME_HEADER_BYTES && at + frameBytes > bytes.length) break;
    const sound =
      frameBytes >= V1_FRAME_HEADER_BYTES &&
      at + frameBytes <= bytes.length &&
      V1_FRAME_HEADER_BYTES + bytes.readUInt16LE(at + 20) <= frameBytes &&
      hash.checksum(bytes.subarray(at + 8, at + frameBytes)) === bytes.readUInt32LE(at + 4);
    if (!sound)
      return {
        frames,
        skipped: [
          {
            from: at,
            to: bytes.length,
            problem: `the frame at byte ${at} fails its checksum; the frames after it cannot be told apart`,
          },
        ],
      };
    frames.push(frameAt(bytes, at, V1_FRAME_HEADER_BYTES, 8, 12));
    at += frameBytes;
  }
  return { frames, skipped: [] };
}
