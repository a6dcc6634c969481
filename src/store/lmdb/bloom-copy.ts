import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { SeenStoreError, asStoreError, assert } from '../../errors.js';
import { BloomFilter, type StoredFilter } from '../../filters/bloom.js';
import { allHold } from '../../filters/decide.js';
import { decideRange, type DecideTarget, type Decided } from '../../filters/decide.js';
import { filterGeometries } from '../../filters/keying.js';
import { KernelBits } from '../../filters/kernel-bits.js';
import { keyCount, sliceKeys, type Keys, type XxHash } from '../../hash/xxhash.js';
import type { CheckpointOutcome, EpochSummary } from '../backend.js';
import { CHUNK_PAYLOAD_BYTES } from '../chunks.js';
import { faultPoint } from '../faults.js';
import type { EpochHeader, SliceSpec } from '../records.js';
import type { BitThread } from './bit-thread.js';
import { CHECKPOINT_TXN_BYTES, type Fence } from './checkpoint.js';
import type { StoreEnv } from './env.js';
import { EpochCopy, type AfterDecide } from './epoch-copy.js';
import { bloomFill, type SliceFill } from '../epoch-summary.js';
import { encodeJournalRecord, JOURNAL_HEADER_BYTES, type JournalRecord } from './journal.js';
import { checkpointKey } from './keys.js';
import { ResidentChunks } from './resident-chunks.js';
import { StreamedReads, type ChunkSource } from './streamed-reads.js';

/** Filter bytes a read-only handle streams (re-reads) before it loads the chunks it touches instead. */
export const STREAM_FILTERS_MAX = 2;

/**
 * The working copy of a Bloom epoch (every strategy but counting): bits are only ever ORed in, so
 * a journal record replayed twice is harmless, checkpoints of several processes OR into what is
 * stored and never lose bits, and export files can be merged in.
 */
export class BloomCopy extends EpochCopy {
  /** Each slice's Bloom filters (the same objects as its stored filters). */
  #bloom: BloomFilter[][] = [];
  /** Bloom filters in shared memory, for a bit thread (SeenStoreOptions.threads). */
  readonly #shared: boolean;
  /** Without a bit thread, the filters' bits live in a kernel's memory and batches are decided there. */
  #kernelBits: KernelBits | undefined;
  /** The slices as decideRange sees them; rebuilt when the slices change. */
  #target: DecideTarget | undefined;
  /** Reused: decideRange's flag per URL, the new URLs' hashes, and the journal record's bytes. */
  #flags = new Uint8Array(0);
  #record = new Uint32Array(0);
  #recordBytes = Buffer.alloc(0);
  /**
   * The chunks in memory, loaded when first touched; undefined for filters in shared memory,
   * which a bit thread reads and sets on its own and which are therefore loaded whole.
   */
  readonly #resident: ResidentChunks | undefined;
  #streamed: StreamedReads | undefined;
  /** Chunk bytes this handle's queries read without keeping them. */
  #streamedBytes = 0;
  /**
   * Per filter index: 1 for each chunk whose checksum a streamed read checked, since its stored
   * bytes last changed under this copy (as a loaded chunk is checked once, not at every use).
   */
  #checked: Uint8Array[] = [];

  private constructor(env: StoreEnv, hash: XxHash, header: EpochHeader, shared: boolean) {
    super(env, hash, header);
    this.#shared = shared;
    this.#resident = shared ? undefined : new ResidentChunks((index, region) => this.loadStoredChunk(index, region));
  }

  /** Loads the epoch from the store; `shared`: filters in shared memory, so that a BitThread can take batches. */
  static load(env: StoreEnv, hash: XxHash, header: EpochHeader, shared: boolean): BloomCopy {
    const copy = new BloomCopy(env, hash, header, shared);
    copy.loadFresh();
    return copy;
  }

  get counting(): boolean {
    return false;
  }

