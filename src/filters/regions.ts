/**
 * A filter's byte array in fixed-size regions with change tracking: the store persists each
 * changed region as a chunk. Shared by the Bloom filter (bits) and the counting filter (counters).
 */
export abstract class RegionedBytes {
  readonly bytes: Uint8Array;
  readonly regionBytes: number;
  /** 1 for each region changed since it was last marked clean; subclasses set it on writes. */
  protected readonly dirty: Uint8Array;
  /** regionReciprocal(regionBytes): `(at * regionPerByte) | 0` is at's region, for at < 2^31. */
  protected readonly regionPerByte: number;

  constructor(byteLength: number, regionBytes: number | undefined) {
    this.bytes = new Uint8Array(byteLength);
    this.regionBytes = regionBytes ?? byteLength;
    this.dirty = new Uint8Array(Math.ceil(byteLength / this.regionBytes));
    this.regionPerByte = regionReciprocal(this.regionBytes);
  }

  get regionCount(): number {
    return this.dirty.length;
  }

  /** The bytes of region `index` (a view, not a copy). */
  region(index: number): Uint8Array {
    const start = index * this.regionBytes;
    return this.bytes.subarray(start, Math.min(start + this.regionBytes, this.bytes.length));
  }

  /** Indexes of regions changed since they were last marked clean. */
  dirtyRegions(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.dirty.length; i++) if (this.dirty[i] === 1) out.push(i);
    return out;
  }

  markClean(index: number): void {
    this.dirty[index] = 0;
  }
}

/**
 * 1 / regionBytes, rounded up by a relative 2^-50, so that for byte offsets 0 <= at < 2^31
 * `(at * r) | 0` is exactly floor(at / regionBytes), a multiplication where the hot path had a
 * division. The bias outweighs the two roundings (2^-53 each), so the product never falls below
 * the true quotient; it adds less than at * 2^-49 / regionBytes, which never reaches the next
 * integer (at most 1 / regionBytes away when the quotient is not one already).
 */
export function regionReciprocal(regionBytes: number): number {
  return (1 / regionBytes) * (1 + 2 ** -50);
}
