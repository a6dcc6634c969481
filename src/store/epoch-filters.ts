import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { SeenStoreError, asStoreError } from '../errors.js';
import { BloomFilter, type Layout } from '../filters/bloom.js';
import { HASH_SCHEME_ID, seedFromHex } from '../hash/scheme.js';
import type { XxHash } from '../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES, decodeChunk, encodeChunk } from './chunks.js';
import type { StoreEnv } from './env.js';
import { faultPoint } from './faults.js';
import { decodeJournalRecord, encodeJournalRecord, JOURNAL_HEADER_BYTES } from './journal.js';
import { checkpointKey, chunkKey, epochKey, fenceKey, journalKey, scopeKey } from './keys.js';
import { tryLock } from './lock.js';
import {
  readCheckpointRecord,
  readEpochHeader,
  readFenceRecord,
  readScopeRecord,
  type CheckpointRecord,
  type EpochHeader,
} from './records.js';

/** Bytes of chunks written per checkpoint transaction: small transactions let LMDB reuse pages. */
export const CHECKPOINT_TXN_BYTES = 16 * 2 ** 20;

export interface EpochCounts {
  /** URLs submitted to add / addIfAbsent. */
  readonly submitted: number;
  /** URLs that were new when added. */
  readonly added: number;
}

