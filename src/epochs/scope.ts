import { SeenStoreError } from '../errors.js';
import type { Layout } from '../filters/bloom.js';
import type { Keying } from '../filters/keying.js';
import type { BitThread } from '../store/bit-thread.js';
import { CLASSIC, parseStrategy, strategyName, strategyOf, type Strategy } from '../filters/strategy.js';
import { keyCount, isUtf8Keys, keyStrings, sliceKeys, type Keys, type Utf8Keys, type XxHash } from '../hash/xxhash.js';
import type { StoreEnv } from '../store/env.js';
import { EpochFilters, type CheckpointOutcome, type SliceSummary } from '../store/epoch-filters.js';
import type { EpochHeader, SizingDecision } from '../store/records.js';
import { CHUNK_PAYLOAD_BYTES } from '../store/chunks.js';
import { epochUsage } from '../store/usage.js';
import { firstInvalidUtf8Key, toKey, type NormalizeMode } from '../url/normalize.js';
import { DEFAULT_CAPACITY_URLS, DEFAULT_FPR_TARGET, checkPlan, ensureScope, type EpochPlan } from './create.js';
import { resolveEpochs, type EpochSpec, type MembershipMode } from './epoch-spec.js';
import { epochNumbers, prune, type Dropped, type PruneOptions } from './retention.js';
import { rotate, type RotateOptions } from './rotation.js';
import { exportEpoch, mergeIntoEpoch, type ExportResult, type MergeResult } from './transfer.js';

/** Chunk bytes read by one load after which the store's map is released (StoreEnv.releaseMappedPages). */
const RELEASE_MAP_AFTER_BYTES = 32 * 2 ** 20;

/** URLs per journal record: a larger call is split, each part committed in its own transaction. */
export const MAX_BATCH_URLS = 65_536;

export interface ScopeOptions {
  /** URLs the first epoch is sized for (default 1,000,000). Used only when the epoch is created. */
  readonly capacityUrls?: number;
  /** Target false-positive rate of the epoch (default 0.01). Used only when the epoch is created. */
  readonly fprTarget?: number;
  /**
   * How the epochs answer (docs/strategies.md): `classic` (default), `blocked` (one cache line per
   * URL: faster on large filters, slightly higher FPR) or `spatial:S` (S filters with their own
   * seeds, seen only if all hold the URL). Used when the scope is created; rotations keep it
   * unless RotateOptions.strategy says otherwise.
   */
  readonly strategy?: string;
  /** The older spelling of `strategy: 'classic' | 'blocked'`. */
  readonly layout?: Layout;
  /** How URLs become keys: `none` (default, exact bytes), `whatwg` (URL-standard serialisation) or `crawler` (whatwg, no fragment, query sorted). */
  readonly normalize?: NormalizeMode;
  /**
   * Seeds of the first epoch (16 hex digits each, as `epoch show` prints them) instead of fresh
   * ones, so parallel crawlers can merge their exports. Used only when the scope is created.
   */
  readonly seeds?: readonly string[];
}

export interface AddOptions {
  /**
   * Only add to this epoch: if it is not (or no longer) the open one, fail with EPOCH_SEALED
   * instead of following a rotation into the next epoch.
   */
  readonly epoch?: number;
}

export interface QueryOptions {
  /** Epochs to look in (default `current`). */
  readonly epochs?: EpochSpec;
  /** `any` (default): seen in at least one of them; `all`: seen in every one. */
  readonly mode?: MembershipMode;
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
  readonly sealedAtMs: number | null;
  readonly capacityUrls: number;
  readonly fprTarget: number;
  /** `classic`, `blocked` or `spatial:S` (ScopeOptions.strategy). */
  readonly strategy: string;
  readonly normalize: string;
  /** URLs submitted to add / addIfAbsent. */
  readonly submitted: number;
  /** URLs reported new. */
  readonly added: number;
  /** Distinct URLs estimated from the fill (close to `added`; differs by false positives). */
  readonly estimatedDistinct: number;
  readonly fillRatio: number;
  /** False-positive rate of a query now, from the fill (the union over slices). */
  readonly estimatedFpr: number;
  readonly slices: number;
  /** LMDB pages held by the epoch's chunks and journal, in bytes. */
  readonly bytesOnDisk: number;
  readonly journalRecords: number;
}

