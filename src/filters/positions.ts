import { BLOCK_BITS, Modulus, blockedPositions, classicPositions, type HashSchemeId } from '../hash/scheme.js';
import type { FilterGeometry } from './bloom.js';
import { filterGeometries, type SliceGeometry } from './keying.js';

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** In a counting slice's positions, the places of positions dropped as repeats (CountingFilter keeps each cell once). */
export const NO_POSITION = 0xffffffff;

/**
 * Bit positions of every filter of an epoch's slices, computed from the epoch hasher's words
 * (filters/epoch-hasher.ts) by the reference arithmetic of each layout (hash/scheme.ts
 * classicPositions / blockedPositions): for a store that tests and sets bits elsewhere (the Redis
 * backend's functions), so that no other code ever maps a hash to a bit.
 *
 * Output, per key, URL-major: for every filter of every slice in filter order, its k positions.
 */
export class PositionPlan {
  /**
   * Per filter: its slice, geometry, and what the position arithmetic needs. A counting slice's
   * filters (counting-v1) have one position per counter: the classic arithmetic over their cells,
   * a repeated cell dropped (written as NO_POSITION), as CountingFilter does.
   */
  readonly filters: readonly {
    readonly slice: number;
    readonly geometry: FilterGeometry;
    readonly modulus: Modulus;
    readonly counters: boolean;
    /** Partitioned epochs: bits per partition of the filter (positions are written within it); else 0. */
    readonly partitionBits: number;
  }[];
  /** Positions per key over every filter. */
  readonly perKey: number;
  readonly #scheme: HashSchemeId;
  readonly #scratch: Float64Array;

  /** `partitions`: a partitioned epoch's P (positions are then each partition's own, from 0). */
  constructor(slices: readonly SliceGeometry[], scheme: HashSchemeId, partitions = 1) {
    const filters = slices.flatMap((slice, s) => {
      const counters = slice.keying?.kind === 'counting-v1';
      return filterGeometries(slice).map((geometry) => ({
        slice: s,
        geometry,
        counters,
        modulus: new Modulus(counters ? geometry.mBits / 8 : geometry.mBits),
        partitionBits: partitions > 1 ? geometry.mBits / partitions : 0,
      }));
    });
    this.filters = filters;
    this.perKey = filters.reduce((sum, filter) => sum + filter.geometry.k, 0);
    this.#scheme = scheme;
    this.#scratch = new Float64Array(Math.max(1, ...filters.map((filter) => filter.geometry.k)));
  }

  /**
   * Writes the positions of keys 0..count-1, whose hashes are in `words` (stride words per key,
   * filter f's hash at 2f: low half, then high half), as u32 little-endian into `out` from byte 0,
   * each passed through `map` (e.g. a store's own bit order). `out` holds count × perKey × 4 bytes.
   * With `order`, the i-th URL written is key order[i] (a partition's keys, say), else key i. A
   * partitioned epoch's positions are within the key's partition (position mod the partition's bits).
   */
  writeU32(
    words: Uint32Array,
    stride: number,
    count: number,
    out: Buffer,
    map: (position: number) => number,
    order?: Uint32Array,
  ): void {
    const filters = this.filters;
    const scratch = this.#scratch;
    // Whole words straight into the buffer where it is aligned on this little-endian machine; else one write per word.
    const direct =
      LITTLE_ENDIAN && out.byteOffset % 4 === 0
        ? new Uint32Array(out.buffer, out.byteOffset, out.length >>> 2)
        : undefined;
    let at = 0;
    for (let i = 0; i < count; i++) {
      const base = (order === undefined ? i : order[i]!) * stride;
      for (let f = 0; f < filters.length; f++) {
        const { geometry, modulus, counters, partitionBits } = filters[f]!;
        const lo = words[base + 2 * f]!;
        const hi = words[base + 2 * f + 1]!;
        if (geometry.layout === 'blocked')
          blockedPositions(geometry.mBits / BLOCK_BITS, geometry.k, hi, lo, scratch, this.#scheme);
        else classicPositions(modulus, geometry.k, hi, lo, scratch, this.#scheme);
        for (let j = 0; j < geometry.k; j++) {
          const p = partitionBits === 0 ? scratch[j]! : scratch[j]! % partitionBits;
          let repeat = false;
          if (counters) for (let e = 0; e < j && !repeat; e++) repeat = scratch[e] === p;
          const value = repeat ? NO_POSITION : counters ? p : map(p);
          if (direct !== undefined) direct[at >>> 2] = value;
          else out.writeUInt32LE(value, at);
          at += 4;
        }
      }
    }
  }
}
