import { SeenStoreError, assert } from '../../errors.js';
import { BloomFilter } from '../../filters/bloom.js';
import { allHold } from '../../filters/decide.js';
import { CountingFilter, SpectralFilter } from '../../filters/counting.js';
import { EpochHasher } from '../../filters/epoch-hasher.js';
import { filterGeometries } from '../../filters/keying.js';
import type { HashSchemeId } from '../../hash/scheme.js';
import { keyCount, type Keys, type XxHash } from '../../hash/xxhash.js';
import type { EpochCounts, EpochSummary } from '../backend.js';
import { bloomFill, countingFill, epochSummary } from '../epoch-summary.js';
import { CHUNK_PAYLOAD_BYTES } from '../chunks.js';
import { checkEpochSupported, isCountingEpoch, type EpochHeader, type SliceSpec } from '../records.js';
import { nextSliceSpec } from '../slice-plan.js';

/** Most slices an epoch grows to (as on every backend: slice j holds capacity * factor^j URLs). */
const MAX_SLICES = 24;

/** One slice: its filters (Bloom), or its spectral filter over two counter arrays (counting). */
interface Slice {
  readonly spec: SliceSpec;
  readonly bloom: readonly BloomFilter[];
  readonly spectral: SpectralFilter | undefined;
  /** New URLs the slice took from adds, plus what merges brought in (they fill its capacity). */
  added: number;
}

/**
 * One epoch's filters in memory: the add-if-absent decision, growth, counting and merge, exactly
 * as every backend decides them, with no storage under it. A driver that keeps bits elsewhere
 * stores these same filters' bytes (`filterBytes`) and must answer as this does.
 */
export class EpochFilters {
  #header: EpochHeader;
  readonly #hasher: EpochHasher;
  readonly #slices: Slice[] = [];
  readonly #options: { readonly regionBytes: number; readonly scheme: HashSchemeId };
  #counts: EpochCounts = { submitted: 0, added: 0 };
  #words = new Uint32Array(0);

  constructor(hash: XxHash, header: EpochHeader) {
    checkEpochSupported(header);
    this.#header = header;
    this.#hasher = new EpochHasher(hash, header.normalize, [], header.partitions);
    // Regions of the export file's size, so that filterBytes() is the bytes an export holds.
    this.#options = { regionBytes: CHUNK_PAYLOAD_BYTES, scheme: header.hashScheme as HashSchemeId };
    this.#addSlices(header.slices);
  }

  get header(): EpochHeader {
    return this.#header;
  }

  /** A rotation sealed it (its slices stay). */
  set header(sealed: EpochHeader) {
    this.#header = sealed;
  }

