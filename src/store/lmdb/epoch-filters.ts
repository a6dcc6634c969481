import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { SeenStoreError, asStoreError } from '../../errors.js';
import { BloomFilter, allHold, type StoredFilter } from '../../filters/bloom.js';
import { decideRange, type DecideTarget, type Decided } from '../../filters/decide.js';
import { CountingFilter, SpectralFilter } from '../../filters/counting.js';
import { planSlice, unionFpr } from '../../filters/scalable.js';
import { HASH_SCHEMES, freshSeedHex, isHashScheme, seedFromHex, type HashSchemeId } from '../../hash/scheme.js';
import { keyCount, sliceKeys, type Keys, type XxHash } from '../../hash/xxhash.js';
import type { BitThread } from './bit-thread.js';
import { CHUNK_PAYLOAD_BYTES, decodeChunk, encodeChunk } from '../chunks.js';
import type { StoreEnv } from './env.js';
import { faultPoint } from '../faults.js';
import { decodeJournalRecord, encodeCountingRecord, encodeJournalRecord, JOURNAL_HEADER_BYTES } from './journal.js';
import { checkpointKey, chunkEpochRange, chunkKey, chunkKeyParts, epochKey, fenceKey, journalEpochRange, journalKey, journalKeySeq } from './keys.js';
import { tryLock } from './lock.js';
import { readHeader } from './metadata.js';
import {
  checkEpochSupported,
  readCheckpointRecord,
  readFenceRecord,
  type CheckpointRecord,
  type EpochHeader,
  type SliceSpec,
} from '../records.js';
import { filterGeometries, hashSlice } from '../../filters/keying.js';
import { sliceShape, strategyOf } from '../../filters/strategy.js';

/** Bytes of chunks written per checkpoint transaction: small transactions let LMDB reuse pages. */
export const CHECKPOINT_TXN_BYTES = 16 * 2 ** 20;

/** Most slices an epoch may grow to; slice j holds capacity * 2^j URLs, so this is never reached in practice. */
export const MAX_SLICES = 24;

export interface EpochCounts {
  /** URLs submitted to add / addIfAbsent. */
  readonly submitted: number;
  /** URLs that were new when added. */
  readonly added: number;
}

export interface SliceSummary {
  readonly capacityUrls: number;
  readonly fprTarget: number;
  readonly mBits: number;
  readonly k: number;
  readonly filters: number;
  readonly added: number;
  readonly fillRatio: number;
  readonly estimatedFpr: number;
}

export interface EpochSummary extends EpochCounts {
  readonly estimatedDistinct: number;
  /** Set bits over all bits of all slices. */
  readonly fillRatio: number;
  /** False-positive rate of a query now: the union over slices of each slice's rate from its fill. */
  readonly estimatedFpr: number;
  readonly slices: readonly SliceSummary[];
}

export type CheckpointOutcome = 'written' | 'clean' | 'busy';

interface Slice {
  readonly spec: SliceSpec;
  /** What is stored: the Bloom filters, or a counting slice's primary and secondary counters. */
  readonly filters: StoredFilter[];
  /** The Bloom filters (empty for a counting slice). */
  readonly bloom: BloomFilter[];
  /** A counting slice's spectral filter over `filters`. */
  readonly spectral: SpectralFilter | undefined;
  readonly seeds: bigint[];
  /** Index of the slice's first filter among all filters of the epoch (chunk keys use it). */
  readonly offset: number;
}

/**
 * The working copy of one epoch's filters: loaded from its chunks plus the journal tail, kept up
 * to date with records that other processes commit, and written back by checkpoints.
 *
 * Invariant: the in-memory bits are exactly the stored chunks as loaded, ORed with every journal
 * record up to `appliedSeq` (bits are only ever ORed in, so replaying a record twice is harmless).
 * If a write transaction fails after bits were set in memory, the copy is marked poisoned and
 * reloaded from the store before it is used again, so bits of an unacknowledged batch never reach
 * a checkpoint or an answer.
 */
export class EpochFilters {
  readonly #env: StoreEnv;
  readonly #hash: XxHash;
  #header: EpochHeader;
  /** The epoch's hash scheme (checked by checkSupported before construction). */
  readonly #scheme: HashSchemeId;
  #slices: Slice[] = [];
  #filterCount = 0;
  #appliedSeq = 0;
  #counts: EpochCounts = { submitted: 0, added: 0 };
  /** New URLs per slice from the journal (added by this store's adds). */
  #sliceAdded: number[] = [];
  /** Merge generation the in-memory copy reflects, and new URLs per slice that merges brought. */
  #merges = 0;
  #mergedSliceAdded: number[] = [];
  #journalBytesSinceCheckpoint = 0;
  #chunkBytesRead = 0;
  /** Reused bytes of the journal record being written. */
  #recordBytes = Buffer.alloc(0);
  #poisoned = false;
  #record = new Uint32Array(0);
  #flags = new Uint8Array(0);
  /** Bloom filters in shared memory, for a bit thread (SeenStoreOptions.threads). */
  readonly #shared: boolean;
  /** The slices as decideRange sees them; rebuilt when the slices change. */
  #target: DecideTarget | undefined;
  /**
   * LMDB's id of the write transaction of this copy's last committed batch. A batch whose own
   * transaction id follows it directly knows that nothing was committed in between, by any
   * process, and skips catching up.
   */
  #batchTxnId = -1;

