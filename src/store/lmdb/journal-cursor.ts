import { SeenStoreError } from '../../errors.js';
import { faultPoint } from '../faults.js';
import type { XxHash } from '../../hash/xxhash.js';
import type { StoreEnv } from './env.js';
import { decodeJournalRecord, encodeCountingRecord, encodeJournalRecord, type JournalRecord } from './journal.js';
import type { JournalFile } from './journal-file.js';
import type { JournalPosition } from './journal-reader.js';
import { journalEpochRange, journalKey, journalKeySeq } from './keys.js';

/**
 * What acknowledging a write transaction's batch waits for: the journal file synced up to `end` of
 * `generation`; LMDB's sync of this process's commit (`lmdbCommitted`), or of commits of other
 * processes that the batch's answers depend on (`lmdbOthers`: their enqueued adds).
 */
export interface Durability {
  readonly generation: number;
  readonly end: number;
  readonly lmdbCommitted: boolean;
  readonly lmdbOthers: boolean;
}

/** The working copy a cursor replays into (EpochCopy). */
export interface ReplayTarget {
  readonly appliedSeq: number;
  readonly counting: boolean;
  /** Filters of slice `slice`, undefined when the copy has no such slice. */
  filtersOf(slice: number): number | undefined;
  /** Applies record `seq` (the next one, checked against the slices). */
  apply(record: JournalRecord, seq: number, where: string): void;
  /** Sequence numbers up to `seq` were lost unacknowledged: the copy counts them as applied. */
  skipTo(seq: number): void;
}

/**
 * One epoch's place in the journal: how far it read the journal file (per generation), and where
 * its records go. Records are numbered per epoch; they live in the journal file, or in LMDB's
 * `journal` database for adds that enqueue (their frontier entries commit in the same LMDB
 * transaction) and for stores of format 4. Replay merges the two by sequence number.
 */
export class JournalCursor {
  readonly #env: StoreEnv;
  readonly #hash: XxHash;
  readonly #file: JournalFile;
  readonly #scope: string;
  readonly #scopeBytes: Buffer;
  readonly #epoch: number;
  #generation = -1;
  /** Where this cursor read the file up to, and the link of the frame there. */
  #at: JournalPosition = { end: 0, link: 0 };
  /** The batch under way journals into LMDB instead of the file (an enqueue). */
  journalInLmdb = false;
  /** The write transaction under way changed LMDB (a record, a new slice, a filled hole): it commits. */
  lmdbChanged = false;
  /** The write transaction under way applied LMDB journal records (other processes' enqueues). */
  #appliedLmdbRecords = false;

  constructor(env: StoreEnv, hash: XxHash, scope: string, epoch: number) {
    this.#env = env;
    this.#hash = hash;
    this.#file = env.useJournal(hash);
    this.#scope = scope;
    this.#scopeBytes = Buffer.from(scope, 'utf8');
    this.#epoch = epoch;
  }

  get file(): JournalFile {
    return this.#file;
  }

  /** Starts a write transaction's batch: nothing changed yet. */
  beginBatch(journalInLmdb: boolean): void {
    this.#file.dropStaged();
    this.journalInLmdb = journalInLmdb;
    this.lmdbChanged = false;
    this.#appliedLmdbRecords = false;
  }

  /** The next replay reads the file from its start (a copy loaded afresh). */
  rewind(): void {
    this.#generation = -1;
  }

  durability(): Durability {
    return {
      generation: this.#generation,
      end: this.#at.end,
      lmdbCommitted: this.lmdbChanged,
      lmdbOthers: this.#appliedLmdbRecords,
    };
  }

  /**
   * The last replay without the lock stopped where a record was not in its view yet: a hole
   * (another process checkpointed after this process's read snapshot began, and compacted the
   * records out of the journal file), or a slice not yet committed.
   */
  stoppedShort = false;

  /** Applies what follows the target's `appliedSeq`, from both homes. */
  replay(target: ReplayTarget): void {
    this.stoppedShort = false;
    this.#replayLmdb(target);
    faultPoint('replay:before-file');
    this.replayFile(target);
  }

