import { BLOCK_BITS, Modulus, blockedPositions, classicPositions, type HashSchemeId } from '../hash/scheme.js';
import type { FilterGeometry } from './bloom.js';
import { filterGeometries, type SliceGeometry } from './keying.js';

/**
 * Bit positions of every filter of an epoch's slices, computed from the epoch hasher's words
 * (filters/epoch-hasher.ts) by the reference arithmetic of each layout (hash/scheme.ts
 * classicPositions / blockedPositions): for a store that tests and sets bits elsewhere (the Redis
 * backend's functions), so that no other code ever maps a hash to a bit.
 *
 * Output, per key, URL-major: for every filter of every slice in filter order, its k positions.
 */
export class PositionPlan {
  /** Per filter: its slice, geometry, and what the position arithmetic needs. */
  readonly filters: readonly { readonly slice: number; readonly geometry: FilterGeometry; readonly modulus: Modulus }[];
  /** Positions per key over every filter. */
  readonly perKey: number;
  readonly #scheme: HashSchemeId;
  readonly #scratch: Float64Array;

  constructor(slices: readonly SliceGeometry[], scheme: HashSchemeId) {
    const filters = slices.flatMap((slice, s) => filterGeometries(slice).map((geometry) => ({ slice: s, geometry, modulus: new Modulus(geometry.mBits) })));
    this.filters = filters;
    this.perKey = filters.reduce((sum, filter) => sum + filter.geometry.k, 0);
    this.#scheme = scheme;
    this.#scratch = new Float64Array(Math.max(1, ...filters.map((filter) => filter.geometry.k)));
  }

  /**
   * Writes the positions of keys 0..count-1, whose hashes are in `words` (stride words per key,
   * filter f's hash at 2f: low half, then high half), as u32 little-endian into `out` from byte 0,
   * each passed through `map` (e.g. a store's own bit order). `out` holds count × perKey × 4 bytes.
   */
  writeU32(words: Uint32Array, stride: number, count: number, out: Buffer, map: (position: number) => number): void {
    const filters = this.filters;
    const scratch = this.#scratch;
    let at = 0;
    for (let i = 0; i < count; i++) {
      const base = i * stride;
      for (let f = 0; f < filters.length; f++) {
        const { geometry, modulus } = filters[f]!;
        const lo = words[base + 2 * f]!;
        const hi = words[base + 2 * f + 1]!;
        if (geometry.layout === 'blocked') blockedPositions(geometry.mBits / BLOCK_BITS, geometry.k, hi, lo, scratch, this.#scheme);
        else classicPositions(modulus, geometry.k, hi, lo, scratch, this.#scheme);
        for (let j = 0; j < geometry.k; j++) {
          out.writeUInt32LE(map(scratch[j]!), at);
          at += 4;
        }
      }
    }
  }
}