export interface EpochDetails extends EpochStats {
  readonly hashScheme: string;
  readonly growth: { readonly factor: number; readonly tightening: number };
  readonly sizing: SizingDecision;
  /** Per slice: geometry, seeds (hex) and fill. */
  readonly sliceDetails: readonly (SliceSummary & { readonly layout: string; readonly seeds: readonly string[]; readonly keying?: Keying })[];
}

export interface ScopeStats {
  readonly scope: string;
  readonly openEpoch: number | null;
  readonly epochs: readonly EpochStats[];
}

export type Classification = 'new' | 'revisit';
export type DiffCategory = 'both' | 'only-from' | 'only-to' | 'neither';

export interface DiffResult {
  readonly from: number;
  readonly to: number;
  readonly categories: DiffCategory[];
  readonly counts: Readonly<Record<DiffCategory, number>>;
}

export interface RotateResult {
  readonly sealed: EpochStats;
  readonly opened: EpochDetails;
}

/** What a scope needs from its store. */
export interface ScopeContext {
  readonly env: StoreEnv;
  readonly hash: XxHash;
  /** The thread that sets the bits of adds (SeenStoreOptions.threads 2); undefined: the calling thread. */
  readonly bitThread: BitThread | undefined;
  readonly checkpointJournalBytes: number;
  readonly checkpointIntervalMs: number;
  readonly lockStaleMs: number;
  readonly warn: (message: string) => void;
  readonly assertOpen: () => void;
  /** Throws USAGE when the store was opened read-only. */
  readonly assertWritable: (doing: string) => void;
}

/**
 * A handle on one scope of a store: its numbered epochs, exactly one of them open. The scope and
 * its first epoch are created on the first add; reads of a scope that does not exist yet answer
 * "not seen".
 */