  has(words: Uint32Array, i: number): boolean {
    const base = i * this.hasher.stride;
    for (let j = 0; j < this.#bloom.length; j++)
      if (allHold(this.#bloom[j]!, words, base + this.hasher.sliceAt(j))) return true;
    return false;
  }

  protected sliceFill(j: number): SliceFill {
    return bloomFill(this.#bloom[j]!);
  }

  protected makeSlice(spec: SliceSpec): StoredFilter[] {
    const kernelBits = this.#shared ? undefined : (this.#kernelBits ??= new KernelBits());
    const bloom = filterGeometries(spec).map(
      (geometry) =>
        new BloomFilter(geometry, {
          ...this.regionOptions,
          memory: kernelBits?.place(geometry, this.regionOptions.regionBytes) ?? this.#shared,
        }),
    );
    this.#bloom.push(bloom);
    return bloom;
  }

  protected override slicesChanged(): void {
    this.#target = undefined;
    this.#resident?.extend(this.#regionCounts());
  }

  protected override storedChunksChanged(fromIndex: number): void {
    this.#checked.length = Math.min(this.#checked.length, fromIndex);
    if (this.#resident === undefined) super.storedChunksChanged(fromIndex);
    else this.#resident.forget(fromIndex, this.#regionCounts());
  }

  #regionCounts(): number[] {
    return this.slices.flatMap((slice) => slice.filters.map((filter) => filter.regionCount));
  }

  /**
   * A read-only handle answers from the stored chunks a batch touches without keeping them
   * (streamed-reads.ts): processes that only read share the page cache instead of each holding
   * the filter. Streaming reads a chunk again in every batch that touches it, so once a handle
   * has streamed STREAM_FILTERS_MAX times its filters' bytes, loading them would have been
   * cheaper: it loads the chunks it touches from then on (rent or buy: never more than about
   * twice the cheaper choice's reads). A handle that writes loads them at once (it decides adds
   * against them).
   */
  override answer(words: Uint32Array, count: number, out: Uint8Array): void {
    const resident = this.#resident;
    const filterBytes = this.slices.reduce(
      (sum, slice) => sum + slice.filters.reduce((bytes, filter) => bytes + filter.bytes.length, 0),
      0,
    );
    if (
      resident === undefined ||
      resident.complete ||
      !this.env.readOnly ||
      this.#streamedBytes >= STREAM_FILTERS_MAX * filterBytes
    ) {
      this.#ensure(words, 0, count);
      super.answer(words, count, out);
      return;
    }
    this.#streamed ??= new StreamedReads();
    const slices = this.slices.map((slice, j) => ({
      filters: this.#bloom[j]!,
      offset: slice.offset,
      at: this.hasher.sliceAt(j),
    }));
    this.#streamed.answer(slices, words, this.hasher.stride, count, this.#chunkSource(resident), out);
  }

  #chunkSource(resident: ResidentChunks): ChunkSource {
    return {
      resident: (index, region) => resident.has(index, region),
      payload: (index, region) => {
        const checked = (this.#checked[index] ??= new Uint8Array(this.storedFilter(index).regionCount));
        const payload = this.chunks.payload(index, region, checked[region] === 0);
        checked[region] = 1;
        this.#streamedBytes += payload?.length ?? 0;
        return payload;
      },
    };
  }

  /** Loads the chunks that URLs first..last - 1 of `words` touch, in every filter of every slice. */
  #ensure(words: Uint32Array, first: number, last: number): void {
    const resident = this.#resident;
    if (resident === undefined || resident.complete) return;
    const stride = this.hasher.stride;
    this.slices.forEach((slice, j) => {
      const at = this.hasher.sliceAt(j);
      this.#bloom[j]!.forEach((filter, f) =>
        resident.ensure(slice.offset + f, filter, words, at + 2 * f, stride, first, last),
      );
    });
  }

  /** A summary reads every filter's fill: every chunk must be in memory. */
  override summary(): EpochSummary {
    this.#resident?.ensureAll();
    return super.summary();
  }

  override filterBytes(): Uint8Array[] {
    this.#resident?.ensureAll();
    return super.filterBytes();
  }

  /** Chunks loaded on demand since the last call (tests, the bench); resets. */
  takeChunksLoaded(): number {
    return this.#resident?.takeLoaded() ?? 0;
  }

  protected override loadFresh(): void {
    this.#bloom = [];
    this.#kernelBits = undefined;
    super.loadFresh();
  }

  protected applyRecord(record: JournalRecord, slice: number): void {
    const filters = this.#bloom[slice]!;
    const stride = 2 * filters.length;
    // Filter by filter: setting bits is order-free, and each filter's loop stays in its own array.
    for (let f = 0; f < filters.length; f++) filters[f]!.addAll(record.words, 2 * f, stride, record.entries);
  }

  /**
   * As addBatch, with the bits set on `thread` while this thread hashes the keys (inside the
   * write transaction, after catching up, so no rehash is ever needed). Batches the bit thread
   * cannot take (a newest slice with less room than the batch has URLs, filters not in shared
   * memory) are hashed and decided here, as by addBatch. A key the hashing refuses (a lone
   * surrogate) fails the batch after the bit thread may have set bits of earlier chunks: the
   * transaction is aborted and the copy reloaded, as for any failed batch.
   */
  addBatchOn(
    thread: BitThread,
    keys: Keys,
    answers: boolean[] | undefined,
    expectOpen: () => void,
    afterDecide?: AfterDecide,
  ): number {
    const added = this.inWriteTransaction(
      expectOpen,
      'adding a batch to',
      () => {
        const count = keyCount(keys);
        const target = this.#decideTarget();
        if (this.roomInNewest() < count || !thread.accepts(target))
          return this.decideBatch(keys, this.rehash(keys), answers);
        const stride = target.stride;
        const { words, flags } = thread.buffers(count * stride, count);
        const decided = thread.decide(target, count, (from, to) =>
          this.hashKeys(sliceKeys(keys, from, to), words.subarray(from * stride)),
        );
        target.newest.forEach((filter, f) => filter.countSetBits(decided.setBits[f]!));
        const fresh = this.#collect(words, flags, 0, count, answers);
        assert(fresh === decided.fresh, 'the bit thread counts as many new URLs as it flags');
        this.#appendRecord(this.slices.length - 1, count, decided.fresh);
        return decided.fresh;
      },
      afterDecide,
    );
    faultPoint('add:after-commit');
    return added;
  }

  /** Decides every URL into journal records, starting a new slice whenever the newest one is full. */
  protected decideBatch(keys: Keys, words: Uint32Array, answers: boolean[] | undefined): number {
    return this.decideGrowing(keys, words, (hashes, start, count) => {
      const newest = this.slices.length - 1;
      const room = this.roomInNewest();
      const decided = this.#decide(hashes, start, count, room <= 0 ? Infinity : room, answers);
      this.#appendRecord(newest, decided.consumed, decided.fresh);
      return decided;
    });
  }

  /**
   * Decides URLs from `start` until `count` or until `room` of them were new (decideRange); the
   * new URLs' hashes for the newest slice go to the record buffer, their answers to `answers`.
   */
  #decide(words: Uint32Array, start: number, count: number, room: number, answers: boolean[] | undefined): Decided {
    this.#ensure(words, start, count);
    const target = this.#decideTarget();
    for (const filter of target.newest) filter.warm((count - start) * filter.geometry.k);
    if (this.#flags.length < count) this.#flags = new Uint8Array(Math.max(count, 1024));
    const decided =
      this.#kernelBits?.decide(target, words, start, count, room, this.#flags) ??
      decideRange(target, words, start, count, room, this.#flags);
    const fresh = this.#collect(words, this.#flags, start, start + decided.consumed, answers);
    assert(fresh === decided.fresh, 'decideRange counts as many new URLs as it flags');
    return decided;
  }

  /** The slices as decideRange sees them (the same object until the slices change). */
  #decideTarget(): DecideTarget {
    if (this.#target !== undefined) return this.#target;
    const newest = this.#bloom.length - 1;
    this.#target = {
      older: this.#bloom.slice(0, -1).map((filters, j) => ({ filters, at: this.hasher.sliceAt(j) })),
      newest: this.#bloom[newest]!,
      newestAt: this.hasher.sliceAt(newest),
      stride: this.hasher.stride,
    };
    return this.#target;
  }

  /**
   * From decideRange's flags for URLs from..to - 1: their answers, and the new URLs' hashes for
   * the newest slice, in order, into the record buffer (from its start).
   */
  #collect(words: Uint32Array, flags: Uint8Array, from: number, to: number, answers: boolean[] | undefined): number {
    const newest = this.slices.length - 1;
    const sliceWords = 2 * this.slices[newest]!.filters.length;
    const at0 = this.hasher.sliceAt(newest);
    const stride = this.hasher.stride;
    if (this.#record.length < sliceWords * (to - from)) this.#record = new Uint32Array(sliceWords * (to - from));
    const record = this.#record;
    let fresh = 0;
    for (let i = from; i < to; i++) {
      const absent = flags[i] === 1;
      if (answers !== undefined) answers[i] = absent;
      if (!absent) continue;
      const at = i * stride + at0;
      const into = fresh * sliceWords;
      for (let w = 0; w < sliceWords; w++) record[into + w] = words[at + w]!;
      fresh++;
    }
    return fresh;
  }

  #appendRecord(slice: number, submitted: number, added: number): void {
    const filterCount = this.slices[slice]!.filters.length;
    if (this.#recordBytes.length < JOURNAL_HEADER_BYTES + 8 * filterCount * added)
      this.#recordBytes = Buffer.allocUnsafe(JOURNAL_HEADER_BYTES + this.#record.byteLength);
    // LMDB copies the value into the transaction's pages: the scratch is free again after the put.
    this.appendJournal(
      encodeJournalRecord(this.hash, slice, submitted, filterCount, this.#record, added, this.#recordBytes),
      slice,
      submitted,
      added,
    );
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
    const { scope, epoch } = this.currentHeader;
    try {
      return this.env.write(() => {
        this.catchUp();
        this.#resident?.ensureAll();
        check(this.currentHeader);
        if (incoming.length !== this.filterCount) {
          throw new SeenStoreError(
            'USAGE',
            `merge: ${incoming.length} filters given, epoch ${scope}/${epoch} has ${this.filterCount}`,
          );
        }
        const before = this.slices.map((slice) => slice.filters[0]!.estimatedCount);
        this.poisoned = true;
        incoming.forEach((bytes, index) => {
          const filter = this.storedFilter(index);
          for (let region = 0; region < filter.regionCount; region++) {
            const add = bytes.subarray(region * CHUNK_PAYLOAD_BYTES, (region + 1) * CHUNK_PAYLOAD_BYTES);
            if (add.every((b) => b === 0)) continue;
            this.#orIntoStoredChunk(index, region, add);
            filter.orRegion(region, add);
          }
        });
        const gained = this.slices.map((slice, j) =>
          Math.max(0, Math.round(slice.filters[0]!.estimatedCount - before[j]!)),
        );
        const previous = this.readCheckpoint();
        const mergedSliceAdded = this.slices.map((_, j) => (previous.mergedSliceAdded[j] ?? 0) + gained[j]!);
        this.env.putMeta(checkpointKey(scope, epoch), {
          ...previous,
          merges: previous.merges + 1,
          mergedSliceAdded,
          atMs: Date.now(),
        });
        faultPoint('merge:before-commit');
        this.merges = previous.merges + 1;
        this.mergedSliceAdded = mergedSliceAdded;
        this.poisoned = false;
        return gained.reduce((sum, n) => sum + n, 0);
      });
    } catch (error) {
      this.poisoned = true;
      throw asStoreError(error, `merging into ${scope}/${epoch}`);
    }
  }

  /**
   * Writes the dirty chunks back, ORed into what is stored (so checkpoints of several processes
   * never lose bits), in transactions of CHECKPOINT_TXN_BYTES; then records the checkpoint and
   * trims the journal it covers.
   */
  protected async writeCheckpoint(fence: Fence): Promise<CheckpointOutcome> {
    const seq = this.appliedSeq;
    const counts = this.epochCounts;
    const sliceAdded = [...this.journalSliceAdded];
    const dirty = this.dirtyChunks();
    if (dirty.length === 0 && seq <= this.readCheckpoint().seq) return 'clean';
    const perTxn = Math.max(1, Math.floor(CHECKPOINT_TXN_BYTES / CHUNK_PAYLOAD_BYTES));
    for (let start = 0; start < dirty.length; start += perTxn) {
      const batch = dirty.slice(start, start + perTxn);
      this.env.write(() => {
        fence();
        for (const [index, region] of batch)
          this.#orIntoStoredChunk(index, region, this.storedFilter(index).region(region));
      });
      this.markClean(batch);
      faultPoint('checkpoint:after-chunk-txn');
      await yieldToLoop();
    }
    faultPoint('checkpoint:before-trim');
    this.env.write(() => {
      fence();
      this.recordCheckpoint(seq, counts, sliceAdded);
    });
    faultPoint('checkpoint:after-trim');
    return 'written';
  }

  /** Writes chunk `region` of filter `index` as (stored chunk OR `bytes`); inside a write transaction. */
  #orIntoStoredChunk(index: number, region: number, bytes: Uint8Array): void {
    const merged = Buffer.from(bytes);
    const stored = this.chunks.copy(index, region, merged.length);
    if (stored !== undefined) for (let i = 0; i < merged.length; i++) merged[i]! |= stored[i]!;
    this.chunks.put(index, region, merged);
  }
}
