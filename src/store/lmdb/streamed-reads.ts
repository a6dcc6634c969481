import type { BloomFilter } from '../../filters/bloom.js';

/** One slice as a query sees it: its filters, the index of its first, and its hash words' offset. */
export interface QueriedSlice {
  readonly filters: readonly BloomFilter[];
  readonly offset: number;
  readonly at: number;
}

/** Where a query reads one chunk it has not in memory. */
export interface ChunkSource {
  /** Whether chunk `region` of filter `index` is in memory (its stored bytes ORed into the filter). */
  resident(index: number, region: number): boolean;
  /** The stored payload of chunk `region` of filter `index`, valid until the next call; undefined when none is stored. */
  payload(index: number, region: number): Uint8Array | undefined;
}

/**
 * Queries that keep no chunk: the bits a batch needs are read from each stored chunk it touches,
 * once per batch and chunk (positions grouped by chunk), ORed with the bits in memory (the
 * journal tail). The process keeps no copy: a chunk is read through LMDB's map into lmdb-js's one
 * reused buffer, so processes on one host share the page cache instead of each holding the
 * filter. Exact: a position is set when the stored chunk or memory has it, as in a loaded copy.
 *
 * Memory is read only in a chunk this process set bits in that are not stored yet (a dirty
 * chunk): elsewhere every bit memory holds is stored too (written by a checkpoint, or ORed in
 * from the stored chunk, which only gains bits). Reading the rest would cost memory where the
 * kernel has no shared zero page (this machine's virtual machines: a read of never-written
 * memory gives the process a page of its own): four processes of 100k queries held 1 GB each.
 */
export class StreamedReads {
  #positions = new Float64Array(0);
  #order = new Int32Array(0);
  #starts = new Int32Array(0);
  #next = new Int32Array(0);
  /** 1 for (URL i, slice j) at i * slices + j once a bit of the slice is found clear. */
  #clear = new Uint8Array(0);

  /** out[i] = 1 when some slice holds URL i of `words` (count URLs, `stride` words each), else 0. */
  answer(
    slices: readonly QueriedSlice[],
    words: Uint32Array,
    stride: number,
    count: number,
    source: ChunkSource,
    out: Uint8Array,
  ): void {
    const sliceCount = slices.length;
    if (this.#clear.length < count * sliceCount) this.#clear = new Uint8Array(count * sliceCount);
    const clear = this.#clear;
    clear.fill(0, 0, count * sliceCount);
    slices.forEach((slice, j) => {
      slice.filters.forEach((filter, f) =>
        this.#readFilter(filter, slice.offset + f, words, slice.at + 2 * f, stride, count, j, sliceCount, source),
      );
    });
    for (let i = 0; i < count; i++) {
      let held = 0;
      for (let j = 0; j < sliceCount && held === 0; j++) if (clear[i * sliceCount + j] === 0) held = 1;
      out[i] = held;
    }
  }

  /** Marks (URL, slice j) clear for every URL with a position clear in both `filter`'s memory and its stored chunk. */
  #readFilter(
    filter: BloomFilter,
    index: number,
    words: Uint32Array,
    at: number,
    stride: number,
    count: number,
    j: number,
    sliceCount: number,
    source: ChunkSource,
  ): void {
    const k = filter.geometry.k;
    const entries = count * k;
    if (this.#positions.length < entries) {
      this.#positions = new Float64Array(entries);
      this.#order = new Int32Array(entries);
    }
    const positions = this.#positions;
    filter.positionsOf(words, at, stride, 0, count, positions);
    const regionBits = 8 * filter.regionBytes;
    this.#sortByRegion(entries, regionBits, filter.regionCount);
    const order = this.#order;
    const starts = this.#starts;
    const bytes = filter.bytes;
    const clear = this.#clear;
    for (let region = 0; region < filter.regionCount; region++) {
      const from = starts[region]!;
      const to = starts[region + 1]!;
      if (from === to) continue;
      const resident = source.resident(index, region);
      const stored = resident ? undefined : source.payload(index, region);
      const memory = resident || filter.isDirty(region);
      const base = region * filter.regionBytes;
      for (let e = from; e < to; e++) {
        const entry = order[e]!;
        const at = Math.floor(entry / k) * sliceCount + j;
        if (clear[at] === 1) continue;
        const p = positions[entry]!;
        const byte = Math.floor(p / 8);
        const value = (memory ? bytes[byte]! : 0) | (stored === undefined ? 0 : stored[byte - base]!);
        if ((value & (1 << (p % 8))) === 0) clear[at] = 1;
      }
    }
  }

  /** Orders entries 0..entries - 1 by the region of their position (counting sort): #order, with #starts per region. */
  #sortByRegion(entries: number, regionBits: number, regions: number): void {
    if (this.#starts.length < regions + 1) {
      this.#starts = new Int32Array(regions + 1);
      this.#next = new Int32Array(regions + 1);
    }
    const starts = this.#starts;
    const positions = this.#positions;
    starts.fill(0, 0, regions + 1);
    for (let e = 0; e < entries; e++) starts[Math.floor(positions[e]! / regionBits) + 1]!++;
    for (let r = 0; r < regions; r++) starts[r + 1]! += starts[r]!;
    const next = this.#next;
    next.set(starts.subarray(0, regions));
    for (let e = 0; e < entries; e++) this.#order[next[Math.floor(positions[e]! / regionBits)]!++] = e;
  }
}
