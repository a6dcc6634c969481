import { CHUNK_HEADER_BYTES, CHUNK_PAYLOAD_BYTES } from '../chunks.js';
import type { StoreEnv } from './env.js';
import type { JournalFile } from './journal-file.js';
import { chunkEpochRange, chunkKeyParts, journalEpochRange } from './keys.js';
import type { EpochHeader } from '../records.js';
import { filterGeometries } from '../../filters/keying.js';

export interface EpochUsage {
  /** LMDB page bytes held by the epoch's chunks and journal records, plus its frames in the journal file. */
  readonly bytesOnDisk: number;
  readonly chunks: number;
  readonly journalRecords: number;
}

/** LMDB page bytes taken by a value of `bytes` (overflow pages carry a 24-byte header). */
function pageBytes(bytes: number): number {
  return Math.ceil((bytes + 24) / 4096) * 4096;
}

/** What an epoch occupies in the store, from its keys and the header's geometry (no filter is loaded). */
export function epochUsage(env: StoreEnv, journal: JournalFile, header: EpochHeader): EpochUsage {
  const { scope, epoch } = header;
  const filterBytes: number[] = header.slices.flatMap((slice) => filterGeometries(slice).map((g) => g.mBits / 8));
  let bytesOnDisk = 0;
  let chunks = 0;
  for (const key of env.chunksDb.getKeys(chunkEpochRange(scope, epoch))) {
    const { filter: index, chunk: region } = chunkKeyParts(key);
    const payload = Math.min(CHUNK_PAYLOAD_BYTES, (filterBytes[index] ?? 0) - region * CHUNK_PAYLOAD_BYTES);
    bytesOnDisk += pageBytes(payload + CHUNK_HEADER_BYTES);
    chunks++;
  }
  let journalRecords = 0;
  for (const { value } of env.journalDb.getRange(journalEpochRange(scope, epoch))) {
    bytesOnDisk += pageBytes(value.length);
    journalRecords++;
  }
  const inFile = journal.epochFrames(scope, epoch);
  return { bytesOnDisk: bytesOnDisk + inFile.bytes, chunks, journalRecords: journalRecords + inFile.frames };
}
