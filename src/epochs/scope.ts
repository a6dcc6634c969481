import { SeenStoreError } from '../errors.js';
import type { Layout } from '../filters/bloom.js';
import type { XxHash } from '../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES } from '../store/chunks.js';
import type { StoreEnv } from '../store/env.js';
import { EpochFilters, type CheckpointOutcome } from '../store/epoch-filters.js';
import { chunkKey, journalKey } from '../store/keys.js';
import { toKey, type NormalizeMode } from '../url/normalize.js';
import { DEFAULT_CAPACITY_URLS, DEFAULT_FPR_TARGET, checkPlan, ensureScope, type EpochPlan } from './create.js';

/** URLs per journal record: a larger call is split, each part committed in its own transaction. */
export const MAX_BATCH_URLS = 65_536;

export interface ScopeOptions {
  /** URLs the first epoch is sized for (default 1,000,000). Used only when the epoch is created. */
  readonly capacityUrls?: number;
  /** Target false-positive rate at capacity (default 0.01). Used only when the epoch is created. */
  readonly fprTarget?: number;
  /** `classic` (default) or `blocked` (one cache line per URL: faster on large filters, slightly higher FPR). */
  readonly layout?: Layout;
  /** How URLs become keys: `none` (default, exact bytes) or `whatwg` (URL-standard serialisation). */
  readonly normalize?: NormalizeMode;
}

export interface AddSummary {
  /** URLs in the call. */
  readonly submitted: number;
  /** URLs that were new. */
  readonly added: number;
}

export interface EpochStats {
  readonly epoch: number;
  readonly state: 'open' | 'sealed';
  readonly createdAtMs: number;
  readonly capacityUrls: number;
  readonly fprTarget: number;
  readonly layout: string;
  readonly normalize: string;
  readonly mBits: number;
  readonly k: number;
  readonly filters: number;
  /** URLs submitted to add / addIfAbsent. */
  readonly submitted: number;
  /** URLs reported new. */
  readonly added: number;
  /** Distinct URLs estimated from the fill (close to `added`; differs by false positives). */
  readonly estimatedDistinct: number;
  readonly fillRatio: number;
  /** False-positive rate of a query right now, from the fill. */
  readonly estimatedFpr: number;
  /** LMDB pages held by the epoch's chunks and journal, in bytes. */
  readonly bytesOnDisk: number;
  readonly journalRecords: number;
}

export interface ScopeStats {
  readonly scope: string;
  readonly openEpoch: number | null;
  readonly epochs: readonly EpochStats[];
}

/** What a scope needs from its store. */
export interface ScopeContext {
  readonly env: StoreEnv;
  readonly hash: XxHash;
  readonly checkpointJournalBytes: number;
  readonly checkpointIntervalMs: number;
  readonly lockStaleMs: number;
  readonly warn: (message: string) => void;
  readonly assertOpen: () => void;
}

/**
 * A handle on one scope of a store. The scope and its first epoch are created on the first add;
 * reads of a scope that does not exist yet answer "not seen".
 */
export class Scope {
  readonly name: string;
  readonly #ctx: ScopeContext;
  readonly #plan: EpochPlan;
  readonly #explicitNormalize: NormalizeMode | undefined;
  #epoch: EpochFilters | undefined;
  #words = new Uint32Array(0);
  #lastCheckpointMs = Date.now();
  #checkpointRunning: Promise<unknown> | undefined;

  constructor(ctx: ScopeContext, name: string, options: ScopeOptions) {
    this.#ctx = ctx;
    this.name = name;
    const capacityUrls = options.capacityUrls ?? DEFAULT_CAPACITY_URLS;
    const fprTarget = options.fprTarget ?? DEFAULT_FPR_TARGET;
    const plan = {
      capacityUrls,
      fprTarget,
      layout: options.layout ?? 'classic',
      normalize: options.normalize ?? 'none',
      sizing: {
        policy: options.capacityUrls === undefined ? 'default' : 'explicit',
        reason: options.capacityUrls === undefined
          ? `first epoch, no capacity given: default ${DEFAULT_CAPACITY_URLS} URLs`
          : `first epoch, capacity given by the caller`,
        inputs: { capacityUrls, fprTarget },
      },
    } as const;
    checkPlan(plan);
    this.#plan = Object.freeze(plan);
    this.#explicitNormalize = options.normalize;
  }

  /** The normalisation of the open epoch, or of the first epoch when none exists yet. */
  normalizeMode(): NormalizeMode {
    this.#ctx.assertOpen();
    const epoch = this.#current(false);
    return (epoch?.header.normalize as NormalizeMode | undefined) ?? this.#plan.normalize;
  }

