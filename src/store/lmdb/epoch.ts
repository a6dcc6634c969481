import { assert } from '../../errors.js';
import { queueNew } from './frontier.js';
import { keyCount, type Keys, type XxHash } from '../../hash/xxhash.js';
import type {
  CheckpointOutcome,
  DeliveryWrite,
  EpochBits,
  EpochContents,
  EpochSummary,
  QueueItems,
} from '../backend.js';
import { keepUndelivered, type DeliveryFiles } from './deliveries.js';
import type { AfterDecide } from './epoch-copy.js';
import { isCountingEpoch, type EpochHeader } from '../records.js';
import type { BitThread } from './bit-thread.js';
import type { StoreEnv } from './env.js';
import { BloomCopy } from './bloom-copy.js';
import { CountingCopy } from './counting-copy.js';
import type { EpochCopy } from './epoch-copy.js';
import type { Durability } from './journal-cursor.js';
import { faultPoint } from '../faults.js';
import { expectOpenEpoch } from './metadata.js';

/** Chunk bytes read (loads, and chunks loaded on demand) after which the store's map is released (StoreEnv.releaseMappedPages). */
export const RELEASE_MAP_AFTER_BYTES = 32 * 2 ** 20;

/** Loads an epoch's working copy: counters for a counting epoch, bits for every other. */
export function loadEpochCopy(env: StoreEnv, hash: XxHash, header: EpochHeader, shared: boolean): EpochCopy {
  return isCountingEpoch(header) ? CountingCopy.load(env, hash, header) : BloomCopy.load(env, hash, header, shared);
}

/** What every loaded epoch of one LMDB store shares. */
export interface LmdbEpochContext {
  readonly env: StoreEnv;
  readonly hash: XxHash;
  /** The thread that sets the bits of adds (SeenStoreOptions.threads 2); undefined: the calling thread. */
  readonly bitThread: BitThread | undefined;
  readonly checkpointJournalBytes: number;
  readonly checkpointIntervalMs: number;
  readonly lockStaleMs: number;
  readonly warn: (message: string) => void;
  /** The clock of frontier entries' times (SeenStoreOptions.clock). */
  readonly clock: () => number;
  /** The delivery files this handle's runs write (deliveries.ts). */
  readonly deliveryFiles: DeliveryFiles;
  /** A reused word buffer of at least `words` words: one per store, no allocation per batch. */
  readonly scratch: (words: number) => Uint32Array;
}

/**
 * One epoch of an LMDB store behind the seam: its working copy (EpochCopy: the bits in process
 * memory, the journal in journal.log and LMDB) plus when to checkpoint it. Reads catch up with every commit of
 * every process first; adds catch up inside their write transaction.
 */
export class LmdbEpoch implements EpochBits {
  readonly #ctx: LmdbEpochContext;
  readonly #filters: EpochCopy;
  #lastCheckpointMs = Date.now();
  #checkpointRunning: Promise<unknown> | undefined;
  /** Bytes of stored chunks read since this epoch last released the map. */
  #mappedChunkBytes = 0;

  constructor(ctx: LmdbEpochContext, filters: EpochCopy) {
    this.#ctx = ctx;
    this.#filters = filters;
    this.#releaseIfLarge();
  }

  get header(): EpochHeader {
    return this.#filters.header;
  }

  /** The working copy itself, for the backend's own atomic steps (rotation). */
  get workingCopy(): EpochCopy {
    return this.#filters;
  }

  get counting(): boolean {
    return this.#filters.counting;
  }

