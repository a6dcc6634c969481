import { SeenStoreError } from '../../errors.js';
import type { StoredFilter } from '../../filters/bloom.js';
import { CountingFilter, SpectralFilter } from '../../filters/counting.js';
import { keyCount, type Keys, type XxHash } from '../../hash/xxhash.js';
import type { CheckpointOutcome } from '../backend.js';
import { faultPoint } from '../faults.js';
import type { EpochHeader, SliceSpec } from '../records.js';
import type { CheckpointRecord } from './records.js';
import type { BitThread } from './bit-thread.js';
import type { Fence } from './checkpoint.js';
import type { StoreEnv } from './env.js';
import { EpochCopy, type AfterDecide } from './epoch-copy.js';
import { MAX_SLICES } from './epoch-slices.js';
import { countingFill, type SliceFill } from '../epoch-summary.js';
import { encodeCountingRecord, type JournalRecord } from './journal.js';

/**
 * The working copy of a counting epoch (spectral Bloom filters: one-byte counters). Counters cannot
 * be ORed, and a journal record must never be applied twice, so this copy reloads from the chunks
 * whenever another process checkpointed, and its checkpoint writes chunks, checkpoint record and
 * journal trim in one transaction. It never uses a bit thread, and cannot be merged.
 */
export class CountingCopy extends EpochCopy {
  /** Each slice's spectral filter over its two stored counter arrays. */
  #spectral: SpectralFilter[] = [];

  private constructor(env: StoreEnv, hash: XxHash, header: EpochHeader) {
    super(env, hash, header);
  }

  static load(env: StoreEnv, hash: XxHash, header: EpochHeader): CountingCopy {
    const copy = new CountingCopy(env, hash, header);
    copy.loadFresh();
    return copy;
  }

  get counting(): boolean {
    return true;
  }

  has(words: Uint32Array, i: number): boolean {
    return this.#home(words, i * this.hasher.stride) >= 0;
  }

  /**
   * How many times URL i of `words` was added (minus deletes), by the slice that holds it: the
   * recurring-minimum estimate; 0 when no slice holds it.
   */
  count(words: Uint32Array, i: number): number {
    const base = i * this.hasher.stride;
    for (let j = 0; j < this.#spectral.length; j++) {
      const n = this.#spectral[j]!.countAt(words, base + this.hasher.sliceAt(j));
      if (n > 0) return n;
    }
    return 0;
  }