export type CheckpointOutcome = 'written' | 'clean' | 'busy';

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
  readonly header: EpochHeader;
  readonly #env: StoreEnv;
  readonly #hash: XxHash;
  readonly #seeds: readonly bigint[];
  #filters: BloomFilter[] = [];
  #appliedSeq = 0;
  #counts: EpochCounts = { submitted: 0, added: 0 };
  #journalBytesSinceCheckpoint = 0;
  #poisoned = false;

  private constructor(env: StoreEnv, hash: XxHash, header: EpochHeader) {
    this.#env = env;
    this.#hash = hash;
    this.header = header;
    this.#seeds = header.filters.map((filter) => seedFromHex(filter.seed));
  }

  /** Loads the epoch's filters from the store: stored chunks, then the journal after the checkpoint. */
  static load(env: StoreEnv, hash: XxHash, header: EpochHeader): EpochFilters {
    EpochFilters.#checkSupported(header);
    const filters = new EpochFilters(env, hash, header);
    filters.#loadFresh();
    return filters;
  }

  static readHeader(env: StoreEnv, scope: string, epoch: number): EpochHeader {
    const value = env.getMeta(epochKey(scope, epoch));
    if (value === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${scope} has no epoch ${epoch}`);
    return readEpochHeader(value);
  }

  static #checkSupported(header: EpochHeader): void {
    const where = `epoch ${header.scope}/${header.epoch}`;
    if (header.hashScheme !== HASH_SCHEME_ID) {
      throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where} uses hash scheme ${header.hashScheme}, this version knows ${HASH_SCHEME_ID}`);
    }
    if (header.layout !== 'classic' && header.layout !== 'blocked') {
      throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where} uses filter layout ${header.layout}, unknown to this version`);
    }
    if (header.chunkBytes !== CHUNK_PAYLOAD_BYTES) {
      throw new SeenStoreError('FORMAT_UNSUPPORTED', `${where} has chunks of ${header.chunkBytes} bytes, expected ${CHUNK_PAYLOAD_BYTES}`);
    }
  }

  get filterCount(): number {
    return this.#filters.length;
  }

  get filters(): readonly BloomFilter[] {
    return this.#filters;
  }

  get appliedSeq(): number {
    return this.#appliedSeq;
  }

  get counts(): EpochCounts {
    return this.#counts;
  }

  get journalBytesSinceCheckpoint(): number {
    return this.#journalBytesSinceCheckpoint;
  }

  /**
   * Hashes `keys` with every filter's seed into `words`: for key i and filter f, the low and high
   * halves of its xxh64 are words[2 * (i * F + f)] and words[2 * (i * F + f) + 1].
   */
  hashKeys(keys: readonly string[], words: Uint32Array): void {
    const seeds = this.#seeds;
    const filterCount = seeds.length;
    for (let i = 0; i < keys.length; i++) {
      for (let f = 0; f < filterCount; f++) this.#hash.hashInto(keys[i]!, seeds[f]!, words, 2 * (i * filterCount + f));
    }
  }

  /** True when every filter holds URL i of `words` (all S must agree for the spatial strategy). */
  has(words: Uint32Array, i: number): boolean {
    const filters = this.#filters;
    const base = 2 * i * filters.length;
    for (let f = 0; f < filters.length; f++) {
      if (!filters[f]!.has(words[base + 2 * f + 1]!, words[base + 2 * f]!)) return false;
    }
    return true;
  }

  /** Brings the in-memory copy up to what the store holds now. Call after env.refresh() or inside a write. */
  catchUp(): void {
    if (this.#poisoned) this.#loadFresh();
    const checkpoint = this.#readCheckpoint();
    if (checkpoint.seq > this.#appliedSeq) {
      // Records up to the checkpoint may already be trimmed from the journal; the chunks hold them.
      this.#orStoredChunks();
      this.#appliedSeq = checkpoint.seq;
      this.#counts = { submitted: checkpoint.submitted, added: checkpoint.added };
    }
    this.#replayJournal();
  }

  /**
   * The add-if-absent decision for `count` hashed URLs, then their journal record, in one LMDB
   * write transaction (LMDB serialises writers across processes, and catching up first means
   * every committed batch of every process is seen before deciding). On return the record is
   * committed and synced; answers[i] is true for URLs that were new. New URLs' words are
   * compacted to the front of `words`.
   */
  addBatch(words: Uint32Array, count: number, answers: boolean[] | undefined, expectOpen: () => void): number {
    let added = 0;
    let touched = false;
    try {
      this.#env.write(() => {
        expectOpen();
        this.catchUp();
        touched = true;
        added = this.#decide(words, count, answers);
        const seq = this.#appliedSeq + 1;
        const record = encodeJournalRecord(this.#hash, count, this.#filters.length, words, added);
        this.#env.journalDb.putSync(journalKey(this.header.scope, this.header.epoch, seq), record);
        faultPoint('add:before-commit');
        this.#appliedSeq = seq;
        this.#counts = { submitted: this.#counts.submitted + count, added: this.#counts.added + added };
        this.#journalBytesSinceCheckpoint += record.length;
      });
    } catch (error) {
      if (touched) this.#poisoned = true;
      throw asStoreError(error, `adding a batch to ${this.header.scope}/${this.header.epoch}`);
    }
    faultPoint('add:after-commit');
    return added;
  }

  #decide(words: Uint32Array, count: number, answers: boolean[] | undefined): number {
    const filters = this.#filters;
    const filterCount = filters.length;
    const stride = 2 * filterCount;
    let added = 0;
    for (let i = 0; i < count; i++) {
      const base = i * stride;
      let absent = false;
      for (let f = 0; f < filterCount; f++) {
        if (filters[f]!.add(words[base + 2 * f + 1]!, words[base + 2 * f]!)) absent = true;
      }
      if (answers !== undefined) answers[i] = absent;
      if (absent) {
        if (added !== i) words.copyWithin(added * stride, base, base + stride);
        added++;
      }
    }
    return added;
  }

  /**
   * Writes the dirty chunks back (ORed into what is stored, so checkpoints of several processes
   * never lose bits), then records the checkpoint and trims the journal it covers. Exclusive per
   * scope through a lock file plus a fencing token checked in every transaction.
   */
  async checkpoint(lockStaleMs: number): Promise<CheckpointOutcome> {
    if (this.#poisoned) this.#loadFresh();
    const lock = await tryLock(this.#env.dir, `checkpoint-${this.header.scope}`, lockStaleMs);
    if (lock === undefined) return 'busy';
    try {
      const token = this.#env.write(() => {
        const current = this.#env.getMeta(fenceKey(this.header.scope));
        const next = (current === undefined ? 0 : readFenceRecord(current).token) + 1;
        this.#env.putMeta(fenceKey(this.header.scope), { v: 1, token: next });
        return next;
      });
      const fenced = (): void => {
        const current = this.#env.getMeta(fenceKey(this.header.scope));
        if (!lock.held() || current === undefined || readFenceRecord(current).token !== token || this.#poisoned) {
          throw new SeenStoreError('STORE_LOCKED', `checkpoint of ${this.header.scope} lost its lock; another process took over`);
        }
      };
      const seq = this.#appliedSeq;
      const counts = this.#counts;
      const dirty = this.#filters.flatMap((filter, f) => filter.dirtyRegions().map((region) => [f, region] as const));
      if (dirty.length === 0 && seq <= this.#readCheckpoint().seq) return 'clean';
      const perTxn = Math.max(1, Math.floor(CHECKPOINT_TXN_BYTES / CHUNK_PAYLOAD_BYTES));
      for (let start = 0; start < dirty.length; start += perTxn) {
        const batch = dirty.slice(start, start + perTxn);
        this.#env.write(() => {
          fenced();
          for (const [f, region] of batch) this.#writeChunkOr(f, region);
        });
        for (const [f, region] of batch) this.#filters[f]!.markClean(region);
        faultPoint('checkpoint:after-chunk-txn');
        await yieldToLoop();
      }
      faultPoint('checkpoint:before-trim');
      this.#env.write(() => {
        fenced();
        this.#recordCheckpoint(seq, counts);
      });
      faultPoint('checkpoint:after-trim');
      this.#journalBytesSinceCheckpoint = 0;
      await this.#env.flushed();
      return 'written';
    } catch (error) {
      throw asStoreError(error, `checkpointing ${this.header.scope}/${this.header.epoch}`);
    } finally {
      await lock.release();
    }
  }

  #writeChunkOr(f: number, region: number): void {
    const key = chunkKey(this.header.scope, this.header.epoch, f, region);
    const memory = this.#filters[f]!.region(region);
    const merged = Buffer.from(memory);
    const stored = this.#env.chunksDb.getBinary(key);
    if (stored !== undefined) {
      const payload = decodeChunk(this.#hash, stored, this.#chunkWhere(f, region), memory.length);
      for (let i = 0; i < merged.length; i++) merged[i]! |= payload[i]!;
    }
    this.#env.chunksDb.putSync(key, encodeChunk(this.#hash, merged));
  }

  #recordCheckpoint(seq: number, counts: EpochCounts): void {
    const { scope, epoch } = this.header;
    const previous = this.#readCheckpoint();
    if (seq <= previous.seq) return;
    const record: CheckpointRecord = { v: 1, seq, submitted: counts.submitted, added: counts.added, atMs: Date.now() };
    this.#env.putMeta(checkpointKey(scope, epoch), record);
    const trim = this.#env.journalDb.getKeys({ start: journalKey(scope, epoch, 0), end: journalKey(scope, epoch, seq + 1) });
    for (const key of trim) this.#env.journalDb.removeSync(key);
  }

  #readCheckpoint(): CheckpointRecord {
    const value = this.#env.getMeta(checkpointKey(this.header.scope, this.header.epoch));
    if (value === undefined) {
      throw new SeenStoreError('STORE_CORRUPT', `epoch ${this.header.scope}/${this.header.epoch} has no checkpoint record`);
    }
    return readCheckpointRecord(value);
  }

  #loadFresh(): void {
    const { mBits, k } = this.header;
    const geometry = { layout: this.header.layout as Layout, mBits, k };
    this.#filters = this.#seeds.map(() => new BloomFilter(geometry, { regionBytes: CHUNK_PAYLOAD_BYTES }));
    const checkpoint = this.#readCheckpoint();
    this.#orStoredChunks();
    this.#appliedSeq = checkpoint.seq;
    this.#counts = { submitted: checkpoint.submitted, added: checkpoint.added };
    this.#journalBytesSinceCheckpoint = 0;
    this.#poisoned = false;
    this.#replayJournal();
  }

  #orStoredChunks(): void {
    const { scope, epoch } = this.header;
    for (let f = 0; f < this.#filters.length; f++) {
      const filter = this.#filters[f]!;
      const range = this.#env.chunksDb.getRange({ start: chunkKey(scope, epoch, f, 0), end: chunkKey(scope, epoch, f + 1, 0) });
      for (const { key, value } of range) {
        const region = (key as number[])[3]!;
        if (!Number.isInteger(region) || region < 0 || region >= filter.regionCount) {
          throw new SeenStoreError('STORE_CORRUPT', `${this.#chunkWhere(f, region)}: chunk number out of range`);
        }
        const expected = filter.region(region).length;
        filter.orRegion(region, decodeChunk(this.#hash, value, this.#chunkWhere(f, region), expected));
      }
    }
  }

  #replayJournal(): void {
    const { scope, epoch } = this.header;
    const range = this.#env.journalDb.getRange({ start: journalKey(scope, epoch, this.#appliedSeq + 1), end: [scope, epoch + 1] });
    for (const { key, value } of range) {
      const seq = (key as number[])[2]!;
      const where = `journal record ${scope}/${epoch}/${seq}`;
      if (seq !== this.#appliedSeq + 1) {
        throw new SeenStoreError('STORE_CORRUPT', `${where}: expected sequence ${this.#appliedSeq + 1}`);
      }
      const record = decodeJournalRecord(this.#hash, value, where);
      if (record.filterCount !== this.#filters.length) {
        throw new SeenStoreError('STORE_CORRUPT', `${where}: holds ${record.filterCount} hashes per URL, epoch has ${this.#filters.length} filters`);
      }
      this.#applyWords(record.words, record.added);
      this.#appliedSeq = seq;
      this.#counts = { submitted: this.#counts.submitted + record.submitted, added: this.#counts.added + record.added };
      this.#journalBytesSinceCheckpoint += JOURNAL_HEADER_BYTES + record.words.byteLength;
    }
  }

  #applyWords(words: Uint32Array, count: number): void {
    const filters = this.#filters;
    const stride = 2 * filters.length;
    for (let i = 0; i < count; i++) {
      for (let f = 0; f < filters.length; f++) filters[f]!.add(words[i * stride + 2 * f + 1]!, words[i * stride + 2 * f]!);
    }
  }

  #chunkWhere(f: number, region: number): string {
    return `chunk ${this.header.scope}/${this.header.epoch}/filter ${f}/#${region}`;
  }

  /** The scope record as of the current read (or write) transaction. */
  static readScope(env: StoreEnv, scope: string): ReturnType<typeof readScopeRecord> | undefined {
    const value = env.getMeta(scopeKey(scope));
    return value === undefined ? undefined : readScopeRecord(value);
  }
}