  async addIfAbsent(
    keys: Keys,
    answers: boolean[] | undefined,
    enqueue?: QueueItems,
    deliver?: DeliveryWrite,
  ): Promise<number> {
    const filters = this.#filters;
    const { scope, epoch } = filters.header;
    const env = this.#ctx.env;
    const expectOpen = (): void => expectOpenEpoch(env, scope, epoch);
    let inLmdb: (() => boolean) | undefined;
    if (enqueue !== undefined) {
      assert(
        answers !== undefined && enqueue.urls.length === keyCount(keys),
        'an enqueue gives one URL per key and wants the answers',
      );
      env.ensureFrontierDb();
      inLmdb = () => queueNew(env, scope, epoch, enqueue, answers, this.#ctx.clock());
    }
    let inFile: (() => void) | undefined;
    if (deliver !== undefined) {
      assert(answers !== undefined, 'a delivered add wants the answers');
      inFile = () => keepUndelivered(this.#ctx.deliveryFiles, env.dir, scope, deliver, answers);
    }
    const afterDecide: AfterDecide | undefined =
      inLmdb === undefined && inFile === undefined
        ? undefined
        : { ...(inLmdb && { inLmdb }), ...(inFile && { inFile }) };
    const thread = this.#ctx.bitThread;
    let added: number;
    if (thread === undefined) {
      const words = this.#ctx.scratch(2 * keyCount(keys) * filters.filterCount);
      filters.hashKeys(keys, words);
      added = filters.addBatch(keys, words, answers, expectOpen, afterDecide);
    } else {
      added = filters.addBatchOn(thread, keys, answers, expectOpen, afterDecide);
    }
    await this.#durable(filters.durability());
    this.#releaseIfLarge();
    this.#maybeCheckpoint();
    return added;
  }

  async has(keys: readonly string[], out: Uint8Array): Promise<void> {
    const filters = this.#caughtUp();
    const words = this.#ctx.scratch(2 * keys.length * filters.filterCount);
    filters.hashKeys(keys, words);
    filters.answer(words, keys.length, out);
    this.#releaseIfLarge();
  }

  async count(keys: readonly string[], out: number[]): Promise<void> {
    const filters = this.#counting('count');
    this.#caughtUp();
    const words = this.#ctx.scratch(2 * keys.length * filters.filterCount);
    filters.hashKeys(keys, words);
    for (let i = 0; i < keys.length; i++) out[i]! += filters.count(words, i);
  }

  async delete(keys: readonly string[]): Promise<number> {
    const filters = this.#counting('delete');
    const { scope, epoch } = filters.header;
    const words = this.#ctx.scratch(2 * keys.length * filters.filterCount);
    filters.hashKeys(keys, words);
    const deleted = filters.deleteBatch(keys, words, () => expectOpenEpoch(this.#ctx.env, scope, epoch));
    await this.#durable(filters.durability());
    this.#maybeCheckpoint();
    return deleted;
  }

  async summary(): Promise<EpochSummary> {
    return this.#caughtUp().summary();
  }

  async contents(): Promise<EpochContents> {
    const filters = this.#caughtUp();
    return {
      header: filters.header,
      summary: filters.summary(),
      sliceAdded: filters.sliceAdded,
      filters: filters.filterBytes(),
    };
  }

  async merge(incoming: readonly Uint8Array[], check: (header: EpochHeader) => void): Promise<number> {
    const { scope, epoch } = this.#filters.header;
    // The engine refuses to merge into a counting epoch (INCOMPATIBLE, transfer.ts mergeMismatch) before it gets here.
    assert(this.#filters instanceof BloomCopy, 'merge reaches only Bloom epochs');
    try {
      return this.#filters.mergeFilters(incoming, (header) => {
        expectOpenEpoch(this.#ctx.env, scope, epoch);
        check(header);
      });
    } finally {
      // The merge read every stored chunk of the epoch through the map: let them leave the RSS.
      this.#ctx.env.releaseMappedPages();
    }
  }

  async checkpoint(): Promise<CheckpointOutcome> {
    await this.#checkpointRunning;
    return this.#runCheckpoint();
  }

  /** Waits for a background checkpoint, then checkpoints once more (at close). */
  async flush(): Promise<void> {
    await this.#checkpointRunning;
    await this.#runCheckpoint();
  }

  /**
   * Waits until the batch's answers are durable: its journal frames synced (one fdatasync for
   * every batch that got in before it began, of any process), and LMDB synced when the batch
   * committed there or its answers depend on other processes' LMDB records.
   */
  async #durable(target: Durability): Promise<void> {
    faultPoint('add:before-sync');
    const env = this.#ctx.env;
    const journal = env.useJournal(this.#ctx.hash);
    if (!target.lmdbCommitted && !target.lmdbOthers) return journal.durable(target.generation, target.end);
    await Promise.all([
      journal.durable(target.generation, target.end),
      target.lmdbCommitted ? env.flushed() : env.syncData(),
    ]);
  }

  /** Catches up with every commit of every process. */
  #caughtUp(): EpochCopy {
    this.#ctx.env.refresh();
    this.#filters.catchUp();
    this.#releaseIfLarge();
    return this.#filters;
  }

  /**
   * Loads (whole, or chunk by chunk as queries and adds touch them) left the chunks' file pages
   * mapped in this process (RSS): past RELEASE_MAP_AFTER_BYTES, let them go.
   */
  #releaseIfLarge(): void {
    this.#mappedChunkBytes += this.#filters.takeChunkBytesRead();
    if (this.#mappedChunkBytes < RELEASE_MAP_AFTER_BYTES) return;
    this.#mappedChunkBytes = 0;
    this.#ctx.env.releaseMappedPages();
  }

  /** Scope.count and Scope.delete refuse an epoch that is not counting (USAGE) before they get here. */
  #counting(doing: string): CountingCopy {
    assert(this.#filters instanceof CountingCopy, `${doing} reaches only counting epochs`);
    return this.#filters;
  }

  #maybeCheckpoint(): void {
    if (this.#checkpointRunning !== undefined) return;
    const journalBytes = this.#filters.journalBytesSinceCheckpoint;
    const due =
      journalBytes >= this.#ctx.checkpointJournalBytes ||
      (journalBytes > 0 && Date.now() - this.#lastCheckpointMs >= this.#ctx.checkpointIntervalMs);
    if (!due) return;
    this.#checkpointRunning = this.#runCheckpoint()
      .catch((error: unknown) =>
        this.#ctx.warn(`background checkpoint failed (the journal keeps every add): ${(error as Error).message}`),
      )
      .finally(() => {
        this.#checkpointRunning = undefined;
      });
  }

  async #runCheckpoint(): Promise<CheckpointOutcome> {
    this.#lastCheckpointMs = Date.now();
    return this.#filters.checkpoint(this.#ctx.lockStaleMs);
  }
}