  get counting(): boolean {
    return isCountingEpoch(this.#header);
  }

  get sliceAdded(): number[] {
    return this.#slices.map((slice) => slice.added);
  }

  /** Restores the counts of an imported epoch. */
  setCounts(counts: EpochCounts, sliceAdded: readonly number[]): void {
    this.#counts = { submitted: counts.submitted, added: counts.added };
    this.#slices.forEach((slice, j) => (slice.added = sliceAdded[j] ?? 0));
  }

  /** Add-if-absent of each key in order; answers[i] true for a new key. Returns how many were new. */
  add(keys: Keys, answers: boolean[] | undefined): number {
    const count = keyCount(keys);
    let words = this.#hash(keys);
    let fresh = 0;
    for (let i = 0; i < count; i++) {
      const newest = this.#slices.length - 1;
      if (this.#slices[newest]!.added >= this.#slices[newest]!.spec.capacityUrls && this.#slices.length < MAX_SLICES) {
        this.#grow();
        words = this.#hash(keys);
      }
      const wasNew = this.counting ? this.#countOne(words, i) : this.#addOne(words, i);
      if (answers !== undefined) answers[i] = wasNew;
      if (wasNew) fresh++;
    }
    this.#counts = { submitted: this.#counts.submitted + count, added: this.#counts.added + fresh };
    return fresh;
  }

  /** out[i] = 1 when some slice holds key i. */
  has(keys: readonly string[], out: Uint8Array): void {
    const words = this.#hash(keys);
    for (let i = 0; i < keys.length; i++) out[i] = this.#home(words, i) >= 0 ? 1 : 0;
  }

  /** out[i] += the count of key i in the slice that holds it (counting epochs). */
  count(keys: readonly string[], out: number[]): void {
    const words = this.#hash(keys);
    for (let i = 0; i < keys.length; i++) {
      const home = this.#home(words, i);
      if (home >= 0) out[i]! += this.#slices[home]!.spectral!.countAt(words, this.#at(i, home));
    }
  }

  /** One occurrence of each held key out of the slice that holds it (counting epochs); how many. */
  delete(keys: readonly string[]): number {
    const words = this.#hash(keys);
    let deleted = 0;
    for (let i = 0; i < keys.length; i++) {
      const home = this.#home(words, i);
      if (home < 0) continue;
      this.#slices[home]!.spectral!.deleteAt(words, this.#at(i, home));
      deleted++;
    }
    return deleted;
  }

  /** ORs one byte array per filter into the filters; returns the distinct URLs gained, estimated from the fill. */
  merge(incoming: readonly Uint8Array[]): number {
    const { scope, epoch } = this.#header;
    // The engine refuses to merge into a counting epoch (INCOMPATIBLE, transfer.ts mergeMismatch) before it gets here.
    assert(!this.counting, 'merge reaches only Bloom epochs');
    const filters = this.#slices.flatMap((slice) => slice.bloom);
    if (incoming.length !== filters.length)
      throw new SeenStoreError(
        'USAGE',
        `merge: ${incoming.length} filters given, epoch ${scope}/${epoch} has ${filters.length}`,
      );
    const before = this.#slices.map((slice) => slice.bloom[0]!.estimatedCount);
    incoming.forEach((bytes, index) => orInto(filters[index]!, bytes));
    let gained = 0;
    this.#slices.forEach((slice, j) => {
      const more = Math.max(0, Math.round(slice.bloom[0]!.estimatedCount - before[j]!));
      slice.added += more;
      gained += more;
    });
    return gained;
  }

  /** Loads one byte array per filter (an import into an empty epoch). */
  load(incoming: readonly Uint8Array[]): void {
    this.#filters().forEach((filter, index) => {
      const bytes = incoming[index];
      if (bytes !== undefined) orInto(filter, bytes);
    });
  }

  /** The bytes of every filter of every slice, in filter order (copies). */
  filterBytes(): Uint8Array[] {
    return this.#filters().map((filter) => filter.bytes.slice());
  }

  /** Bytes the filters take. */
  get bytes(): number {
    return this.#filters().reduce((sum, filter) => sum + filter.bytes.length, 0);
  }

  summary(): EpochSummary {
    return epochSummary(
      this.#counts,
      this.#slices.map((slice) => {
        const primary = slice.spectral?.primary;
        const fill = primary === undefined ? bloomFill(slice.bloom) : countingFill(primary);
        return {
          spec: slice.spec,
          filters: slice.spec.seeds.length,
          added: slice.added,
          fill,
          estimatedCount: (primary ?? slice.bloom[0]!).estimatedCount,
        };
      }),
    );
  }

  #filters(): (BloomFilter | CountingFilter)[] {
    return this.#slices.flatMap((slice): (BloomFilter | CountingFilter)[] =>
      slice.spectral === undefined ? [...slice.bloom] : [slice.spectral.primary, slice.spectral.secondary],
    );
  }

  /** Bloom: new when no slice holds it; then set in the newest slice. */
  #addOne(words: Uint32Array, i: number): boolean {
    if (this.#home(words, i) >= 0) return false;
    const newest = this.#slices.length - 1;
    const filters = this.#slices[newest]!.bloom;
    const at = this.#at(i, newest);
    for (let f = 0; f < filters.length; f++) filters[f]!.add(words[at + 2 * f + 1]!, words[at + 2 * f]!);
    this.#slices[newest]!.added++;
    return true;
  }

  /** Counting: counted in the slice that holds it, else in the newest (which then takes one more URL). */
  #countOne(words: Uint32Array, i: number): boolean {
    let home = this.#home(words, i);
    if (home < 0) {
      home = this.#slices.length - 1;
      this.#slices[home]!.added++;
    }
    return this.#slices[home]!.spectral!.addAt(words, this.#at(i, home));
  }

  /** The oldest slice that holds key i, or -1. */
  #home(words: Uint32Array, i: number): number {
    for (let j = 0; j < this.#slices.length; j++) {
      const slice = this.#slices[j]!;
      const at = this.#at(i, j);
      if (slice.spectral === undefined ? allHold(slice.bloom, words, at) : slice.spectral.holdsAt(words, at)) return j;
    }
    return -1;
  }

  #at(i: number, slice: number): number {
    return i * this.#hasher.stride + this.#hasher.sliceAt(slice);
  }

  #hash(keys: Keys): Uint32Array {
    const need = keyCount(keys) * this.#hasher.stride;
    if (this.#words.length < need) this.#words = new Uint32Array(need);
    this.#hasher.hash(keys, this.#words);
    return this.#words;
  }

  #grow(): void {
    const spec = nextSliceSpec(this.#header, this.#header.slices.length);
    this.#header = { ...this.#header, slices: [...this.#header.slices, spec] };
    this.#addSlices([spec]);
  }

  #addSlices(specs: readonly SliceSpec[]): void {
    for (const spec of specs) {
      if (isCountingEpoch(this.#header)) {
        if (spec.keying?.kind !== 'counting-v1')
          throw new SeenStoreError(
            'STORE_CORRUPT',
            `epoch ${this.#header.scope}/${this.#header.epoch}: a slice without counting keying in a counting epoch`,
          );
        const primary = new CountingFilter(spec.mBits / 8, spec.k, this.#options);
        const secondary = new CountingFilter(spec.keying.secondaryCells, spec.k, this.#options);
        this.#slices.push({ spec, bloom: [], spectral: new SpectralFilter(primary, secondary), added: 0 });
      } else {
        this.#slices.push({
          spec,
          bloom: filterGeometries(spec).map((geometry) => new BloomFilter(geometry, this.#options)),
          spectral: undefined,
          added: 0,
        });
      }
    }
    this.#hasher.extend(specs);
  }
}

function orInto(filter: BloomFilter | CountingFilter, bytes: Uint8Array): void {
  for (let region = 0; region < filter.regionCount; region++)
    filter.orRegion(region, bytes.subarray(region * CHUNK_PAYLOAD_BYTES, (region + 1) * CHUNK_PAYLOAD_BYTES));
}
