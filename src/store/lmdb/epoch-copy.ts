import { SeenStoreError, asStoreError } from '../../errors.js';
import { EpochHasher } from '../../filters/epoch-hasher.js';
import { nextSliceSpec } from '../slice-plan.js';
import { epochSummary } from '../epoch-summary.js';
import { keyCount, type Keys, type XxHash } from '../../hash/xxhash.js';
import type { CheckpointOutcome, EpochCounts, EpochSummary } from '../backend.js';
import type { BitThread } from './bit-thread.js';
import type { StoreEnv } from './env.js';
import { faultPoint } from '../faults.js';
import { JOURNAL_HEADER_BYTES, type JournalRecord } from './journal.js';
import { JournalCursor, type Durability, type ReplayTarget } from './journal-cursor.js';
import { epochKey } from './keys.js';
import { readHeader } from './metadata.js';
import type { EpochHeader } from '../records.js';
import type { CheckpointRecord } from './records.js';
import { EpochChunks } from './epoch-chunks.js';
import { EpochSlices, MAX_SLICES } from './epoch-slices.js';
import {
  compactJournal,
  fencedCheckpoint,
  readEpochCheckpoint,
  writeEpochCheckpoint,
  type Fence,
} from './checkpoint.js';

/** Newer read snapshots a catch-up without the lock tries when its replay stopped short (a hole a power cut left stays until a writer fills it). */
const SHORT_REPLAY_RETRIES = 3;

/** What an add does inside its write transaction once its answers are decided (epoch.ts). */
export interface AfterDecide {
  /** LMDB records committed with the batch (frontier entries; its journal record then goes to LMDB too); true when it wrote any. */
  readonly inLmdb?: () => boolean;
  /** Writes outside LMDB that must reach the kernel before the batch is recorded (its undelivered URLs). */
  readonly inFile?: () => void;
}

/**
 * The working copy of one epoch's filters in an LMDB store: loaded from its chunks plus the journal
 * tail, kept up to date with records that other processes commit, and written back by checkpoints.
 * What the filters are (Bloom bits, counters) is a subclass's: BloomCopy, CountingCopy.
 *
 * Invariant: the in-memory filters are exactly the stored chunks as loaded, with every journal
 * record up to `appliedSeq` applied. If a write transaction fails after the filters were touched,
 * the copy is marked poisoned and reloaded from the store before it is used again, so changes of
 * an unacknowledged batch never reach a checkpoint or an answer.
 */
export abstract class EpochCopy extends EpochSlices {
  protected readonly env: StoreEnv;
  protected appliedSeq = 0;
  protected epochCounts: EpochCounts = { submitted: 0, added: 0 };
  /** Merge generation the in-memory copy reflects. */
  protected merges = 0;
  protected poisoned = false;
  #journalBytesSinceCheckpoint = 0;
  /** The epoch's stored chunks, read and written through it. */
  protected readonly chunks: EpochChunks;
  readonly #cursor: JournalCursor;
  readonly #replayTarget: ReplayTarget;
  /**
   * LMDB's id of the write transaction of this copy's last committed batch. A batch whose own
   * transaction id follows it directly knows that nothing was committed in between, by any
   * process, and skips catching up.
   */
  #batchTxnId = -1;

  protected constructor(env: StoreEnv, hash: XxHash, header: EpochHeader) {
    super(hash, header);
    this.env = env;
    this.chunks = new EpochChunks(
      env,
      hash,
      () => this.currentHeader,
      (index) => this.filterAt(index),
    );
    this.#cursor = new JournalCursor(env, hash, header.scope, header.epoch);
    this.#replayTarget = this.#makeReplayTarget();
  }