  /**
   * Records the URLs and answers, per URL, whether it was new (true) or probably seen before
   * (false). Duplicates within the call are new once. Resolves only when the batch is durable.
   */
  async addIfAbsent(urls: readonly string[]): Promise<boolean[]> {
    const answers = new Array<boolean>(urls.length);
    await this.#add(urls, answers);
    return answers;
  }

  /** Records the URLs; resolves with counts once durable. */
  async add(urls: readonly string[]): Promise<AddSummary> {
    const added = await this.#add(urls, undefined);
    return { submitted: urls.length, added };
  }

  /** Per URL, whether it is (probably) in the open epoch. Sees adds committed by other processes. */
  has(urls: readonly string[]): boolean[] {
    this.#ctx.assertOpen();
    const answers = new Array<boolean>(urls.length).fill(false);
    const epoch = this.#current(false);
    if (epoch === undefined) return answers;
    const keys = this.#keys(urls, epoch);
    epoch.catchUp();
    for (let start = 0; start < keys.length; start += MAX_BATCH_URLS) {
      const part = keys.slice(start, start + MAX_BATCH_URLS);
      const words = this.#scratch(part.length, epoch.filterCount);
      epoch.hashKeys(part, words);
      for (let i = 0; i < part.length; i++) answers[start + i] = epoch.has(words, i);
    }
    return answers;
  }

