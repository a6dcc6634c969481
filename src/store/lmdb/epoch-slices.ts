import { assert } from '../../errors.js';
import type { StoredFilter } from '../../filters/bloom.js';
import { EpochHasher } from '../../filters/epoch-hasher.js';
import type { HashSchemeId } from '../../hash/scheme.js';
import type { SliceFill } from '../epoch-summary.js';
import { keyCount, type Keys, type XxHash } from '../../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES } from '../chunks.js';
import { checkEpochSupported, type EpochHeader, type SliceSpec } from '../records.js';

/** Most slices an epoch may grow to; slice j holds capacity * 2^j URLs, so this is never reached in practice. */
export const MAX_SLICES = 24;

/** One slice as stored: its spec, the filters its chunks hold, and where its filters start. */
export interface StoredSlice {
  readonly spec: SliceSpec;
  readonly filters: StoredFilter[];
  /** Index of the slice's first filter among all filters of the epoch (chunk keys use it). */
  readonly offset: number;
}

/**
 * The slices of one epoch's working copy (epoch-copy.ts): their filters in memory, how a URL is
 * hashed for all of them, which filter an epoch-wide index names, and the new URLs each slice
 * took. What a filter is (Bloom bits, counters) is a subclass's: BloomCopy, CountingCopy.
 */
export abstract class EpochSlices {
  protected readonly hash: XxHash;
  protected currentHeader: EpochHeader;
  /** The epoch's hash scheme (checked by checkEpochSupported before construction). */
  protected readonly scheme: HashSchemeId;
  protected slices: StoredSlice[] = [];
  protected hasher: EpochHasher;
  /** New URLs per slice from the journal (added by this store's adds). */
  protected journalSliceAdded: number[] = [];
  /** New URLs per slice that merges brought (estimated). */
  protected mergedSliceAdded: number[] = [];

  protected constructor(hash: XxHash, header: EpochHeader) {
    checkEpochSupported(header);
    this.hash = hash;
    this.currentHeader = header;
    this.scheme = header.hashScheme as HashSchemeId;
    this.hasher = new EpochHasher(hash, header.normalize, [], header.partitions);
  }

  get header(): EpochHeader {
    return this.currentHeader;
  }

  /** Filters over all slices: the number of hashes computed per URL. */
  get filterCount(): number {
    return this.hasher.filterCount;
  }

  /** New URLs per slice: from adds, plus the estimate of what merges brought in. */
  get sliceAdded(): readonly number[] {
    return this.slices.map((_, j) => this.sliceCount(j));
  }

  protected sliceCount(j: number): number {
    return (this.journalSliceAdded[j] ?? 0) + (this.mergedSliceAdded[j] ?? 0);
  }

  /** The bytes of every filter of every slice, in filter order (views, not copies). */
  filterBytes(): Uint8Array[] {
    return this.slices.flatMap((slice) => slice.filters.map((filter) => filter.bytes));
  }

  /** Hashes `keys` for every filter of every slice into `words` (the layout: filters/epoch-hasher.ts). */
  hashKeys(keys: Keys, words: Uint32Array): void {
    this.hasher.hash(keys, words);
  }

  /** True when some slice holds URL i of `words`. */
  abstract has(words: Uint32Array, i: number): boolean;

  /** The fill of slice j as queries see it (Bloom: every filter; counting: the primary's counters). */
  protected abstract sliceFill(j: number): SliceFill;

  /** Allocates the filters of a slice (appended after the existing ones). */
  protected abstract makeSlice(spec: SliceSpec): StoredFilter[];

  protected rehash(keys: Keys): Uint32Array {
    const words = new Uint32Array(keyCount(keys) * this.hasher.stride);
    this.hashKeys(keys, words);
    return words;
  }

  /** New URLs the newest slice still takes before it is full (negative once past it, at MAX_SLICES). */
  protected roomInNewest(): number {
    const newest = this.slices.length - 1;
    return this.slices[newest]!.spec.capacityUrls - this.sliceCount(newest);
  }

  /** Allocates the header's slices from `from` on and extends the hasher over them. */
  protected addSlices(from: number): void {
    const specs = this.currentHeader.slices.slice(from);
    let offset = this.filterCount;
    for (const spec of specs) {
      this.slices.push({ spec, filters: this.makeSlice(spec), offset });
      offset += spec.seeds.length;
    }
    this.hasher.extend(specs);
    this.slicesChanged();
  }

  /** Called when the slices changed: subclasses drop what they derived from them. */
  protected slicesChanged(): void {}

  /** Filter `index` of the epoch, which the caller knows exists (a dirty chunk, an incoming filter of the right count). */
  protected storedFilter(index: number): StoredFilter {
    const filter = this.filterAt(index);
    assert(
      filter !== undefined,
      `filter ${index} exists in epoch ${this.currentHeader.scope}/${this.currentHeader.epoch}`,
    );
    return filter;
  }

  protected filterAt(index: number): StoredFilter | undefined {
    for (const slice of this.slices) {
      if (index < slice.offset + slice.filters.length) return slice.filters[index - slice.offset];
    }
    return undefined;
  }

  /** The dirty chunks of every filter, as [filter index, region] pairs. */
  protected dirtyChunks(): (readonly [number, number])[] {
    return this.slices.flatMap((slice) =>
      slice.filters.flatMap((filter, f) => filter.dirtyRegions().map((region) => [slice.offset + f, region] as const)),
    );
  }

  protected markClean(chunks: readonly (readonly [number, number])[]): void {
    for (const [index, region] of chunks) this.storedFilter(index).markClean(region);
  }

  /** out[i] = 1 when URL i of `words` (hashed by hashKeys) is held by some slice, else 0. */
  answer(words: Uint32Array, count: number, out: Uint8Array): void {
    for (let i = 0; i < count; i++) out[i] = this.has(words, i) ? 1 : 0;
  }

  /** The chunk payload size every filter's regions use (the epoch header's chunkBytes, checked at construction). */
  protected get regionOptions(): { readonly regionBytes: number; readonly scheme: HashSchemeId } {
    assert(this.currentHeader.chunkBytes === CHUNK_PAYLOAD_BYTES, 'epoch chunk size checked before loading');
    return { regionBytes: CHUNK_PAYLOAD_BYTES, scheme: this.scheme };
  }
}
