import { BloomFilter } from '../filters/bloom.js';
import { allHold } from '../filters/decide.js';
import { unionFpr } from '../filters/scalable.js';
import type { HashSchemeId } from '../hash/scheme.js';
import { XxHash } from '../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES } from '../store/chunks.js';
import { readExport, type ExportContents, type ExportHeader } from '../store/export-file.js';
import { checkEpochSupported, type EpochHeader } from '../store/records.js';
import { toKey, type NormalizeMode } from '../url/normalize.js';
import { filterGeometries } from '../filters/keying.js';
import { EpochHasher } from '../filters/epoch-hasher.js';
import { CountingFilter } from '../filters/counting.js';

interface FileSlice {
  readonly filters: (BloomFilter | CountingFilter)[];
  readonly offset: number;
}

export interface ExportedSummary {
  readonly estimatedDistinct: number;
  readonly fillRatio: number;
  readonly estimatedFpr: number;
  /** Distinct URLs per slice, estimated from its fill. */
  readonly sliceEstimates: number[];
}

/**
 * The filters of an export file in memory, queried the way the store queries an epoch: with the
 * file's seeds, geometry and normalisation. Used by merge (to sum up a union) and by
 * `diff --against` (membership in another machine's epoch).
 */
export class ExportedEpoch {
  readonly header: ExportHeader;
  /** The one mapping of keys to hash words (filters/epoch-hasher.ts), partitioned epochs included. */
  readonly #hasher: EpochHasher;
  readonly #slices: FileSlice[] = [];
  #filterCount = 0;

  constructor(hash: XxHash, epoch: EpochHeader, filters: readonly Uint8Array[], header: ExportHeader) {
    checkEpochSupported(epoch);
    this.#hasher = new EpochHasher(hash, epoch.normalize, epoch.slices, epoch.partitions);
    this.header = header;
    // checkSupported vouched for the scheme.
    const options = { regionBytes: CHUNK_PAYLOAD_BYTES, scheme: epoch.hashScheme as HashSchemeId };
    for (const spec of epoch.slices) {
      const counting = spec.keying?.kind === 'counting-v1';
      const slice: FileSlice = {
        // A counting slice answers from its primary counters alone (count > 0).
        filters: filterGeometries(spec)
          .slice(0, counting ? 1 : undefined)
          .map((geometry, f) => {
            const filter: BloomFilter | CountingFilter = counting
              ? new CountingFilter(geometry.mBits / 8, geometry.k, options)
              : new BloomFilter(geometry, options);
            const bytes = filters[this.#filterCount + f];
            if (bytes !== undefined) {
              for (let region = 0; region < filter.regionCount; region++) {
                filter.orRegion(
                  region,
                  bytes.subarray(region * CHUNK_PAYLOAD_BYTES, (region + 1) * CHUNK_PAYLOAD_BYTES),
                );
              }
            }
            return filter;
          }),
        offset: this.#filterCount,
      };
      this.#slices.push(slice);
      this.#filterCount += spec.seeds.length;
    }
  }

  /** Reads and fully checks an export file (any damage is a typed error), ready for queries. */
  static async open(path: string, options: { readonly signal?: AbortSignal } = {}): Promise<ExportedEpoch> {
    const hash = await XxHash.load();
    return ExportedEpoch.fromContents(hash, await readExport(hash, path, options.signal));
  }

  static fromContents(hash: XxHash, contents: ExportContents): ExportedEpoch {
    return new ExportedEpoch(hash, contents.header.epoch, contents.filters, contents.header);
  }

  get epoch(): EpochHeader {
    return this.header.epoch;
  }

  summary(): ExportedSummary {
    let ones = 0;
    let bits = 0;
    const rates: number[] = [];
    const sliceEstimates = this.#slices.map((slice) => {
      let rate = 1;
      for (const filter of slice.filters) {
        rate *= filter.currentFpr;
        ones += filter.onesBits;
        bits += filter instanceof CountingFilter ? filter.cells : filter.geometry.mBits;
      }
      rates.push(rate);
      return Math.round(slice.filters[0]!.estimatedCount);
    });
    return {
      estimatedDistinct: sliceEstimates.reduce((sum, n) => sum + n, 0),
      fillRatio: ones / bits,
      estimatedFpr: unionFpr(rates),
      sliceEstimates,
    };
  }

  /**
   * Membership of each URL, keyed by the file's normalisation; undefined for a URL that is not
   * usable under it (the caller reports those).
   */
  has(urls: readonly string[]): (boolean | undefined)[] {
    const mode = this.epoch.normalize as NormalizeMode;
    const keys: string[] = [];
    const at: number[] = [];
    const answers = new Array<boolean | undefined>(urls.length).fill(undefined);
    urls.forEach((url, i) => {
      const key = toKey(url, mode);
      if (key !== undefined) {
        keys.push(key);
        at.push(i);
      }
    });
    const stride = 2 * this.#filterCount;
    const words = new Uint32Array(stride * keys.length);
    this.#hasher.hash(keys, words);
    for (let i = 0; i < keys.length; i++) {
      const base = i * stride;
      answers[at[i]!] = this.#slices.some((slice) => {
        const from = base + 2 * slice.offset;
        const first = slice.filters[0]!;
        if (first instanceof CountingFilter) return first.count(words[from + 1]!, words[from]!) > 0;
        return allHold(slice.filters as BloomFilter[], words, from);
      });
    }
    return answers;
  }
}