  stats(): ScopeStats {
    this.#ctx.assertOpen();
    const epoch = this.#current(false);
    if (epoch === undefined) return { scope: this.name, openEpoch: null, epochs: [] };
    epoch.catchUp();
    return { scope: this.name, openEpoch: epoch.header.epoch, epochs: [this.#epochStats(epoch)] };
  }

  /** Writes dirty chunks and trims the journal now (normally automatic). */
  async checkpoint(): Promise<CheckpointOutcome> {
    this.#ctx.assertOpen();
    await this.#checkpointRunning;
    const epoch = this.#current(false);
    if (epoch === undefined) return 'clean';
    return this.#runCheckpoint(epoch);
  }

  /** Waits for a background checkpoint, then checkpoints once more (used by close). */
  async flush(): Promise<void> {
    await this.#checkpointRunning;
    if (this.#epoch !== undefined) await this.#runCheckpoint(this.#epoch);
  }

  async #add(urls: readonly string[], answers: boolean[] | undefined): Promise<number> {
    this.#ctx.assertOpen();
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    if (urls.length === 0) return 0;
    let epoch = this.#current(true)!;
    const keys = this.#keys(urls, epoch);
    let added = 0;
    for (let start = 0; start < keys.length; ) {
      const part = keys.slice(start, start + MAX_BATCH_URLS);
      const words = this.#scratch(part.length, epoch.filterCount);
      epoch.hashKeys(part, words);
      const partAnswers = answers === undefined ? undefined : new Array<boolean>(part.length);
      try {
        added += epoch.addBatch(words, part.length, partAnswers, () => this.#expectOpen(epoch));
      } catch (error) {
        if (!(error instanceof SeenStoreError && error.code === 'EPOCH_SEALED' && this.#reloadIfRotated())) throw error;
        epoch = this.#epoch!;
        continue;
      }
      if (answers !== undefined) for (let i = 0; i < part.length; i++) answers[start + i] = partAnswers![i]!;
      start += part.length;
    }
    await this.#ctx.env.flushed();
    this.#maybeCheckpoint(epoch);
    return added;
  }

  /** Inside the write transaction: the epoch we hashed for must still be the scope's open one. */
  #expectOpen(epoch: EpochFilters): void {
    const record = EpochFilters.readScope(this.#ctx.env, this.name);
    if (record === undefined || record.openEpoch !== epoch.header.epoch) {
      throw new SeenStoreError('EPOCH_SEALED', `epoch ${this.name}/${epoch.header.epoch} is no longer open`);
    }
  }

  /** After another process rotated the scope: switch to its new open epoch. */
  #reloadIfRotated(): boolean {
    this.#ctx.env.refresh();
    const record = EpochFilters.readScope(this.#ctx.env, this.name);
    if (record === undefined || record.openEpoch === this.#epoch?.header.epoch) return false;
    this.#epoch = EpochFilters.load(this.#ctx.env, this.#ctx.hash, EpochFilters.readHeader(this.#ctx.env, this.name, record.openEpoch));
    return true;
  }

  #current(create: boolean): EpochFilters | undefined {
    const env = this.#ctx.env;
    env.refresh();
    const record = create ? ensureScope(env, this.name, this.#plan) : EpochFilters.readScope(env, this.name);
    if (record === undefined) return undefined;
    if (this.#epoch === undefined || this.#epoch.header.epoch !== record.openEpoch) {
      const header = EpochFilters.readHeader(env, this.name, record.openEpoch);
      if (this.#explicitNormalize !== undefined && this.#explicitNormalize !== header.normalize) {
        throw new SeenStoreError(
          'USAGE',
          `epoch ${this.name}/${header.epoch} normalises with ${header.normalize}, not ${this.#explicitNormalize}: an epoch never mixes modes`,
        );
      }
      this.#epoch = EpochFilters.load(env, this.#ctx.hash, header);
    }
    return this.#epoch;
  }

  /** Validates every URL before anything is written: a bad one fails the whole call. */
  #keys(urls: readonly string[], epoch: EpochFilters): string[] {
    const mode = epoch.header.normalize as NormalizeMode;
    const keys = new Array<string>(urls.length);
    for (let i = 0; i < urls.length; i++) {
      const url = urls[i];
      if (typeof url !== 'string') throw new TypeError(`urls[${i}] is not a string`);
      const key = toKey(url, mode);
      if (key === undefined) {
        throw new SeenStoreError('INVALID_URL', `urls[${i}] is not a usable URL (empty, ill-formed UTF-16, over 64 KiB${mode === 'whatwg' ? ', or not an absolute URL' : ''})`);
      }
      keys[i] = key;
    }
    return keys;
  }

  /** A reused word buffer for one batch: no allocation per URL. */
  #scratch(count: number, filterCount: number): Uint32Array {
    const needed = 2 * count * filterCount;
    if (this.#words.length < needed) this.#words = new Uint32Array(Math.max(needed, 2 * 1024 * filterCount));
    return this.#words;
  }

  #maybeCheckpoint(epoch: EpochFilters): void {
    if (this.#checkpointRunning !== undefined) return;
    const due =
      epoch.journalBytesSinceCheckpoint >= this.#ctx.checkpointJournalBytes ||
      (epoch.journalBytesSinceCheckpoint > 0 && Date.now() - this.#lastCheckpointMs >= this.#ctx.checkpointIntervalMs);
    if (!due) return;
    this.#checkpointRunning = this.#runCheckpoint(epoch)
      .catch((error: unknown) => this.#ctx.warn(`background checkpoint failed (the journal keeps every add): ${(error as Error).message}`))
      .finally(() => {
        this.#checkpointRunning = undefined;
      });
  }

  async #runCheckpoint(epoch: EpochFilters): Promise<CheckpointOutcome> {
    this.#lastCheckpointMs = Date.now();
    return epoch.checkpoint(this.#ctx.lockStaleMs);
  }

  #epochStats(epoch: EpochFilters): EpochStats {
    const { header } = epoch;
    const filter = epoch.filters[0]!;
    const env = this.#ctx.env;
    const chunkRange = { start: chunkKey(this.name, header.epoch, 0, 0), end: chunkKey(this.name, header.epoch + 1, 0, 0) };
    let bytesOnDisk = 0;
    for (const key of env.chunksDb.getKeys(chunkRange)) {
      const region = (key as number[])[3]!;
      const payload = Math.min(CHUNK_PAYLOAD_BYTES, filter.bytes.length - region * CHUNK_PAYLOAD_BYTES);
      bytesOnDisk += pageBytes(payload + 8);
    }
    let journalRecords = 0;
    const journalRange = { start: journalKey(this.name, header.epoch, 0), end: [this.name, header.epoch + 1] };
    for (const { value } of env.journalDb.getRange(journalRange)) {
      journalRecords++;
      bytesOnDisk += pageBytes(value.length);
    }
    let ones = 0;
    for (const f of epoch.filters) ones += f.fillRatio;
    const fillRatio = ones / epoch.filters.length;
    let estimatedFpr = 1;
    for (const f of epoch.filters) estimatedFpr *= f.currentFpr;
    return {
      epoch: header.epoch,
      state: header.state,
      createdAtMs: header.createdAtMs,
      capacityUrls: header.capacityUrls,
      fprTarget: header.fprTarget,
      layout: header.layout,
      normalize: header.normalize,
      mBits: header.mBits,
      k: header.k,
      filters: epoch.filterCount,
      submitted: epoch.counts.submitted,
      added: epoch.counts.added,
      estimatedDistinct: Math.round(filter.estimatedCount),
      fillRatio,
      estimatedFpr,
      bytesOnDisk,
      journalRecords,
    };
  }
}

/** LMDB page bytes taken by a value of `bytes` (overflow pages carry a 24-byte header). */
function pageBytes(bytes: number): number {
  return Math.ceil((bytes + 24) / 4096) * 4096;
}