  /** LMDB's journal records from `appliedSeq` + 1, as long as they follow without a gap. */
  #replayLmdb(target: ReplayTarget): void {
    for (const { key, value } of this.#env.journalDb.getRange(
      journalEpochRange(this.#scope, this.#epoch, target.appliedSeq + 1),
    )) {
      const seq = journalKeySeq(key);
      if (seq !== target.appliedSeq + 1) return;
      const where = `journal record ${this.#scope}/${this.#epoch}/${seq}`;
      const record = decodeJournalRecord(this.#hash, value, where);
      if (!this.#fits(target, record, where)) return;
      target.apply(record, seq, where);
      this.#appliedLmdbRecords = true;
    }
  }

  /**
   * The journal file's frames after what this cursor read. Holding the write lock (env.writing),
   * everything committed or appended is visible, so a sequence number that neither LMDB nor the
   * file holds was lost to a power cut before it was acknowledged: the hole is filled with an empty
   * LMDB record, and a torn tail is cut (and a file of version 1 is rewritten as version 2 first).
   * Without the lock, the replay stops there and waits.
   */
  replayFile(target: ReplayTarget): void {
    const file = this.#file;
    file.refresh();
    if (this.#env.writing) file.upgrade();
    if (file.generation !== this.#generation) {
      this.#generation = file.generation;
      this.#at = file.start;
    }
    const read = file.read(this.#at, (scope, epoch, seq, value) => {
      if (epoch !== this.#epoch || !scope.equals(this.#scopeBytes)) return true;
      if (seq > target.appliedSeq + 1) this.#replayLmdb(target);
      if (seq <= target.appliedSeq) return true;
      if (seq > target.appliedSeq + 1) {
        if (!this.#env.writing) return this.#stopShort();
        this.#fillHoles(target, seq);
      }
      const where = `journal frame ${this.#scope}/${this.#epoch}/${seq}`;
      const record = decodeJournalRecord(this.#hash, value, where);
      if (!this.#fits(target, record, where)) return false;
      target.apply(record, seq, where);
      return true;
    });
    this.#at = read;
    if (read.torn && this.#env.writing) file.cutTornTail(read.end);
  }

  /**
   * Whether the record fits the copy's slices. A slice that another process is adding commits after
   * its first records were appended to the file: a reader without the lock waits for it.
   */
  #fits(target: ReplayTarget, record: JournalRecord, where: string): boolean {
    const filters = target.filtersOf(record.slice);
    if (filters === undefined && !this.#env.writing) return this.#stopShort();
    if (filters !== record.filterCount) {
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `${where}: names slice ${record.slice} with ${record.filterCount} filters, which the epoch does not have`,
      );
    }
    if ((record.op === 'bits') === target.counting) {
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `${where}: a ${record.op} record in a ${target.counting ? 'counting' : 'Bloom'} slice`,
      );
    }
    return true;
  }

  #stopShort(): false {
    this.stoppedShort = true;
    return false;
  }

  /** Empty LMDB records for the lost sequence numbers before `seq` (inside a write transaction). */
  #fillHoles(target: ReplayTarget, seq: number): void {
    const none = new Uint32Array(0);
    const filters = target.filtersOf(0)!;
    const empty = target.counting
      ? encodeCountingRecord(this.#hash, 'add', 0, 0, 0, filters, none)
      : encodeJournalRecord(this.#hash, 0, 0, filters, none, 0);
    for (let lost = target.appliedSeq + 1; lost < seq; lost++)
      this.#env.journalDb.putSync(journalKey(this.#scope, this.#epoch, lost), empty);
    target.skipTo(seq - 1);
    this.lmdbChanged = true;
  }

  /**
   * Journals record `seq` (inside the write transaction, caught up): into LMDB for a batch that
   * enqueues (its frontier entries commit with it; such a batch always commits, which the next
   * batch's catch-up relies on), else staged for the journal file (writeStaged).
   */
  append(seq: number, value: Buffer): void {
    if (this.journalInLmdb) {
      this.#env.journalDb.putSync(journalKey(this.#scope, this.#epoch, seq), value);
      this.lmdbChanged = true;
    } else {
      this.#file.stage(this.#scopeBytes, this.#epoch, seq, value);
    }
  }

  /**
   * Appends the batch's staged frames to the journal file, holding the open guard after the write
   * transaction ended (committed, or aborted for want of LMDB changes): a batch that failed
   * before, its LMDB commit included, left no frame for any process to read.
   */
  writeStaged(): void {
    const file = this.#file;
    if (!file.hasStaged) return;
    if (!file.exists) {
      file.ensureExists();
      this.#generation = file.generation;
      this.#at = file.start;
    }
    this.#at = file.writeStaged(this.#at);
  }
}