export class Scope {
  readonly name: string;
  readonly #ctx: ScopeContext;
  readonly #plan: EpochPlan;
  readonly #explicitNormalize: NormalizeMode | undefined;
  /** Loaded epochs: the open one, and sealed ones that queries asked for. */
  readonly #loaded = new Map<number, EpochFilters>();
  #openEpoch: number | undefined;
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
      strategy: scopeStrategy(options),
      normalize: options.normalize ?? 'none',
      sizing: {
        policy: options.capacityUrls === undefined ? 'default' : 'explicit',
        reason: options.capacityUrls === undefined
          ? `first epoch, no capacity given: default ${DEFAULT_CAPACITY_URLS} URLs`
          : 'first epoch, capacity given by the caller',
        inputs: { capacityUrls, fprTarget },
      },
      ...(options.seeds === undefined ? {} : { seeds: options.seeds }),
    } as const;
    checkPlan(plan);
    this.#plan = Object.freeze(plan);
    this.#explicitNormalize = options.normalize;
  }

  /** The normalisation of the open epoch, or of the first epoch when none exists yet. */
  async normalizeMode(): Promise<NormalizeMode> {
    this.#ctx.assertOpen();
    return this.#normalizeMode();
  }

  #normalizeMode(): NormalizeMode {
    const epoch = this.#open(false);
    return (epoch?.header.normalize as NormalizeMode | undefined) ?? this.#plan.normalize;
  }

  /** Number of the open epoch, or null when the scope does not exist yet. */
  async openEpoch(): Promise<number | null> {
    this.#ctx.assertOpen();
    return this.#open(false)?.header.epoch ?? null;
  }

  /**
   * Records the URLs in the open epoch and answers, per URL, whether it was new (true) or probably
   * seen before (false). Duplicates within the call are new once. Resolves when durable. If another
   * process rotates the scope meanwhile, the rest of the call goes to the new epoch.
   */
  async addIfAbsent(urls: readonly string[], options: AddOptions = {}): Promise<boolean[]> {
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    const answers = new Array<boolean>(urls.length);
    await this.#add(urls, answers, options);
    return answers;
  }

  /**
   * As addIfAbsent, for URLs that are UTF-8 bytes already, where they lie (the lines of an input
   * buffer): URL i is urls.bytes[urls.ranges[2i]] up to urls.ranges[2i + 1], in increasing order.
   * In an epoch that normalises with `none` the bytes are hashed as they are, without a string per
   * URL (what `seenstore filter-new` does); with `whatwg` they are decoded and normalised first.
   * The buffers must not change until the promise settles.
   */
  async addIfAbsentUtf8(urls: Utf8Keys, options: AddOptions = {}): Promise<boolean[]> {
    const shaped = typeof urls === 'object' && urls !== null && urls.bytes instanceof Uint8Array && urls.ranges instanceof Uint32Array &&
      Number.isSafeInteger(urls.count) && urls.count >= 0 && urls.ranges.length >= 2 * urls.count;
    if (!shaped) throw new TypeError('urls must be { bytes: Uint8Array, ranges: Uint32Array (a start and an end per URL), count }');
    const answers = new Array<boolean>(urls.count);
    await this.#add(urls, answers, options);
    return answers;
  }

  /** Records the URLs; resolves with counts once durable. */
  async add(urls: readonly string[], options: AddOptions = {}): Promise<AddSummary> {
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    const added = await this.#add(urls, undefined, options);
    return { submitted: urls.length, added };
  }

  /**
   * Per URL, whether it is (probably) seen in the given epochs (default: the open one), with `any`
   * or `all` semantics. Sees adds committed by other processes.
   */
  async has(urls: readonly string[], options: QueryOptions = {}): Promise<boolean[]> {
    this.#ctx.assertOpen();
    const mode = options.mode ?? 'any';
    if (mode !== 'any' && mode !== 'all') throw new SeenStoreError('USAGE', `mode must be any or all, got ${JSON.stringify(mode)}`);
    const open = this.#open(false);
    if (open === undefined) {
      this.#keys(urls, this.#plan.normalize);
      return new Array<boolean>(urls.length).fill(false);
    }
    this.#keys(urls, open.header.normalize as NormalizeMode, true);
    const epochs = this.#resolve(options.epochs ?? 'current');
    const answers = new Array<boolean>(urls.length).fill(mode === 'all');
    for (const n of epochs) {
      const inEpoch = this.#hasIn(this.#epochFilters(n), urls);
      for (let i = 0; i < urls.length; i++) answers[i] = mode === 'all' ? answers[i]! && inEpoch[i]! : answers[i]! || inEpoch[i]!;
    }
    return answers;
  }

  /**
   * Counting epochs only: per URL, how many times it was added (minus deletes) in the given epochs
   * (default: the open one), summed. The recurring-minimum estimate: 0 means never added; a count
   * is rarely off, by collisions (docs/strategies.md).
   */
  async count(urls: readonly string[], options: { readonly epochs?: EpochSpec } = {}): Promise<number[]> {
    this.#ctx.assertOpen();
    const open = this.#open(false);
    if (open === undefined) {
      this.#keys(urls, this.#plan.normalize);
      return new Array<number>(urls.length).fill(0);
    }
    const totals = new Array<number>(urls.length).fill(0);
    for (const n of this.#resolve(options.epochs ?? 'current')) {
      const epoch = this.#epochFilters(n);
      if (!epoch.counting) {
        throw new SeenStoreError('USAGE', `epoch ${this.name}/${n} is ${strategyName(strategyOf(epoch.header.slices[0]!, epoch.header.growth))}, not counting: it cannot count`);
      }
      const mode = epoch.header.normalize as NormalizeMode;
      const keys = this.#keys(urls, mode, true);
      for (let start = 0; start < keys.length; start += MAX_BATCH_URLS) {
        const part = keys.slice(start, start + MAX_BATCH_URLS);
        const words = this.#scratch(part.length, epoch.filterCount);
        epoch.hashKeys(part, words);
        for (let i = 0; i < part.length; i++) totals[start + i]! += epoch.count(words, i);
      }
    }
    return totals;
  }

  /**
   * Counting epochs only: takes one occurrence of each URL out of the open epoch (a URL it does not
   * hold is skipped). Delete only what was added: deleting a URL that merely looks present takes
   * counts from the URLs it collides with. Resolves with how many were deleted, once durable.
   */
  async delete(urls: readonly string[]): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('delete');
    const epoch = this.#open(false);
    if (epoch === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} does not exist`);
    if (!epoch.counting) throw new SeenStoreError('USAGE', `epoch ${this.name}/${epoch.header.epoch} is not counting: only counting epochs can delete`);
    const keys = this.#keys(urls, epoch.header.normalize as NormalizeMode, urls.length <= MAX_BATCH_URLS);
    let deleted = 0;
    for (let start = 0; start < keys.length; start += MAX_BATCH_URLS) {
      const part = keys.slice(start, start + MAX_BATCH_URLS);
      const words = this.#scratch(part.length, epoch.filterCount);
      epoch.hashKeys(part, words);
      deleted += epoch.deleteBatch(part, words, () => this.#expectOpen(epoch));
    }
    await this.#ctx.env.flushed();
    this.#maybeCheckpoint(epoch);
    return deleted;
  }

  /** Per URL: `revisit` when the previous epoch holds it, else `new`. Without a previous epoch, all are new. */
  async classify(urls: readonly string[]): Promise<Classification[]> {
    this.#ctx.assertOpen();
    const open = this.#open(false);
    const previous = open === undefined ? undefined : open.header.epoch - 1;
    if (previous === undefined || previous < 1 || !epochNumbers(this.#ctx.env, this.name).includes(previous)) {
      this.#keys(urls, this.#normalizeMode());
      return urls.map(() => 'new');
    }
    return this.#hasIn(this.#epochFilters(previous), urls).map((seen) => (seen ? 'revisit' : 'new'));
  }

  /** Compares two epochs over a URL list: in both, only in `from`, only in `to`, or in neither. */
  async diff(urls: readonly string[], from: EpochSpec, to: EpochSpec): Promise<DiffResult> {
    this.#ctx.assertOpen();
    if (this.#open(false) === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} does not exist`);
    const single = (spec: EpochSpec, which: string): number => {
      const numbers = this.#resolve(spec);
      if (numbers.length !== 1) throw new SeenStoreError('USAGE', `--${which} must name one epoch`);
      return numbers[0]!;
    };
    const a = single(from, 'from');
    const b = single(to, 'to');
    const inA = this.#hasIn(this.#epochFilters(a), urls);
    const inB = this.#hasIn(this.#epochFilters(b), urls);
    const counts: Record<DiffCategory, number> = { both: 0, 'only-from': 0, 'only-to': 0, neither: 0 };
    const categories = urls.map((_, i): DiffCategory => {
      const category = inA[i] ? (inB[i] ? 'both' : 'only-from') : inB[i] ? 'only-to' : 'neither';
      counts[category]++;
      return category;
    });
    return { from: a, to: b, categories, counts };
  }

  /**
   * Seals the open epoch and opens the next with fresh seeds, sized from history unless a
   * capacity is given. Atomic; adds racing it from other processes land in exactly one epoch.
   * With `ifEpoch`, null when that epoch is no longer the open one (nothing rotated). Without it,
   * a rotation that loses a race with another rotates the epoch the other opened (once; a second
   * lost race is EPOCH_SEALED).
   */
  async rotate(options: RotateOptions & { readonly ifEpoch: number }): Promise<RotateResult | null>;
  async rotate(options?: RotateOptions): Promise<RotateResult>;
  async rotate(options: RotateOptions = {}): Promise<RotateResult | null> {
    this.#ctx.assertOpen();
    if (options.ifEpoch !== undefined && !(Number.isSafeInteger(options.ifEpoch) && options.ifEpoch >= 1)) {
      throw new TypeError(`ifEpoch must be a whole number >= 1, got ${String(options.ifEpoch)}`);
    }
    this.#ctx.assertWritable('rotate');
    if (options.capacityUrls !== undefined || options.fprTarget !== undefined || options.strategy !== undefined) {
      // Checked before anything is touched; seeds are checked against the strategy in the rotation.
      const { seeds: _unused, ...plan } = this.#plan;
      checkPlan({
        ...plan,
        capacityUrls: options.capacityUrls ?? 1,
        fprTarget: options.fprTarget ?? 0.5,
        ...(options.strategy === undefined ? {} : { strategy: parseStrategy(options.strategy) }),
      });
    }
    await this.#checkpointRunning;
    const open = this.#open(true)!;
    let rotation;
    for (let attempt = 0; ; attempt++) {
      try {
        rotation = rotate(this.#ctx.env, this.name, open, options);
        break;
      } catch (error) {
        if (!(error instanceof SeenStoreError && error.code === 'EPOCH_SEALED') || attempt > 0) throw error;
        this.#open(false);
      }
    }
    if (rotation === null) return null;
    await this.#ctx.env.flushed();
    // The sealed epoch's journal goes into its chunks now, so reading it later loads only chunks.
    await this.#runCheckpoint(this.#epochFilters(rotation.sealed.epoch)).catch((error: unknown) =>
      this.#ctx.warn(`checkpoint of sealed epoch ${rotation.sealed.epoch} failed (its journal keeps every add): ${(error as Error).message}`),
    );
    const next = this.#open(false)!;
    return { sealed: this.#stats(rotation.sealed, undefined), opened: this.#details(next.header) };
  }

  /**
   * Writes one epoch (default: the open one) to a portable export file (docs/format.md): to move
   * it to another machine, merge it with other crawlers' exports, or compare against it.
   */
  async export(path: string, epoch: EpochSpec = 'current', options: { readonly signal?: AbortSignal } = {}): Promise<ExportResult> {
    this.#ctx.assertOpen();
    if (this.#open(false) === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} does not exist`);
    const numbers = this.#resolve(epoch);
    if (numbers.length !== 1) throw new SeenStoreError('USAGE', 'export takes one epoch');
    return exportEpoch(this.#ctx.hash, this.#epochFilters(numbers[0]!), path, options.signal);
  }

  /**
   * ORs export files into the open epoch (e.g. parallel crawlers that share its seeds). `epoch`,
   * when given, must be the open epoch (sealed epochs never change): EPOCH_SEALED otherwise.
   * Incompatible files (other seeds, geometry, hash scheme) are refused with INCOMPATIBLE before
   * anything is written; the merge is one transaction. `signal` stops it before that transaction.
   */
  async merge(paths: readonly string[], epoch?: number, options: { readonly signal?: AbortSignal } = {}): Promise<MergeResult> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('merge');
    const open = this.#open(false);
    if (open === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} does not exist`);
    if (epoch !== undefined && epoch !== open.header.epoch) {
      if (!epochNumbers(this.#ctx.env, this.name).includes(epoch)) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} has no epoch ${epoch}`);
      throw new SeenStoreError(
        'EPOCH_SEALED',
        `epoch ${this.name}/${epoch} is sealed and never changes; merge into the open epoch ${open.header.epoch}, or merge the files with --out and import the result`,
      );
    }
    try {
      return await mergeIntoEpoch(this.#ctx.hash, open, paths, () => this.#expectOpen(open), options.signal);
    } finally {
      // The merge read every stored chunk of the epoch through the map: let them leave the RSS.
      this.#ctx.env.releaseMappedPages();
    }
  }

  /** Drops old sealed epochs (see PruneOptions); returns what was dropped. */
  async prune(options: PruneOptions): Promise<Dropped[]> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('prune');
    const dropped = await prune(this.#ctx.env, this.name, options);
    for (const { epoch } of dropped) this.#loaded.delete(epoch);
    return dropped;
  }

  async stats(): Promise<ScopeStats> {
    this.#ctx.assertOpen();
    const open = this.#open(false);
    if (open === undefined) return { scope: this.name, openEpoch: null, epochs: [] };
    const epochs = epochNumbers(this.#ctx.env, this.name).map((n) => {
      const header = n === open.header.epoch ? open.header : EpochFilters.readHeader(this.#ctx.env, this.name, n);
      return this.#stats(header, n === open.header.epoch ? open : undefined);
    });
    return { scope: this.name, openEpoch: open.header.epoch, epochs };
  }

  /** Header, seeds, geometry, slices and sizing decision of epoch `n`. */
  async epoch(n: number): Promise<EpochDetails> {
    this.#ctx.assertOpen();
    if (this.#open(false) === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} does not exist`);
    return this.#details(EpochFilters.readHeader(this.#ctx.env, this.name, n));
  }

  /** Writes dirty chunks and trims the journal now (normally automatic). */
  async checkpoint(): Promise<CheckpointOutcome> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('checkpoint');
    await this.#checkpointRunning;
    const open = this.#open(false);
    if (open === undefined) return 'clean';
    return this.#runCheckpoint(open);
  }

  /** Waits for a background checkpoint, then checkpoints once more (used by close). */
  async flush(): Promise<void> {
    // A read-only handle replayed the journal tail in memory only: there is nothing of its own to write.
    if (this.#ctx.env.readOnly) return;
    await this.#checkpointRunning;
    const open = this.#openEpoch === undefined ? undefined : this.#loaded.get(this.#openEpoch);
    if (open !== undefined) await this.#runCheckpoint(open);
  }

  /** `urls`: an array (addIfAbsent and add check) or UTF-8 keys of the right shape (addIfAbsentUtf8 checks). */
  async #add(urls: Keys, answers: boolean[] | undefined, options: AddOptions): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('add');
    if (keyCount(urls) === 0) return 0;
    let epoch = this.#open(true, false)!;
    if (options.epoch !== undefined && options.epoch !== epoch.header.epoch) {
      throw new SeenStoreError('EPOCH_SEALED', `epoch ${this.name}/${options.epoch} is not open (the open epoch is ${epoch.header.epoch})`);
    }
    const keys = this.#anyKeys(urls, epoch.header.normalize as NormalizeMode);
    const count = keyCount(keys);
    let added = 0;
    for (let start = 0; start < count; ) {
      const part = sliceKeys(keys, start, Math.min(count, start + MAX_BATCH_URLS));
      const partCount = keyCount(part);
      // One part (the usual call): its answers are the call's.
      const partAnswers = answers === undefined || partCount === count ? answers : new Array<boolean>(partCount);
      const thread = this.#ctx.bitThread;
      const expectOpen = (): void => this.#expectOpen(epoch);
      try {
        if (thread === undefined) {
          const words = this.#scratch(partCount, epoch.filterCount);
          epoch.hashKeys(part, words);
          added += epoch.addBatch(part, words, partAnswers, expectOpen);
        } else {
          added += epoch.addBatchOn(thread, part, partAnswers, expectOpen);
        }
      } catch (error) {
        const rotated = error instanceof SeenStoreError && error.code === 'EPOCH_SEALED' && options.epoch === undefined;
        const next = rotated ? this.#open(false) : undefined;
        if (next === undefined || next === epoch) throw error;
        if (next.header.normalize !== epoch.header.normalize) {
          throw new SeenStoreError('EPOCH_SEALED', `epoch ${this.name}/${epoch.header.epoch} was rotated to an epoch with another normalisation`);
        }
        epoch = next;
        continue;
      }
      if (answers !== undefined && partAnswers !== answers) for (let i = 0; i < partCount; i++) answers[start + i] = partAnswers![i]!;
      start += partCount;
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

  /** The open epoch, caught up with the store (created first when `create`). */
  /**
   * The open epoch's filters as of now. `catchUp` false: loaded but not caught up, for an add,
   * which catches up inside its write transaction anyway (rehashing if a slice was added).
   */
  #open(create: boolean, catchUp = true): EpochFilters | undefined {
    const env = this.#ctx.env;
    env.refresh();
    const record = create ? ensureScope(env, this.name, this.#plan) : EpochFilters.readScope(env, this.name);
    if (record === undefined) return undefined;
    if (this.#openEpoch !== record.openEpoch) {
      const header = EpochFilters.readHeader(env, this.name, record.openEpoch);
      if (this.#explicitNormalize !== undefined && this.#explicitNormalize !== header.normalize) {
        throw new SeenStoreError(
          'USAGE',
          `epoch ${this.name}/${header.epoch} normalises with ${header.normalize}, not ${this.#explicitNormalize}: an epoch never mixes modes`,
        );
      }
      this.#openEpoch = record.openEpoch;
    }
    return this.#epochFilters(record.openEpoch, catchUp);
  }

  /** Epoch `n`, loaded once and caught up on every use. */
  #epochFilters(n: number, catchUp = true): EpochFilters {
    const env = this.#ctx.env;
    let epoch = this.#loaded.get(n);
    if (epoch === undefined) {
      epoch = EpochFilters.load(env, this.#ctx.hash, EpochFilters.readHeader(env, this.name, n), { shared: this.#ctx.bitThread !== undefined });
      this.#loaded.set(n, epoch);
    } else if (catchUp) {
      epoch.catchUp();
    }
    // A large load left the chunks' file pages mapped in this process (RSS): let them go.
    if (epoch.takeChunkBytesRead() >= RELEASE_MAP_AFTER_BYTES) env.releaseMappedPages();
    return epoch;
  }

  #resolve(spec: EpochSpec): number[] {
    const open = this.#openEpoch;
    if (open === undefined) throw new SeenStoreError('NOT_FOUND', `scope ${this.name} does not exist`);
    return resolveEpochs(spec, epochNumbers(this.#ctx.env, this.name), open, this.name);
  }

  /** Membership of each URL in one epoch, keyed by that epoch's normalisation. */
  #hasIn(epoch: EpochFilters, urls: readonly string[]): boolean[] {
    const mode = epoch.header.normalize as NormalizeMode;
    const answers = new Array<boolean>(urls.length).fill(false);
    for (let start = 0; start < urls.length; start += MAX_BATCH_URLS) {
      const part: string[] = [];
      const at: number[] = [];
      for (let i = start; i < Math.min(urls.length, start + MAX_BATCH_URLS); i++) {
        const key = toKey(urls[i]!, mode, false);
        if (key !== undefined) {
          part.push(key);
          at.push(i);
        }
      }
      const words = this.#scratch(part.length, epoch.filterCount);
      epoch.hashKeys(part, words);
      for (let i = 0; i < part.length; i++) answers[at[i]!] = epoch.has(words, i);
    }
    return answers;
  }

  /**
   * Validates every URL before anything is written. UTF-8 keys stay bytes in mode `none`; with
   * another normalisation they are decoded and normalised as strings.
   */
  #anyKeys(urls: Keys, mode: NormalizeMode): Keys {
    if (!isUtf8Keys(urls)) return this.#keys(urls, mode, urls.length <= MAX_BATCH_URLS);
    const bad = firstInvalidUtf8Key(urls);
    if (bad >= 0) {
      throw new SeenStoreError('INVALID_URL', `URL ${bad} of the UTF-8 batch is not a usable URL (empty, not valid UTF-8, over 64 KiB, or out of order)`);
    }
    return mode === 'none' ? urls : this.#keys(keyStrings(urls), mode);
  }

  /**
   * Validates every URL before anything is written: a bad one fails the whole call. With
   * `hashedWhole`, the caller hashes all of the call's keys before it writes anything, and the
   * hashing refuses a lone surrogate (toKey's checkWellFormed): reads, and writes of one part.
   */
  #keys(urls: readonly string[], mode: NormalizeMode, hashedWhole = false): readonly string[] {
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    // In mode `none` every key is its URL: the caller's array serves, no copy per call.
    const keys = mode === 'none' ? undefined : new Array<string>(urls.length);
    for (let i = 0; i < urls.length; i++) {
      const url = urls[i];
      if (typeof url !== 'string') throw new TypeError(`urls[${i}] is not a string`);
      const key = toKey(url, mode, !hashedWhole);
      if (key === undefined) {
        throw new SeenStoreError('INVALID_URL', `urls[${i}] is not a usable URL (empty, ill-formed UTF-16, over 64 KiB${mode === 'none' ? '' : ', or not an absolute URL'})`);
      }
      if (keys !== undefined) keys[i] = key;
    }
    return keys ?? urls;
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

  /** Stats of an epoch: live from its filters when loaded and open, else from the sealed header. */
  #stats(header: EpochHeader, loaded: EpochFilters | undefined): EpochStats {
    const usage = epochUsage(this.#ctx.env, header);
    // Reading each chunk's key maps its first page (LMDB reads an overflow value's header): let them go.
    if (usage.chunks * CHUNK_PAYLOAD_BYTES >= RELEASE_MAP_AFTER_BYTES) this.#ctx.env.releaseMappedPages();
    const live = loaded?.summary();
    const final = header.final;
    return {
      epoch: header.epoch,
      state: header.state,
      createdAtMs: header.createdAtMs,
      sealedAtMs: header.sealedAtMs,
      capacityUrls: header.capacityUrls,
      fprTarget: header.fprTarget,
      strategy: strategyName(strategyOf(header.slices[0]!, header.growth)),
      normalize: header.normalize,
      submitted: live?.submitted ?? final?.submitted ?? 0,
      added: live?.added ?? final?.added ?? 0,
      estimatedDistinct: live?.estimatedDistinct ?? final?.estimatedDistinct ?? 0,
      fillRatio: live?.fillRatio ?? final?.fillRatio ?? 0,
      estimatedFpr: live?.estimatedFpr ?? final?.estimatedFpr ?? 0,
      slices: header.slices.length,
      bytesOnDisk: usage.bytesOnDisk,
      journalRecords: usage.journalRecords,
    };
  }

  #details(header: EpochHeader): EpochDetails {
    const filters = this.#epochFilters(header.epoch);
    const summary = filters.summary();
    return {
      ...this.#stats(filters.header, filters),
      hashScheme: header.hashScheme,
      growth: header.growth,
      sizing: header.sizing,
      sliceDetails: summary.slices.map((slice, j) => {
        const spec = filters.header.slices[j]!;
        return { ...slice, layout: spec.layout, seeds: spec.seeds, ...(spec.keying === undefined ? {} : { keying: spec.keying }) };
      }),
    };
  }
}

function scopeStrategy(options: ScopeOptions): Strategy {
  if (options.strategy === undefined) return options.layout === undefined ? CLASSIC : parseStrategy(String(options.layout));
  const strategy = parseStrategy(options.strategy);
  if (options.layout !== undefined && options.layout !== strategy.layout) {
    throw new SeenStoreError('USAGE', `layout ${options.layout} contradicts strategy ${options.strategy}; give only the strategy`);
  }
  return strategy;
}