  private constructor(env: StoreEnv, hash: XxHash, header: EpochHeader, shared: boolean) {
    this.#env = env;
    this.#hash = hash;
    this.#header = header;
    this.#scheme = header.hashScheme as HashSchemeId;
    this.#shared = shared;
  }

  /**
   * Loads the epoch's filters from the store: stored chunks, then the journal after the
   * checkpoint. `shared`: Bloom filters in shared memory, so that a BitThread can take batches.
   */
  static load(env: StoreEnv, hash: XxHash, header: EpochHeader, options: { readonly shared?: boolean } = {}): EpochFilters {
    checkEpochSupported(header);
    const filters = new EpochFilters(env, hash, header, options.shared ?? false);
    filters.#loadFresh();
    return filters;
  }

  get header(): EpochHeader {
    return this.#header;
  }

  /** Filters over all slices: the number of hashes computed per URL. */
  get filterCount(): number {
    return this.#filterCount;
  }

  get sliceCount(): number {
    return this.#slices.length;
  }

  get appliedSeq(): number {
    return this.#appliedSeq;
  }

  get counts(): EpochCounts {
    return this.#counts;
  }

  /** New URLs per slice: from adds, plus the estimate of what merges brought in. */
  get sliceAdded(): readonly number[] {
    return this.#slices.map((_, j) => this.#sliceCount(j));
  }

  #sliceCount(j: number): number {
    return (this.#sliceAdded[j] ?? 0) + (this.#mergedSliceAdded[j] ?? 0);
  }

  /** Distinct URLs merges brought in (estimated from the fill before and after each merge). */
  get mergedUrls(): number {
    return this.#mergedSliceAdded.reduce((sum, n) => sum + n, 0);
  }

  /** The bytes of every filter of every slice, in filter order (views, not copies). */
  filterBytes(): Uint8Array[] {
    return this.#slices.flatMap((slice) => slice.filters.map((filter) => filter.bytes));
  }

  /** Bytes of stored chunks read since the last call (for StoreEnv.releaseMappedPages); resets. */
  takeChunkBytesRead(): number {
    const bytes = this.#chunkBytesRead;
    this.#chunkBytesRead = 0;
    return bytes;
  }

  get journalBytesSinceCheckpoint(): number {
    return this.#journalBytesSinceCheckpoint;
  }

