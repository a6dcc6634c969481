import { SeenStoreError } from '../../errors.js';
import type { StoredFilter } from '../../filters/bloom.js';
import type { XxHash } from '../../hash/xxhash.js';
import { decodeChunk } from '../chunks.js';
import type { EpochHeader } from '../records.js';
import type { StoreEnv } from './env.js';
import { chunkEpochRange, chunkKeyParts } from './keys.js';

/** Where a chunk is, for messages. */
export function chunkWhere(header: EpochHeader, index: number, region: number): string {
  return `chunk ${header.scope}/${header.epoch}/filter ${index}/#${region}`;
}

/**
 * Calls `visit` with each stored chunk of filters `fromIndex`.. of the epoch. Keys, then each value
 * through lmdb's reused buffer (valid until the next read): no 64 KB garbage per chunk (a 131 MB
 * filter would leave 131 MB of it behind, in the RSS until collected).
 */
export function forEachStoredChunk(
  env: StoreEnv,
  header: EpochHeader,
  fromIndex: number,
  visit: (index: number, region: number, value: Uint8Array) => void,
): void {
  const chunks = env.chunksDb;
  for (const key of chunks.getKeys(chunkEpochRange(header.scope, header.epoch, fromIndex))) {
    const { filter: index, chunk: region } = chunkKeyParts(key);
    const value = chunks.getBinaryFast(key);
    if (value === undefined)
      throw new SeenStoreError('STORE_CORRUPT', `${chunkWhere(header, index, region)}: vanished while being read`);
    visit(index, region, value);
  }
}

/** The checked payload of a stored chunk of `filter` (STORE_CORRUPT when the epoch has no such filter or chunk, or it fails its check). */
export function checkedChunkPayload(
  hash: XxHash,
  header: EpochHeader,
  filter: StoredFilter | undefined,
  index: number,
  region: number,
  value: Uint8Array,
  checksum = true,
): Uint8Array {
  const where = chunkWhere(header, index, region);
  if (filter === undefined || !Number.isInteger(region) || region < 0 || region >= filter.regionCount) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: no such filter or chunk in the epoch`);
  }
  return decodeChunk(hash, value, where, filter.region(region).length, checksum);
}