  /** The oldest slice that holds the URL whose words start at `base`, or -1. */
  #home(words: Uint32Array, base: number): number {
    for (let j = 0; j < this.#spectral.length; j++)
      if (this.#spectral[j]!.holdsAt(words, base + this.hasher.sliceAt(j))) return j;
    return -1;
  }

  protected sliceFill(j: number): SliceFill {
    return countingFill(this.#spectral[j]!.primary);
  }

  protected makeSlice(spec: SliceSpec): StoredFilter[] {
    if (spec.keying?.kind !== 'counting-v1') {
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `epoch ${this.header.scope}/${this.header.epoch}: a slice without counting keying in a counting epoch`,
      );
    }
    const primary = new CountingFilter(spec.mBits / 8, spec.k, this.regionOptions);
    const secondary = new CountingFilter(spec.keying.secondaryCells, spec.k, this.regionOptions);
    this.#spectral.push(new SpectralFilter(primary, secondary));
    return [primary, secondary];
  }

  protected override loadFresh(): void {
    this.#spectral = [];
    super.loadFresh();
  }

  /** Another process's checkpoint replaced the chunks: counters cannot be ORed, so start from them. */
  protected override catchUpToCheckpoint(checkpoint: CheckpointRecord): boolean {
    return checkpoint.seq <= this.appliedSeq;
  }

  protected applyRecord(record: JournalRecord, slice: number): void {
    const spectral = this.#spectral[slice]!;
    for (let i = 0; i < record.entries; i++) {
      if (record.op === 'add') spectral.addAt(record.words, 4 * i);
      else spectral.deleteAt(record.words, 4 * i);
    }
  }

  /** Counting epochs stay on the calling thread (counters are not bits a thread can OR). */
  addBatchOn(
    _thread: BitThread,
    keys: Keys,
    answers: boolean[] | undefined,
    expectOpen: () => void,
    afterDecide?: AfterDecide,
  ): number {
    return this.addBatch(keys, this.rehash(keys), answers, expectOpen, afterDecide);
  }

  /**
   * Every URL is counted in the slice that holds it (the oldest with a count), a URL no slice
   * holds goes to the newest, and the slice grows like a Bloom epoch's. One journal record per
   * slice touched, holding every URL's hashes in order, so replay repeats exactly the same
   * operations on the same counters.
   */
  protected decideBatch(keys: Keys, words: Uint32Array, answers: boolean[] | undefined): number {
    return this.decideGrowing(keys, words, (hashes, start, count) => {
      const newest = this.slices.length - 1;
      let room = this.roomInNewest();
      const stride = this.hasher.stride;
      const routed: number[][] = this.slices.map(() => []);
      let fresh = 0;
      let i = start;
      for (; i < count; i++) {
        const base = i * stride;
        let home = this.#home(hashes, base);
        if (home < 0) {
          if (room <= 0 && this.slices.length < MAX_SLICES) break;
          home = newest;
          room--;
          fresh++;
        }
        const wasNew = this.#spectral[home]!.addAt(hashes, base + this.hasher.sliceAt(home));
        if (answers !== undefined) answers[i] = wasNew;
        routed[home]!.push(i);
      }
      routed.forEach((urls, j) => {
        if (urls.length > 0) this.#appendRecord('add', j, urls, j === newest ? fresh : 0, hashes);
      });
      return { consumed: i - start, fresh };
    });
  }

  /**
   * Deletes one occurrence of each URL from the slice that holds it, in one write transaction with
   * its journal records; URLs no slice holds are skipped. Returns how many were deleted.
   */
  deleteBatch(keys: readonly string[], words: Uint32Array, expectOpen: () => void): number {
    return this.writeBatch(keys, words, expectOpen, 'deleting from', (hashes) => {
      let deleted = 0;
      const stride = this.hasher.stride;
      const routed: number[][] = this.slices.map(() => []);
      for (let i = 0; i < keyCount(keys); i++) {
        const base = i * stride;
        const home = this.#home(hashes, base);
        if (home < 0) continue;
        this.#spectral[home]!.deleteAt(hashes, base + this.hasher.sliceAt(home));
        routed[home]!.push(i);
        deleted++;
      }
      routed.forEach((urls, j) => {
        if (urls.length > 0) this.#appendRecord('delete', j, urls, urls.length, hashes);
      });
      return deleted;
    });
  }

  /** Journals URLs `urls` of `words` for slice `j` (inside the write transaction). */
  #appendRecord(op: 'add' | 'delete', j: number, urls: readonly number[], changed: number, words: Uint32Array): void {
    const sliceWords = 2 * this.slices[j]!.filters.length;
    const stride = this.hasher.stride;
    const at = this.hasher.sliceAt(j);
    const record = new Uint32Array(sliceWords * urls.length);
    urls.forEach((i, n) => {
      for (let w = 0; w < sliceWords; w++) record[n * sliceWords + w] = words[i * stride + at + w]!;
    });
    const value = encodeCountingRecord(this.hash, op, j, urls.length, changed, this.slices[j]!.filters.length, record);
    this.appendJournal(value, j, op === 'add' ? urls.length : 0, op === 'add' ? changed : 0);
  }

  /**
   * Counters cannot be ORed into what is stored, and a record must never be applied twice, so the
   * chunks, the checkpoint record and the journal trim go in one write transaction, after catching
   * up inside it: the stored chunks are always exactly the state at the recorded sequence. (It
   * costs one transaction as large as the dirty chunks.)
   */
  protected async writeCheckpoint(fence: Fence): Promise<CheckpointOutcome> {
    let written: (readonly [number, number])[] = [];
    const outcome = this.env.write((): CheckpointOutcome => {
      fence();
      this.catchUp();
      const dirty = this.dirtyChunks();
      if (dirty.length === 0 && this.appliedSeq <= this.readCheckpoint().seq) return 'clean';
      for (const [index, region] of dirty) this.chunks.put(index, region, this.storedFilter(index).region(region));
      this.recordCheckpoint(this.appliedSeq, this.epochCounts, [...this.journalSliceAdded]);
      faultPoint('checkpoint:before-trim');
      written = dirty;
      return 'written';
    });
    this.markClean(written);
    if (outcome === 'written') faultPoint('checkpoint:after-trim');
    return outcome;
  }
}