  #makeReplayTarget(): ReplayTarget {
    const copy = this;
    return {
      get appliedSeq() {
        return copy.appliedSeq;
      },
      get counting() {
        return copy.counting;
      },
      filtersOf: (slice) => this.slices[slice]?.filters.length,
      apply: (record, seq, where) => this.#apply(record, seq, where),
      skipTo: (seq) => {
        this.appliedSeq = seq;
      },
    };
  }

  abstract get counting(): boolean;

  get journalBytesSinceCheckpoint(): number {
    return this.#journalBytesSinceCheckpoint;
  }

  /** Bytes of stored chunks read since the last call (for StoreEnv.releaseMappedPages); resets. */
  takeChunkBytesRead(): number {
    return this.chunks.takeBytesRead();
  }

  /** Applies one journal record to the filters (its slice and kind already checked). */
  protected abstract applyRecord(record: JournalRecord, slice: number, where: string): void;

  /**
   * The add-if-absent decision for `keys`, hashed into `words` by hashKeys, and its journal
   * records, in one LMDB write transaction: LMDB serialises writers across processes, and catching
   * up first means every batch any process committed is seen before deciding. On return the
   * records are committed; answers[i] is true for URLs that were new. `afterDecide` runs inside
   * the transaction once the answers are known (the frontier's entries).
   */
  addBatch(
    keys: Keys,
    words: Uint32Array,
    answers: boolean[] | undefined,
    expectOpen: () => void,
    afterDecide?: AfterDecide,
  ): number {
    const added = this.writeBatch(
      keys,
      words,
      expectOpen,
      'adding a batch to',
      (hashes) => this.decideBatch(keys, hashes, answers),
      afterDecide,
    );
    faultPoint('add:after-commit');
    return added;
  }

  /** Decides a batch hashed into `words` (inside the write transaction) and records it; returns how many were new. */
  protected abstract decideBatch(keys: Keys, words: Uint32Array, answers: boolean[] | undefined): number;

  /** As addBatch, with a bit thread setting the bits where the copy allows it. */
  abstract addBatchOn(
    thread: BitThread,
    keys: Keys,
    answers: boolean[] | undefined,
    expectOpen: () => void,
    afterDecide?: AfterDecide,
  ): number;

  /** Writes the copy's state back (inside the checkpoint's lock and fence). */
  protected abstract writeCheckpoint(fence: Fence): Promise<CheckpointOutcome>;

  summary(): EpochSummary {
    return epochSummary(
      this.epochCounts,
      this.slices.map((slice, j) => ({
        spec: slice.spec,
        filters: slice.filters.length,
        added: this.sliceCount(j),
        fill: this.sliceFill(j),
        estimatedCount: slice.filters[0]!.estimatedCount,
      })),
    );
  }

  /**
   * Brings the in-memory copy up to what the store holds now. Call after env.refresh() or inside a
   * write. Without the lock, a replay that stopped short of a record its read snapshot does not
   * show yet (journal-cursor.ts, stoppedShort) is tried again on a newer snapshot: its records may
   * have been folded into chunks meanwhile, and acknowledged before this catch-up began.
   */
  catchUp(): void {
    for (let attempt = 0; ; attempt++) {
      if (this.poisoned) {
        this.loadFresh();
        return;
      }
      this.#refreshHeader();
      const checkpoint = this.readCheckpoint();
      if (checkpoint.merges !== this.merges || !this.catchUpToCheckpoint(checkpoint)) {
        // The chunks changed in a way no journal record carries: start from them.
        this.loadFresh();
        return;
      }
      this.#cursor.replay(this.#replayTarget);
      if (!this.#replayStoppedShort(attempt)) return;
      this.env.refresh();
    }
  }

  /** Whether the last replay, without the lock, stopped short and may try again on a newer snapshot. */
  #replayStoppedShort(attempt: number): boolean {
    return !this.env.writing && this.#cursor.stoppedShort && attempt < SHORT_REPLAY_RETRIES;
  }

  /**
   * A checkpoint newer than the copy: Bloom bits OR the stored chunks in (records up to it may be
   * trimmed already; the chunks hold them). False when the copy must be loaded afresh instead.
   */
  protected catchUpToCheckpoint(checkpoint: CheckpointRecord): boolean {
    if (checkpoint.seq > this.appliedSeq) {
      this.storedChunksChanged(0);
      this.appliedSeq = checkpoint.seq;
      this.epochCounts = { submitted: checkpoint.submitted, added: checkpoint.added };
      this.journalSliceAdded = [...checkpoint.sliceAdded];
    }
    return true;
  }

  /**
   * One batch's write transaction: the epoch must still be open (`expectOpen`), the copy is
   * caught up first, then `change` decides and journals. If anything fails after the copy was
   * touched, it is poisoned and reloaded before its next use.
   */
  protected inWriteTransaction(
    expectOpen: () => void,
    doing: string,
    change: () => number,
    afterDecide?: AfterDecide,
  ): number {
    let result = 0;
    let touched = false;
    let txnId = -1;
    let decidedChanged = false;
    const cursor = this.#cursor;
    cursor.beginBatch(afterDecide?.inLmdb !== undefined);
    const commits = (): boolean => cursor.lmdbChanged || decidedChanged;
    try {
      // The transaction commits only when the batch changed LMDB; a batch journaled in the file
      // uses it for its locks and its view of the newest commit, and aborts it (no LMDB sync).
      this.env.write(
        () => {
          expectOpen();
          txnId = this.env.writeTxnId();
          if (this.poisoned || txnId !== this.#batchTxnId + 1) this.catchUp();
          else cursor.replayFile(this.#replayTarget);
          touched = true;
          result = change();
          decidedChanged = afterDecide?.inLmdb?.() === true;
          afterDecide?.inFile?.();
          faultPoint('add:before-commit');
        },
        commits,
        () => cursor.writeStaged(),
      );
      this.#batchTxnId = commits() ? txnId : txnId - 1;
    } catch (error) {
      if (touched) this.poisoned = true;
      throw asStoreError(error, `${doing} ${this.currentHeader.scope}/${this.currentHeader.epoch}`);
    } finally {
      cursor.journalInLmdb = false;
    }
    return result;
  }

  /** What acknowledging the last write transaction's batch waits for; read it before awaiting anything. */
  durability(): Durability {
    return this.#cursor.durability();
  }

  /** As inWriteTransaction, with keys hashed before it: rehashed when another process added a slice meanwhile. */
  protected writeBatch(
    keys: Keys,
    words: Uint32Array,
    expectOpen: () => void,
    doing: string,
    change: (words: Uint32Array) => number,
    afterDecide?: AfterDecide,
  ): number {
    const hashedFor = this.filterCount;
    return this.inWriteTransaction(
      expectOpen,
      doing,
      () => change(this.filterCount === hashedFor ? words : this.rehash(keys)),
      afterDecide,
    );
  }

  /**
   * Runs `step` from the first URL until every URL is decided; before each step, when the newest
   * slice is full and the epoch may grow, appends a slice and rehashes the keys for it. A step
   * decides URLs from `start` (stopping when the newest slice fills) and says how many it took and
   * how many were new.
   */
  protected decideGrowing(
    keys: Keys,
    words: Uint32Array,
    step: (words: Uint32Array, start: number, count: number) => { consumed: number; fresh: number },
  ): number {
    const count = keyCount(keys);
    let added = 0;
    for (let start = 0; start < count; ) {
      if (this.#grewForRoom()) {
        words = this.rehash(keys);
        continue;
      }
      const { consumed, fresh } = step(words, start, count);
      added += fresh;
      start += consumed;
    }
    return added;
  }

  /** Starts a new slice when the newest is full (and the epoch may grow); the caller must rehash. */
  #grewForRoom(): boolean {
    if (this.roomInNewest() > 0 || this.slices.length >= MAX_SLICES) return false;
    this.#growSlice();
    return true;
  }

  /** Appends a slice to the epoch header (inside the add's write transaction). */
  #growSlice(): void {
    const header = this.currentHeader;
    const index = header.slices.length;
    const grown: EpochHeader = { ...header, slices: [...header.slices, nextSliceSpec(header, index)] };
    this.env.putMeta(epochKey(header.scope, header.epoch), grown);
    this.#cursor.lmdbChanged = true;
    this.currentHeader = grown;
    this.addSlices(index);
  }

  /** Re-reads the header; slices added by another process are allocated and loaded. */
  #refreshHeader(): void {
    const header = readHeader(this.env, this.currentHeader.scope, this.currentHeader.epoch);
    this.currentHeader = header;
    if (header.slices.length > this.slices.length) {
      const from = this.slices.length;
      this.addSlices(from);
      this.storedChunksChanged(this.slices[from]!.offset);
    }
  }

  /**
   * Appends a journal record (inside the write transaction, caught up) and counts what it adds: to
   * the journal file, or to LMDB for a batch that enqueues.
   */
  protected appendJournal(value: Buffer, slice: number, submitted: number, added: number): void {
    const seq = this.appliedSeq + 1;
    this.#cursor.append(seq, value);
    this.appliedSeq = seq;
    this.countRecord(slice, submitted, added);
    this.#journalBytesSinceCheckpoint += value.length;
  }

  protected countRecord(slice: number, submitted: number, added: number): void {
    this.epochCounts = { submitted: this.epochCounts.submitted + submitted, added: this.epochCounts.added + added };
    this.journalSliceAdded[slice] = (this.journalSliceAdded[slice] ?? 0) + added;
  }

  /**
   * Exclusive per scope through a lock file plus a fencing token checked in every transaction
   * (checkpoint.ts); what is written is the subclass's.
   */
  async checkpoint(lockStaleMs: number): Promise<CheckpointOutcome> {
    if (this.poisoned) this.loadFresh();
    const { scope, epoch } = this.currentHeader;
    try {
      const outcome = await fencedCheckpoint(
        this.env,
        scope,
        lockStaleMs,
        () => this.poisoned,
        async (fence) => {
          this.env.refresh();
          this.catchUp();
          // Each write transaction also checks the epoch is still there: one that another
          // process pruned meanwhile gets no chunks back (they would outlive its drop).
          return this.writeCheckpoint(() => {
            fence();
            readHeader(this.env, scope, epoch);
          });
        },
      );
      if (outcome === 'written') this.#journalBytesSinceCheckpoint = 0;
      // Also after a clean one: a checkpointer killed after its trim left folded frames behind.
      if (outcome === 'written' || (outcome === 'clean' && this.#cursor.file.holdsFrames()))
        await compactJournal(this.env, this.#cursor.file);
      return outcome;
    } catch (error) {
      // Pruned by another process: its bits are gone on purpose, so nothing is left to write.
      if (error instanceof SeenStoreError && error.code === 'NOT_FOUND' && this.#dropped()) return 'clean';
      throw asStoreError(error, `checkpointing ${scope}/${epoch}`);
    }
  }

  /** Whether the epoch's header is gone from the newest state: a prune dropped it. */
  #dropped(): boolean {
    this.env.refresh();
    return this.env.getMeta(epochKey(this.currentHeader.scope, this.currentHeader.epoch)) === undefined;
  }

  /** Records that the chunks hold every journal record up to `seq`, and trims those records. */
  protected recordCheckpoint(seq: number, counts: EpochCounts, sliceAdded: readonly number[]): void {
    writeEpochCheckpoint(this.env, this.currentHeader, seq, counts, sliceAdded);
  }

  protected readCheckpoint(): CheckpointRecord {
    return readEpochCheckpoint(this.env, this.currentHeader);
  }

  /**
   * Loads the copy afresh: the stored chunks, the checkpoint, and every journal record after it.
   * On a writable store the records are replayed holding the write lock, where a hole a power cut
   * left (an unacknowledged LMDB record lost, acknowledged frames after it) is filled, so that
   * what this copy answers includes every frame after it. The chunks were read before that
   * transaction: a checkpoint by another process in between folds records into the chunks and
   * compacts them out of the journal file, and a plain replay would take them for holes and go on
   * without them (a counting copy would then write chunks without those batches at its next
   * checkpoint). So the copy catches up inside the transaction as an add does: a newer checkpoint
   * is taken in (a counting copy reloads, now holding the lock) before anything is replayed.
   */
  protected loadFresh(): void {
    this.currentHeader = readHeader(this.env, this.currentHeader.scope, this.currentHeader.epoch);
    this.slices = [];
    this.hasher = new EpochHasher(this.hash, this.currentHeader.normalize, [], this.currentHeader.partitions);
    this.addSlices(0);
    const checkpoint = this.readCheckpoint();
    this.storedChunksChanged(0);
    this.appliedSeq = checkpoint.seq;
    this.epochCounts = { submitted: checkpoint.submitted, added: checkpoint.added };
    this.journalSliceAdded = [...checkpoint.sliceAdded];
    this.merges = checkpoint.merges;
    this.mergedSliceAdded = [...checkpoint.mergedSliceAdded];
    this.#journalBytesSinceCheckpoint = 0;
    this.poisoned = false;
    this.#cursor.rewind();
    faultPoint('load:before-replay');
    if (this.env.writing || this.env.readOnly) {
      this.#cursor.replay(this.#replayTarget);
      if (this.#replayStoppedShort(0)) {
        this.env.refresh();
        this.catchUp();
      }
      return;
    }
    this.#cursor.beginBatch(false);
    try {
      this.env.write(
        () => this.catchUp(),
        () => this.#cursor.lmdbChanged,
      );
    } catch (error) {
      this.poisoned = true;
      throw error;
    }
  }

  /**
   * The stored chunks of filters `fromIndex`.. changed, or the filters are new to this copy: ORs
   * them into memory (BloomCopy instead loads them when touched, resident-chunks.ts).
   */
  protected storedChunksChanged(fromIndex: number): void {
    this.orStoredChunks(fromIndex);
  }

  /** ORs the stored chunks of filters `fromIndex`.. into memory. */
  protected orStoredChunks(fromIndex: number): void {
    this.chunks.forEach(fromIndex, (index, region, payload) => this.storedFilter(index).orRegion(region, payload));
  }

  #apply(record: JournalRecord, seq: number, where: string): void {
    this.applyRecord(record, record.slice, where);
    this.appliedSeq = seq;
    if (record.op !== 'delete') this.countRecord(record.slice, record.submitted, record.added);
    this.#journalBytesSinceCheckpoint += JOURNAL_HEADER_BYTES + record.words.byteLength;
  }

  /** ORs stored chunk `region` of filter `index` into memory, when one is stored. */
  protected loadStoredChunk(index: number, region: number): void {
    const payload = this.chunks.payload(index, region);
    if (payload !== undefined) this.storedFilter(index).orRegion(region, payload);
  }
}
