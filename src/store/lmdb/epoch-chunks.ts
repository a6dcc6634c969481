import type { StoredFilter } from '../../filters/bloom.js';
import type { XxHash } from '../../hash/xxhash.js';
import { decodeChunk, encodeChunk } from '../chunks.js';
import type { EpochHeader } from '../records.js';
import { checkedChunkPayload, chunkWhere, forEachStoredChunk } from './chunk-reads.js';
import type { StoreEnv } from './env.js';
import { chunkKey } from './keys.js';

/**
 * One epoch's stored chunks in LMDB, as its working copy (EpochCopy) reads and writes them: every
 * payload checked against its filter and checksum, and the bytes read counted (for
 * StoreEnv.releaseMappedPages).
 */
export class EpochChunks {
  readonly #env: StoreEnv;
  readonly #hash: XxHash;
  /** The epoch's header as the copy knows it now (slices are added as it grows). */
  readonly #header: () => EpochHeader;
  readonly #filterAt: (index: number) => StoredFilter | undefined;
  #bytesRead = 0;

  constructor(
    env: StoreEnv,
    hash: XxHash,
    header: () => EpochHeader,
    filterAt: (index: number) => StoredFilter | undefined,
  ) {
    this.#env = env;
    this.#hash = hash;
    this.#header = header;
    this.#filterAt = filterAt;
  }

  /** Bytes of stored chunks read since the last call; resets. */
  takeBytesRead(): number {
    const bytes = this.#bytesRead;
    this.#bytesRead = 0;
    return bytes;
  }

  /** Writes chunk `region` of filter `index` (inside a write transaction). */
  put(index: number, region: number, bytes: Uint8Array): void {
    const { scope, epoch } = this.#header();
    this.#env.chunksDb.putSync(chunkKey(scope, epoch, index, region), encodeChunk(this.#hash, bytes));
  }

  /** The stored payload of chunk `region` of filter `index` as a copy of its own, or undefined when none is stored. */
  copy(index: number, region: number, payloadBytes: number): Uint8Array | undefined {
    const header = this.#header();
    const stored = this.#env.chunksDb.getBinary(chunkKey(header.scope, header.epoch, index, region));
    return stored === undefined
      ? undefined
      : decodeChunk(this.#hash, stored, chunkWhere(header, index, region), payloadBytes);
  }

  /**
   * The checked payload of stored chunk `region` of filter `index`, or undefined when none is
   * stored; read through lmdb's reused buffer (no copy kept): valid until the next read.
   */
  payload(index: number, region: number, checksum = true): Uint8Array | undefined {
    const { scope, epoch } = this.#header();
    const value = this.#env.chunksDb.getBinaryFast(chunkKey(scope, epoch, index, region));
    return value === undefined ? undefined : this.#checked(index, region, value, checksum);
  }

  /** Calls `visit` with the checked payload of each stored chunk of filters `fromIndex`.. (valid until the next read). */
  forEach(fromIndex: number, visit: (index: number, region: number, payload: Uint8Array) => void): void {
    forEachStoredChunk(this.#env, this.#header(), fromIndex, (index, region, value) =>
      visit(index, region, this.#checked(index, region, value)),
    );
  }

  #checked(index: number, region: number, value: Uint8Array, checksum = true): Uint8Array {
    this.#bytesRead += value.length;
    return checkedChunkPayload(this.#hash, this.#header(), this.#filterAt(index), index, region, value, checksum);
  }
}
