/**
 * A filter's byte array in fixed-size regions with change tracking: the store persists each
 * changed region as a chunk. Shared by the Bloom filter (bits) and the counting filter (counters).
 */
/**
 * A filter's memory as shared buffers, so that a worker thread can work on the same bits (and mark
 * the same regions dirty) as the thread that owns the filter.
 */
export interface SharedFilterMemory {
  readonly bytes: SharedArrayBuffer;
  readonly dirty: SharedArrayBuffer;
  /** Where in `bytes` the filter's bytes start (default 0): a filter placed in the kernel's memory. */
  readonly bytesAt?: number;
  /** Where in `dirty` its dirty flags start (default 0). */
  readonly dirtyAt?: number;
}

export abstract class RegionedBytes {
  readonly bytes: Uint8Array;
  readonly regionBytes: number;
  /** 1 for each region changed since it was last marked clean; subclasses set it on writes. */
  protected readonly dirty: Uint8Array;
  /** regionReciprocal(regionBytes): `(at * regionPerByte) | 0` is at's region, for at < 2^31. */
  protected readonly regionPerByte: number;

  /**
   * `memory`: `true` allocates the bytes and the dirty flags in shared memory (for a filter a
   * worker thread will also work on); shared buffers given are used as they are (the worker's view
   * of such a filter).
   */
  constructor(byteLength: number, regionBytes: number | undefined, memory: boolean | SharedFilterMemory = false) {
    this.regionBytes = regionBytes ?? byteLength;
    const regions = Math.ceil(byteLength / this.regionBytes);
    if (memory === false) {
      this.bytes = new Uint8Array(byteLength);
      this.dirty = new Uint8Array(regions);
    } else {
      const shared =
        memory === true ? { bytes: new SharedArrayBuffer(byteLength), dirty: new SharedArrayBuffer(regions) } : memory;
      this.bytes = new Uint8Array(shared.bytes, shared.bytesAt ?? 0, byteLength);
      this.dirty = new Uint8Array(shared.dirty, shared.dirtyAt ?? 0, regions);
    }
    this.regionPerByte = regionReciprocal(this.regionBytes);
  }

  /** The shared buffers of a filter allocated in shared memory; undefined otherwise. */
  get sharedMemory(): SharedFilterMemory | undefined {
    const { bytes, dirty } = this;
    if (!(bytes.buffer instanceof SharedArrayBuffer) || !(dirty.buffer instanceof SharedArrayBuffer)) return undefined;
    return { bytes: bytes.buffer, dirty: dirty.buffer, bytesAt: bytes.byteOffset, dirtyAt: dirty.byteOffset };
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

  /** Whether region `index` changed since it was last marked clean. */
  isDirty(index: number): boolean {
    return this.dirty[index] === 1;
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
