/**
 * A filter's byte array in fixed-size regions with change tracking: the store persists each
 * changed region as a chunk. Shared by the Bloom filter (bits) and the counting filter (counters).
 */
export abstract class RegionedBytes {
  readonly bytes: Uint8Array;
  readonly regionBytes: number;
  /** 1 for each region changed since it was last marked clean; subclasses set it on writes. */
  protected readonly dirty: Uint8Array;

  constructor(byteLength: number, regionBytes: number | undefined) {
    this.bytes = new Uint8Array(byteLength);
    this.regionBytes = regionBytes ?? byteLength;
    this.dirty = new Uint8Array(Math.ceil(byteLength / this.regionBytes));
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