  summary(): EpochSummary {
    let ones = 0;
    let bits = 0;
    let estimatedDistinct = 0;
    const slices = this.#slices.map((slice, j) => {
      let sliceFpr = 1;
      let sliceOnes = 0;
      let sliceBits = 0;
      // A counting slice answers from its primary alone; its fill is that of its counters.
      const answering = slice.spectral === undefined ? slice.filters : [slice.spectral.primary];
      for (const filter of answering) {
        sliceFpr *= filter.currentFpr;
        sliceOnes += filter.onesBits;
        sliceBits += filter instanceof CountingFilter ? filter.cells : filter.geometry.mBits;
      }
      ones += sliceOnes;
      bits += sliceBits;
      estimatedDistinct += slice.filters[0]!.estimatedCount;
      return {
        capacityUrls: slice.spec.capacityUrls,
        fprTarget: slice.spec.fprTarget,
        mBits: slice.spec.mBits,
        k: slice.spec.k,
        filters: slice.filters.length,
        added: this.#sliceCount(j),
        fillRatio: sliceOnes / sliceBits,
        estimatedFpr: sliceFpr,
      };
    });
    return {
      ...this.#counts,
      estimatedDistinct: Math.round(estimatedDistinct),
      fillRatio: ones / bits,
      estimatedFpr: unionFpr(slices.map((slice) => slice.estimatedFpr)),
      slices,
    };
  }

  /** Bytes of filter payload in chunk `region` of filter `index` (all filters of all slices). */
  chunkPayloadBytes(index: number, region: number): number {
    const filter = this.#filterAt(index);
    return filter === undefined ? 0 : filter.region(region).length;
  }

  /**
   * Hashes `keys` for every filter of every slice into `words`: for key i and filter f (counted
   * over all slices), the low and high halves of its xxh64 (of the URL key, or of the key the
   * slice's keying derives for that filter) are words[2 * (i * F + f)] and the next word,
   * F = filterCount.
   */
  hashKeys(keys: Keys, words: Uint32Array): void {
    const stride = 2 * this.#filterCount;
    for (const slice of this.#slices) hashSlice(this.#hash, slice.spec.keying, keys, slice.seeds, words, stride, 2 * slice.offset);
  }

  /** True when some slice holds URL i of `words` (in a slice, every filter must agree). */
  has(words: Uint32Array, i: number): boolean {
    const base = 2 * i * this.#filterCount;
    for (const slice of this.#slices) if (EpochFilters.#sliceHas(slice, words, base)) return true;
    return false;
  }

  static #sliceHas(slice: Slice, words: Uint32Array, base: number): boolean {
    const at = base + 2 * slice.offset;
    if (slice.spectral !== undefined) return slice.spectral.primary.count(words[at + 1]!, words[at]!) > 0;
    return allHold(slice.bloom, words, at);
  }

  /** True for an epoch of the counting strategy (its slices hold counters). */
  get counting(): boolean {
    return this.#header.slices[0]!.keying?.kind === 'counting-v1';
  }

  /**
   * How many times URL i of `words` was added (minus deletes), by the slice that holds it: the
   * recurring-minimum estimate of a counting epoch; 0 when no slice holds it.
   */
  count(words: Uint32Array, i: number): number {
    const base = 2 * i * this.#filterCount;
    for (const slice of this.#slices) {
      const at = base + 2 * slice.offset;
      const n = slice.spectral?.count(words[at + 1]!, words[at]!, words[at + 3]!, words[at + 2]!) ?? 0;
      if (n > 0) return n;
    }
    return 0;
  }

  /** Brings the in-memory copy up to what the store holds now. Call after env.refresh() or inside a write. */
  catchUp(): void {
    if (this.#poisoned) {
      this.#loadFresh();
      return;
    }
    this.#refreshHeader();
    const checkpoint = this.#readCheckpoint();
    if (this.counting && checkpoint.seq > this.#appliedSeq) {
      // Counters cannot be OR-ed: another process's checkpoint replaced the chunks; start from them.
      this.#loadFresh();
      return;
    }
    if (checkpoint.merges !== this.#merges) {
      // A merge ORed bits into the chunks that no journal record carries: start from the chunks.
      this.#loadFresh();
      return;
    }
    if (checkpoint.seq > this.#appliedSeq) {
      // Records up to the checkpoint may already be trimmed from the journal; the chunks hold them.
      this.#orStoredChunks(0);
      this.#appliedSeq = checkpoint.seq;
      this.#counts = { submitted: checkpoint.submitted, added: checkpoint.added };
      this.#sliceAdded = [...checkpoint.sliceAdded];
    }
    this.#replayJournal();
  }

  /**
   * The add-if-absent decision for `keys`, hashed into `words` by hashKeys, and its journal
   * records, in one LMDB write transaction: LMDB serialises writers across processes, and catching
   * up first means every batch any process committed is seen before deciding. On return the
   * records are committed and synced; answers[i] is true for URLs that were new.
   */
  addBatch(keys: Keys, words: Uint32Array, answers: boolean[] | undefined, expectOpen: () => void): number {
    const added = this.#writeBatch(keys, words, expectOpen, 'adding a batch to', (hashes) =>
      this.counting ? this.#decideCounting(keys, hashes, answers) : this.#decideAll(keys, hashes, answers),
    );
    faultPoint('add:after-commit');
    return added;
  }

  /**
   * As addBatch, with the bits set on `thread` while this thread hashes the keys (inside the
   * write transaction, after catching up, so no rehash is ever needed). Batches the bit thread
   * cannot take (a counting epoch, a newest slice with less room than the batch has URLs, filters
   * not in shared memory) are hashed and decided here, as by addBatch. A key the hashing refuses
   * (a lone surrogate) fails the batch after the bit thread may have set bits of earlier chunks:
   * the transaction is aborted and the copy reloaded, as for any failed batch.
   */
  addBatchOn(thread: BitThread, keys: Keys, answers: boolean[] | undefined, expectOpen: () => void): number {
    const added = this.#inWriteTransaction(expectOpen, 'adding a batch to', () => {
      const count = keyCount(keys);
      const target = this.#decideTarget();
      if (this.counting || this.#roomInNewest() < count || !thread.accepts(target)) {
        const words = this.#rehash(keys);
        return this.counting ? this.#decideCounting(keys, words, answers) : this.#decideAll(keys, words, answers);
      }
      const stride = target.stride;
      const { words, flags } = thread.buffers(count * stride, count);
      const decided = thread.decide(target, count, (from, to) => this.hashKeys(sliceKeys(keys, from, to), words.subarray(from * stride)));
      target.newest.forEach((filter, f) => filter.countSetBits(decided.setBits[f]!));
      this.#collect(words, flags, 0, count, answers);
      this.#appendRecord(this.#slices.length - 1, count, decided.fresh);
      return decided.fresh;
    });
    faultPoint('add:after-commit');
    return added;
  }

  /**
   * One batch's write transaction with keys hashed before it: rehashed when another process
   * added a slice meanwhile (caught up in #inWriteTransaction), then `change` decides and journals.
   */
  #writeBatch(keys: Keys, words: Uint32Array, expectOpen: () => void, doing: string, change: (words: Uint32Array) => number): number {
    const hashedFor = this.#filterCount;
    return this.#inWriteTransaction(expectOpen, doing, () => change(this.#filterCount === hashedFor ? words : this.#rehash(keys)));
  }

  /**
   * One batch's write transaction: the epoch must still be open (`expectOpen`), the copy is
   * caught up first, then `change` decides and journals. If anything fails after the copy was
   * touched, it is poisoned and reloaded before its next use, so bits of an uncommitted batch
   * never stay in memory.
   */
  #inWriteTransaction(expectOpen: () => void, doing: string, change: () => number): number {
    let result = 0;
    let touched = false;
    let txnId = -1;
    try {
      this.#env.write(() => {
        expectOpen();
        txnId = this.#env.writeTxnId();
        if (this.#poisoned || txnId !== this.#batchTxnId + 1) this.catchUp();
        touched = true;
        result = change();
        faultPoint('add:before-commit');
      });
      this.#batchTxnId = txnId;
    } catch (error) {
      if (touched) this.#poisoned = true;
      throw asStoreError(error, `${doing} ${this.#header.scope}/${this.#header.epoch}`);
    }
    return result;
  }

  /**
   * Counting epochs: every URL is counted in the slice that holds it (the oldest with a count), a
   * URL no slice holds goes to the newest, and the slice grows like a Bloom epoch's. One journal
   * record per slice touched, holding every URL's hashes in order, so replay repeats exactly the
   * same operations on the same counters.
   */
  #decideCounting(keys: Keys, words: Uint32Array, answers: boolean[] | undefined): number {
    return this.#decideGrowing(keys, words, (hashes, start, count) => {
      const newest = this.#slices.length - 1;
      let room = this.#roomInNewest();
      const stride = 2 * this.#filterCount;
      const routed: number[][] = this.#slices.map(() => []);
      let fresh = 0;
      let i = start;
      for (; i < count; i++) {
        const base = i * stride;
        let home = this.#slices.findIndex((slice) => EpochFilters.#sliceHas(slice, hashes, base));
        if (home < 0) {
          if (room <= 0 && this.#slices.length < MAX_SLICES) break;
          home = newest;
          room--;
          fresh++;
        }
        const slice = this.#slices[home]!;
        const at = base + 2 * slice.offset;
        const wasNew = slice.spectral!.add(hashes[at + 1]!, hashes[at]!, hashes[at + 3]!, hashes[at + 2]!);
        if (answers !== undefined) answers[i] = wasNew;
        routed[home]!.push(i);
      }
      routed.forEach((urls, j) => {
        if (urls.length > 0) this.#appendCountingRecord('add', j, urls, j === newest ? fresh : 0, hashes);
      });
      return { consumed: i - start, fresh };
    });
  }

  /**
   * Deletes one occurrence of each URL (counting epochs only) from the slice that holds it, in one
   * write transaction with its journal records; URLs no slice holds are skipped. Returns how many
   * were deleted.
   */
  deleteBatch(keys: readonly string[], words: Uint32Array, expectOpen: () => void): number {
    return this.#writeBatch(keys, words, expectOpen, 'deleting from', (hashes) => {
      let deleted = 0;
      const stride = 2 * this.#filterCount;
      const routed: number[][] = this.#slices.map(() => []);
      for (let i = 0; i < keys.length; i++) {
        const base = i * stride;
        const home = this.#slices.findIndex((slice) => EpochFilters.#sliceHas(slice, hashes, base));
        if (home < 0) continue;
        const slice = this.#slices[home]!;
        const at = base + 2 * slice.offset;
        slice.spectral!.delete(hashes[at + 1]!, hashes[at]!, hashes[at + 3]!, hashes[at + 2]!);
        routed[home]!.push(i);
        deleted++;
      }
      routed.forEach((urls, j) => {
        if (urls.length > 0) this.#appendCountingRecord('delete', j, urls, urls.length, hashes);
      });
      return deleted;
    });
  }

  /** Journals URLs `urls` of `words` for slice `j` of a counting epoch (inside the write transaction). */
  #appendCountingRecord(op: 'add' | 'delete', j: number, urls: readonly number[], changed: number, words: Uint32Array): void {
    const slice = this.#slices[j]!;
    const sliceWords = 2 * slice.filters.length;
    const stride = 2 * this.#filterCount;
    const record = new Uint32Array(sliceWords * urls.length);
    urls.forEach((i, n) => {
      for (let w = 0; w < sliceWords; w++) record[n * sliceWords + w] = words[i * stride + 2 * slice.offset + w]!;
    });
    const seq = this.#appliedSeq + 1;
    const { scope, epoch } = this.#header;
    const value = encodeCountingRecord(this.#hash, op, j, urls.length, changed, slice.filters.length, record);
    this.#env.journalDb.putSync(journalKey(scope, epoch, seq), value);
    this.#appliedSeq = seq;
    this.#countRecord(op, j, op === 'add' ? urls.length : 0, op === 'add' ? changed : 0);
    this.#journalBytesSinceCheckpoint += value.length;
  }

  #countRecord(op: string, slice: number, submitted: number, added: number): void {
    if (op === 'delete') return;
    this.#counts = { submitted: this.#counts.submitted + submitted, added: this.#counts.added + added };
    this.#sliceAdded[slice] = (this.#sliceAdded[slice] ?? 0) + added;
  }

  #rehash(keys: Keys): Uint32Array {
    const words = new Uint32Array(2 * keyCount(keys) * this.#filterCount);
    this.hashKeys(keys, words);
    return words;
  }

  /** Decides every URL into journal records, starting a new slice whenever the newest one is full. */
  #decideAll(keys: Keys, words: Uint32Array, answers: boolean[] | undefined): number {
    return this.#decideGrowing(keys, words, (hashes, start, count) => {
      const newest = this.#slices.length - 1;
      const room = this.#roomInNewest();
      const decided = this.#decide(hashes, start, count, room <= 0 ? Infinity : room, answers);
      this.#appendRecord(newest, decided.consumed, decided.fresh);
      return decided;
    });
  }

  /**
   * Runs `step` from the first URL until every URL is decided; before each step, when the newest
   * slice is full and the epoch may grow, appends a slice and rehashes the keys for it. A step
   * decides URLs from `start` (stopping when the newest slice fills) and says how many it took and
   * how many were new.
   */
  #decideGrowing(keys: Keys, words: Uint32Array, step: (words: Uint32Array, start: number, count: number) => { consumed: number; fresh: number }): number {
    const count = keyCount(keys);
    let added = 0;
    for (let start = 0; start < count; ) {
      if (this.#grewForRoom()) {
        words = this.#rehash(keys);
        continue;
      }
      const { consumed, fresh } = step(words, start, count);
      added += fresh;
      start += consumed;
    }
    return added;
  }

  /**
   * Decides URLs from `start` until `count` or until `room` of them were new (decideRange); the
   * new URLs' hashes for the newest slice go to the record buffer, their answers to `answers`.
   */
  #decide(words: Uint32Array, start: number, count: number, room: number, answers: boolean[] | undefined): Decided {
    const target = this.#decideTarget();
    for (const filter of target.newest) filter.warm((count - start) * filter.geometry.k);
    const flags = this.#flagsFor(count);
    const decided = decideRange(target, words, start, count, room, flags);
    this.#collect(words, flags, start, start + decided.consumed, answers);
    return decided;
  }

  /** The slices as decideRange sees them (the same object until the slices change). */
  #decideTarget(): DecideTarget {
    if (this.#target !== undefined) return this.#target;
    const slices = this.#slices;
    const newest = slices[slices.length - 1]!;
    this.#target = {
      older: slices.slice(0, -1).map((slice) => ({ filters: slice.bloom, at: 2 * slice.offset })),
      newest: newest.bloom,
      newestAt: 2 * newest.offset,
      stride: 2 * this.#filterCount,
    };
    return this.#target;
  }

  /** A reused flag per URL of a batch (decideRange's output). */
  #flagsFor(count: number): Uint8Array {
    if (this.#flags.length < count) this.#flags = new Uint8Array(Math.max(count, 1024));
    return this.#flags;
  }

  /**
   * From decideRange's flags for URLs from..to - 1: their answers, and the new URLs' hashes for
   * the newest slice, in order, into the record buffer (from its start).
   */
  #collect(words: Uint32Array, flags: Uint8Array, from: number, to: number, answers: boolean[] | undefined): void {
    const newest = this.#slices[this.#slices.length - 1]!;
    const sliceWords = 2 * newest.filters.length;
    const stride = 2 * this.#filterCount;
    if (this.#record.length < sliceWords * (to - from)) this.#record = new Uint32Array(sliceWords * (to - from));
    const record = this.#record;
    let fresh = 0;
    for (let i = from; i < to; i++) {
      const absent = flags[i] === 1;
      if (answers !== undefined) answers[i] = absent;
      if (!absent) continue;
      const at = i * stride + 2 * newest.offset;
      const into = fresh * sliceWords;
      for (let w = 0; w < sliceWords; w++) record[into + w] = words[at + w]!;
      fresh++;
    }
  }

  #appendRecord(slice: number, submitted: number, added: number): void {
    const seq = this.#appliedSeq + 1;
    const { scope, epoch } = this.#header;
    const filterCount = this.#slices[slice]!.filters.length;
    if (this.#recordBytes.length < JOURNAL_HEADER_BYTES + 8 * filterCount * added) this.#recordBytes = Buffer.allocUnsafe(JOURNAL_HEADER_BYTES + this.#record.byteLength);
    // LMDB copies the value into the transaction's pages: the scratch is free again after the put.
    const value = encodeJournalRecord(this.#hash, slice, submitted, filterCount, this.#record, added, this.#recordBytes);
    this.#env.journalDb.putSync(journalKey(scope, epoch, seq), value);
    this.#appliedSeq = seq;
    this.#counts = { submitted: this.#counts.submitted + submitted, added: this.#counts.added + added };
    this.#sliceAdded[slice] = (this.#sliceAdded[slice] ?? 0) + added;
    this.#journalBytesSinceCheckpoint += value.length;
  }

  /** Starts a new slice when the newest is full (and the epoch may grow); the caller must rehash. */
  #grewForRoom(): boolean {
    if (this.#roomInNewest() > 0 || this.#slices.length >= MAX_SLICES) return false;
    this.#growSlice();
    return true;
  }

  /** New URLs the newest slice still takes before it is full (negative once past it, at MAX_SLICES). */
  #roomInNewest(): number {
    const newest = this.#slices.length - 1;
    return this.#slices[newest]!.spec.capacityUrls - this.#sliceCount(newest);
  }

  /** Appends a slice to the epoch header (inside the add's write transaction). */
  #growSlice(): void {
    const header = this.#header;
    const index = header.slices.length;
    const first = header.slices[0]!;
    const strategy = strategyOf(first, header.growth);
    const plan = planSlice(index, header.capacityUrls, header.fprTarget, header.growth, (n, p) => sliceShape(strategy, n, p));
    const spec: SliceSpec = {
      layout: first.layout,
      mBits: plan.mBits,
      k: plan.k,
      capacityUrls: plan.capacityUrls,
      fprTarget: plan.fprTarget,
      seeds: first.seeds.map(() => freshSeedHex()),
      ...(plan.shape.keying === undefined ? {} : { keying: plan.shape.keying }),
      createdAtMs: Date.now(),
    };
    const grown: EpochHeader = { ...header, slices: [...header.slices, spec] };
    this.#env.putMeta(epochKey(header.scope, header.epoch), grown);
    this.#header = grown;
    this.#addSlices(index);
  }

  /** Re-reads the header; slices added by another process are allocated and loaded. */
  #refreshHeader(): void {
    const header = readHeader(this.#env, this.#header.scope, this.#header.epoch);
    this.#header = header;
    if (header.slices.length > this.#slices.length) {
      const from = this.#slices.length;
      this.#addSlices(from);
      this.#orStoredChunks(this.#slices[from]!.offset);
    }
  }

  #addSlices(from: number): void {
    this.#target = undefined;
    for (let j = from; j < this.#header.slices.length; j++) {
      const spec = this.#header.slices[j]!;
      const seeds = spec.seeds.map(seedFromHex);
      const options = { regionBytes: CHUNK_PAYLOAD_BYTES, scheme: this.#scheme };
      if (spec.keying?.kind === 'counting-v1') {
        const primary = new CountingFilter(spec.mBits / 8, spec.k, options);
        const secondary = new CountingFilter(spec.keying.secondaryCells, spec.k, options);
        this.#slices.push({ spec, filters: [primary, secondary], bloom: [], spectral: new SpectralFilter(primary, secondary), seeds, offset: this.#filterCount });
        this.#filterCount += spec.seeds.length;
        continue;
      }
      const bloom = filterGeometries(spec).map((geometry) => new BloomFilter(geometry, { ...options, memory: this.#shared }));
      this.#slices.push({
        spec,
        filters: bloom,
        bloom,
        spectral: undefined,
        seeds,
        offset: this.#filterCount,
      });
      this.#filterCount += spec.seeds.length;
    }
  }

  #filterAt(index: number): StoredFilter | undefined {
    for (const slice of this.#slices) {
      if (index < slice.offset + slice.filters.length) return slice.filters[index - slice.offset];
    }
    return undefined;
  }

  /**
   * ORs `incoming` (the bytes of every filter of every slice, as filterBytes() gives them) into
   * the stored chunks and this copy, in one write transaction: the merge is all there or not at
   * all. `check` runs inside the transaction on the caught-up header and throws to refuse. The
   * checkpoint record's merge generation is bumped, so other processes reload the chunks, and the
   * distinct URLs the merge brought in (estimated from the fill) count toward the slices'
   * capacities. Returns that estimate.
   */
  mergeFilters(incoming: readonly Uint8Array[], check: (header: EpochHeader) => void): number {
    const { scope, epoch } = this.#header;
    try {
      return this.#env.write(() => {
        this.catchUp();
        check(this.#header);
        if (this.counting) throw new SeenStoreError('INCOMPATIBLE', `epoch ${scope}/${epoch} counts: counting epochs cannot be merged (counters would have to be added, not OR-ed)`);
        if (incoming.length !== this.#filterCount) {
          throw new SeenStoreError('USAGE', `merge: ${incoming.length} filters given, epoch ${scope}/${epoch} has ${this.#filterCount}`);
        }
        const before = this.#slices.map((slice) => slice.filters[0]!.estimatedCount);
        this.#poisoned = true;
        incoming.forEach((bytes, index) => {
          const filter = this.#filterAt(index)!;
          for (let region = 0; region < filter.regionCount; region++) {
            const add = bytes.subarray(region * CHUNK_PAYLOAD_BYTES, (region + 1) * CHUNK_PAYLOAD_BYTES);
            if (add.every((b) => b === 0)) continue;
            this.#orIntoStoredChunk(index, region, add);
            filter.orRegion(region, add);
          }
        });
        const gained = this.#slices.map((slice, j) => Math.max(0, Math.round(slice.filters[0]!.estimatedCount - before[j]!)));
        const previous = this.#readCheckpoint();
        const mergedSliceAdded = this.#slices.map((_, j) => (previous.mergedSliceAdded[j] ?? 0) + gained[j]!);
        this.#env.putMeta(checkpointKey(scope, epoch), { ...previous, merges: previous.merges + 1, mergedSliceAdded, atMs: Date.now() });
        faultPoint('merge:before-commit');
        this.#merges = previous.merges + 1;
        this.#mergedSliceAdded = mergedSliceAdded;
        this.#poisoned = false;
        return gained.reduce((sum, n) => sum + n, 0);
      });
    } catch (error) {
      this.#poisoned = true;
      throw asStoreError(error, `merging into ${scope}/${epoch}`);
    }
  }

  /**
   * Writes the dirty chunks back (ORed into what is stored, so checkpoints of several processes
   * never lose bits), then records the checkpoint and trims the journal it covers. Exclusive per
   * scope through a lock file plus a fencing token checked in every transaction.
   */
  async checkpoint(lockStaleMs: number): Promise<CheckpointOutcome> {
    if (this.#poisoned) this.#loadFresh();
    const { scope } = this.#header;
    const lock = await tryLock(this.#env.dir, `checkpoint-${scope}`, lockStaleMs);
    if (lock === undefined) return 'busy';
    try {
      this.#env.refresh();
      this.catchUp();
      const token = this.#env.write(() => {
        const current = this.#env.getMeta(fenceKey(scope));
        const next = (current === undefined ? 0 : readFenceRecord(current).token) + 1;
        this.#env.putMeta(fenceKey(scope), { v: 1, token: next });
        return next;
      });
      const fenced = (): void => {
        const current = this.#env.getMeta(fenceKey(scope));
        if (!lock.held() || current === undefined || readFenceRecord(current).token !== token || this.#poisoned) {
          throw new SeenStoreError('STORE_LOCKED', `checkpoint of ${scope} lost its lock; another process took over`);
        }
      };
      if (this.counting) return this.#checkpointCounting(fenced);
      const seq = this.#appliedSeq;
      const counts = this.#counts;
      const sliceAdded = [...this.#sliceAdded];
      const dirty = this.#slices.flatMap((slice) =>
        slice.filters.flatMap((filter, f) => filter.dirtyRegions().map((region) => [slice.offset + f, region] as const)),
      );
      if (dirty.length === 0 && seq <= this.#readCheckpoint().seq) return 'clean';
      const perTxn = Math.max(1, Math.floor(CHECKPOINT_TXN_BYTES / CHUNK_PAYLOAD_BYTES));
      for (let start = 0; start < dirty.length; start += perTxn) {
        const batch = dirty.slice(start, start + perTxn);
        this.#env.write(() => {
          fenced();
          for (const [index, region] of batch) this.#writeChunkOr(index, region);
        });
        for (const [index, region] of batch) this.#filterAt(index)!.markClean(region);
        faultPoint('checkpoint:after-chunk-txn');
        await yieldToLoop();
      }
      faultPoint('checkpoint:before-trim');
      this.#env.write(() => {
        fenced();
        this.#recordCheckpoint(seq, counts, sliceAdded);
      });
      faultPoint('checkpoint:after-trim');
      this.#journalBytesSinceCheckpoint = 0;
      await this.#env.flushed();
      return 'written';
    } catch (error) {
      throw asStoreError(error, `checkpointing ${scope}/${this.#header.epoch}`);
    } finally {
      await lock.release();
    }
  }

  /**
   * A counting epoch's checkpoint: counters cannot be OR-ed into what is stored, and a record must
   * never be applied twice, so the chunks, the checkpoint record and the journal trim go in one
   * write transaction, after catching up inside it: the stored chunks are always exactly the state
   * at the recorded sequence. (It costs one transaction as large as the dirty chunks.)
   */
  async #checkpointCounting(fenced: () => void): Promise<CheckpointOutcome> {
    let written: (readonly [number, number])[] = [];
    const outcome = this.#env.write((): CheckpointOutcome => {
      fenced();
      this.catchUp();
      const dirty = this.#slices.flatMap((slice) =>
        slice.filters.flatMap((filter, f) => filter.dirtyRegions().map((region) => [slice.offset + f, region] as const)),
      );
      if (dirty.length === 0 && this.#appliedSeq <= this.#readCheckpoint().seq) return 'clean';
      const { scope, epoch } = this.#header;
      for (const [index, region] of dirty) {
        this.#env.chunksDb.putSync(chunkKey(scope, epoch, index, region), encodeChunk(this.#hash, this.#filterAt(index)!.region(region)));
      }
      this.#recordCheckpoint(this.#appliedSeq, this.#counts, [...this.#sliceAdded]);
      faultPoint('checkpoint:before-trim');
      written = dirty;
      return 'written';
    });
    for (const [index, region] of written) this.#filterAt(index)!.markClean(region);
    if (outcome === 'written') {
      faultPoint('checkpoint:after-trim');
      this.#journalBytesSinceCheckpoint = 0;
      await this.#env.flushed();
    }
    return outcome;
  }

  #writeChunkOr(index: number, region: number): void {
    this.#orIntoStoredChunk(index, region, this.#filterAt(index)!.region(region));
  }

  /** Writes chunk `region` of filter `index` as (stored chunk OR `bytes`); inside a write transaction. */
  #orIntoStoredChunk(index: number, region: number, bytes: Uint8Array): void {
    const key = chunkKey(this.#header.scope, this.#header.epoch, index, region);
    const merged = Buffer.from(bytes);
    const stored = this.#env.chunksDb.getBinary(key);
    if (stored !== undefined) {
      const payload = decodeChunk(this.#hash, stored, this.#chunkWhere(index, region), merged.length);
      for (let i = 0; i < merged.length; i++) merged[i]! |= payload[i]!;
    }
    this.#env.chunksDb.putSync(key, encodeChunk(this.#hash, merged));
  }

  #recordCheckpoint(seq: number, counts: EpochCounts, sliceAdded: readonly number[]): void {
    const { scope, epoch } = this.#header;
    const previous = this.#readCheckpoint();
    if (seq <= previous.seq) return;
    const record: CheckpointRecord = { ...previous, seq, ...counts, sliceAdded, atMs: Date.now() };
    this.#env.putMeta(checkpointKey(scope, epoch), record);
    const trim = this.#env.journalDb.getKeys(journalEpochRange(scope, epoch, 0, seq + 1));
    for (const key of trim) this.#env.journalDb.removeSync(key);
  }

  #readCheckpoint(): CheckpointRecord {
    const value = this.#env.getMeta(checkpointKey(this.#header.scope, this.#header.epoch));
    if (value === undefined) {
      throw new SeenStoreError('STORE_CORRUPT', `epoch ${this.#header.scope}/${this.#header.epoch} has no checkpoint record`);
    }
    return readCheckpointRecord(value);
  }

  #loadFresh(): void {
    this.#header = readHeader(this.#env, this.#header.scope, this.#header.epoch);
    this.#slices = [];
    this.#filterCount = 0;
    this.#addSlices(0);
    const checkpoint = this.#readCheckpoint();
    this.#orStoredChunks(0);
    this.#appliedSeq = checkpoint.seq;
    this.#counts = { submitted: checkpoint.submitted, added: checkpoint.added };
    this.#sliceAdded = [...checkpoint.sliceAdded];
    this.#merges = checkpoint.merges;
    this.#mergedSliceAdded = [...checkpoint.mergedSliceAdded];
    this.#journalBytesSinceCheckpoint = 0;
    this.#poisoned = false;
    this.#replayJournal();
  }

  /** ORs the stored chunks of filters `fromIndex`.. into memory. */
  #orStoredChunks(fromIndex: number): void {
    const { scope, epoch } = this.#header;
    const chunks = this.#env.chunksDb;
    // Keys, then each value through lmdb's reused buffer: no 64 KB garbage per chunk (a 131 MB
    // filter would leave 131 MB of it behind, in the RSS until collected).
    for (const key of chunks.getKeys(chunkEpochRange(scope, epoch, fromIndex))) {
      const { filter: index, chunk: region } = chunkKeyParts(key);
      const filter = this.#filterAt(index);
      if (filter === undefined || !Number.isInteger(region) || region < 0 || region >= filter.regionCount) {
        throw new SeenStoreError('STORE_CORRUPT', `${this.#chunkWhere(index, region)}: no such filter or chunk in the epoch`);
      }
      const value = chunks.getBinaryFast(key);
      if (value === undefined) throw new SeenStoreError('STORE_CORRUPT', `${this.#chunkWhere(index, region)}: vanished while being read`);
      filter.orRegion(region, decodeChunk(this.#hash, value, this.#chunkWhere(index, region), filter.region(region).length));
      this.#chunkBytesRead += value.length;
    }
  }

  #replayJournal(): void {
    const { scope, epoch } = this.#header;
    const range = this.#env.journalDb.getRange(journalEpochRange(scope, epoch, this.#appliedSeq + 1));
    for (const { key, value } of range) {
      const seq = journalKeySeq(key);
      const where = `journal record ${scope}/${epoch}/${seq}`;
      if (seq !== this.#appliedSeq + 1) {
        throw new SeenStoreError('STORE_CORRUPT', `${where}: expected sequence ${this.#appliedSeq + 1}`);
      }
      const record = decodeJournalRecord(this.#hash, value, where);
      const slice = this.#slices[record.slice];
      if (slice === undefined || record.filterCount !== slice.filters.length) {
        throw new SeenStoreError('STORE_CORRUPT', `${where}: names slice ${record.slice} with ${record.filterCount} filters, which the epoch does not have`);
      }
      if ((record.op === 'bits') !== (slice.spectral === undefined)) {
        throw new SeenStoreError('STORE_CORRUPT', `${where}: a ${record.op} record in a ${slice.spectral === undefined ? 'Bloom' : 'counting'} slice`);
      }
      if (record.op === 'bits') this.#apply(slice, record.words, record.entries);
      else this.#applyCounting(slice.spectral!, record.op, record.words, record.entries);
      this.#appliedSeq = seq;
      this.#countRecord(record.op, record.slice, record.submitted, record.added);
      this.#journalBytesSinceCheckpoint += JOURNAL_HEADER_BYTES + record.words.byteLength;
    }
  }

  #apply(slice: Slice, words: Uint32Array, count: number): void {
    const filters = slice.bloom;
    const stride = 2 * filters.length;
    // Filter by filter: setting bits is order-free, and each filter's loop stays in its own array.
    for (let f = 0; f < filters.length; f++) filters[f]!.addAll(words, 2 * f, stride, count);
  }

  #applyCounting(spectral: SpectralFilter, op: 'add' | 'delete', words: Uint32Array, count: number): void {
    for (let i = 0; i < count; i++) {
      const at = 4 * i;
      if (op === 'add') spectral.add(words[at + 1]!, words[at]!, words[at + 3]!, words[at + 2]!);
      else spectral.delete(words[at + 1]!, words[at]!, words[at + 3]!, words[at + 2]!);
    }
  }

  #chunkWhere(index: number, region: number): string {
    return `chunk ${this.#header.scope}/${this.#header.epoch}/filter ${index}/#${region}`;
  }
}
