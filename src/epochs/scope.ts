import { SeenStoreError } from '../errors.js';
import { parseStrategy, strategyName, strategyOf } from '../filters/strategy.js';
import { keyCount, type Keys, type Utf8Keys, type XxHash } from '../hash/xxhash.js';
import type { Backend, CheckpointOutcome, Deliveries, DeliveryWrite } from '../store/backend.js';
import { ScopeAdds } from './add-routing.js';
import { addCounts, hasKeys, hasUrls, MAX_BATCH_URLS } from './epoch-queries.js';
import type { NormalizeMode } from '../url/normalize.js';
import { checkPlan, firstEpochPlan, newEpochHeader, type EpochPlan } from './create.js';
import type { EpochSpec } from './epoch-spec.js';
import {
  epochSettings,
  epochStats,
  type EpochDetails,
  type EpochSettings,
  type EpochStats,
  type ScopeStats,
} from './epoch-stats.js';
import type { Dropped, PruneOptions } from './retention.js';
import { planNextEpoch, type RotateOptions } from './rotation.js';
import type { ExportResult, MergeResult } from './transfer.js';
import { urlKeys } from '../url/url-keys.js';
import { ScopeFrontier } from './frontier.js';
import { ScopeEpochs } from './scope-epochs.js';
import { checkpointEpoch, epochHeaderOf } from './seam-defaults.js';
import {
  diffCategories,
  type AddOptions,
  type AddSummary,
  type EnqueueOptions,
  type Classification,
  type DiffCategory,
  type DiffResult,
  type QueryOptions,
  type RotateResult,
  type ScopeOptions,
} from './scope-types.js';

export type { EpochDetails, EpochSettings, EpochStats, ScopeStats };
export type {
  AddOptions,
  AddSummary,
  EnqueueOptions,
  Classification,
  DiffCategory,
  DiffResult,
  QueryOptions,
  RotateResult,
  ScopeOptions,
};

export { MAX_BATCH_URLS } from './epoch-queries.js';

/** What a scope needs from its store. */
export interface ScopeContext {
  readonly backend: Backend;
  readonly hash: XxHash;
  /** Milliseconds since the Unix epoch, for record times and ages (SeenStoreOptions.clock). */
  readonly clock: () => number;
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
  readonly #epochs: ScopeEpochs;
  readonly #adds: ScopeAdds;

  /** @internal Scopes come from SeenStore.scope(); the context holds the store's internals. */
  constructor(ctx: ScopeContext, name: string, options: ScopeOptions) {
    this.#ctx = ctx;
    this.name = name;
    this.#plan = firstEpochPlan(options, ctx.backend.driver.capabilities.defaultStrategy);
    this.#epochs = new ScopeEpochs(ctx, name, this.#plan, options.normalize, options.create ?? true);
    this.#adds = new ScopeAdds(ctx, this.#epochs);
  }

  /** The normalisation of the open epoch, or of the first epoch when none exists yet. */
  async normalizeMode(): Promise<NormalizeMode> {
    this.#ctx.assertOpen();
    return this.#epochs.normalizeOf(await this.#epochs.open(false));
  }

  /** Number of the open epoch, or null when the scope does not exist yet. */
  async openEpoch(): Promise<number | null> {
    this.#ctx.assertOpen();
    return (await this.#epochs.open(false))?.header.epoch ?? null;
  }

  /**
   * Creates the scope with its first epoch when it does not exist yet, without adding a URL; true
   * when it did not exist (should another process create it in the same instant, its plan wins and
   * both may answer true). `options` (default: this handle's ScopeOptions) shape the first epoch:
   * for a caller that reserves a scope's plan before its first add (the server's BF.RESERVE). Durable
   * when the promise resolves.
   */
  async create(options?: ScopeOptions): Promise<boolean> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('create a scope');
    if ((await this.#ctx.backend.scopeRecord(this.name)) !== undefined) return false;
    const plan = options === undefined ? this.#plan : new Scope(this.#ctx, this.name, options).#plan;
    await this.#ctx.backend.createScope(this.name, newEpochHeader(this.name, 1, plan, this.#ctx.clock()));
    return true;
  }

  /**
   * Records the URLs in the open epoch and answers, per URL, whether it was new (true) or probably
   * seen before (false). Duplicates within the call are new once. Resolves when durable. If another
   * process rotates the scope meanwhile, the rest of the call goes to the new epoch.
   */
  async addIfAbsent(urls: readonly string[], options: AddOptions = {}): Promise<boolean[]> {
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    const answers = new Array<boolean>(urls.length);
    await this.#adds.add(urls, answers, options);
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
    const shaped =
      typeof urls === 'object' &&
      urls !== null &&
      urls.bytes instanceof Uint8Array &&
      urls.ranges instanceof Uint32Array &&
      Number.isSafeInteger(urls.count) &&
      urls.count >= 0 &&
      urls.ranges.length >= 2 * urls.count;
    if (!shaped)
      throw new TypeError(
        'urls must be { bytes: Uint8Array, ranges: Uint32Array (a start and an end per URL), count }',
      );
    const answers = new Array<boolean>(urls.count);
    await this.#adds.add(urls, answers, options);
    return answers;
  }

  /** As addIfAbsent; the new URLs join the frontier in the same atomic step (exactly-once discovery). Durable when it resolves. */
  async enqueue(urls: readonly string[], options: EnqueueOptions = {}): Promise<boolean[]> {
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('add');
    const { data, queues, ...addOptions } = options;
    const items = await this.frontier().queueItems(urls, {
      ...(data === undefined ? {} : { data }),
      ...(queues === undefined ? {} : { queues }),
    });
    const answers = new Array<boolean>(urls.length);
    await this.#adds.add(urls, answers, addOptions, items);
    return answers;
  }

  /**
   * @internal Delivery's add (epochs/delivery.ts): addIfAbsent, or with `enqueue` an enqueue, of
   * at most MAX_BATCH_URLS URLs whose new ones are kept as undelivered in the same atomic step.
   */
  async addDelivered(
    urls: Keys,
    deliver: DeliveryWrite,
    options: AddOptions = {},
    enqueue?: boolean,
  ): Promise<boolean[]> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('add');
    const items = enqueue === true ? await this.frontier().queueItems(urls as readonly string[], {}) : undefined;
    const answers = new Array<boolean>(keyCount(urls));
    await this.#adds.add(urls, answers, options, items, deliver);
    return answers;
  }

  /** The scope's undelivered batches, for Delivery (epochs/delivery.ts). */
  async deliveries(): Promise<Deliveries> {
    this.#ctx.assertOpen();
    return this.#ctx.backend.deliveries(this.name);
  }

  /** The scope's frontier: take, done, release and stats of its queued URLs (docs/frontier.md). */
  frontier(): ScopeFrontier {
    this.#ctx.assertOpen();
    return new ScopeFrontier(this.#ctx, this.name, () => this.normalizeMode());
  }

  /** Records the URLs; resolves with counts once durable. */
  async add(urls: readonly string[], options: AddOptions = {}): Promise<AddSummary> {
    if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
    const added = await this.#adds.add(urls, undefined, options);
    return { submitted: urls.length, added };
  }

  /**
   * Per URL, whether it is (probably) seen in the given epochs (default: the open one), with `any`
   * or `all` semantics. Sees adds committed by other processes.
   */
  async has(urls: readonly string[], options: QueryOptions = {}): Promise<boolean[]> {
    this.#ctx.assertOpen();
    const mode = options.mode ?? 'any';
    if (mode !== 'any' && mode !== 'all')
      throw new SeenStoreError('USAGE', `mode must be any or all, got ${JSON.stringify(mode)}`);
    const open = await this.#epochs.open(false);
    if (open === undefined) {
      urlKeys(urls, this.#plan.normalize);
      return new Array<boolean>(urls.length).fill(false);
    }
    const normalize = open.header.normalize;
    const keys = urlKeys(urls, normalize as NormalizeMode, true);
    const answers = new Array<boolean>(urls.length).fill(mode === 'all');
    for (const n of await this.#epochs.resolve(options.epochs ?? 'current', open)) {
      const epoch = await this.#epochs.epoch(n, open);
      // The keys checked under the open epoch's normalisation serve every epoch that shares it.
      const inEpoch = epoch.header.normalize === normalize ? await hasKeys(epoch, keys) : await hasUrls(epoch, urls);
      for (let i = 0; i < urls.length; i++)
        answers[i] = mode === 'all' ? answers[i]! && inEpoch[i]! : answers[i]! || inEpoch[i]!;
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
    const open = await this.#epochs.open(false);
    if (open === undefined) {
      urlKeys(urls, this.#plan.normalize);
      return new Array<number>(urls.length).fill(0);
    }
    const totals = new Array<number>(urls.length).fill(0);
    for (const n of await this.#epochs.resolve(options.epochs ?? 'current', open)) {
      const epoch = await this.#epochs.epoch(n, open);
      if (!epoch.counting) {
        throw new SeenStoreError(
          'USAGE',
          `epoch ${this.name}/${n} is ${strategyName(strategyOf(epoch.header.slices[0]!, epoch.header.growth))}, not counting: it cannot count`,
        );
      }
      await addCounts(epoch, urlKeys(urls, epoch.header.normalize as NormalizeMode, true), totals);
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
    const epoch = await this.#epochs.open(false);
    if (epoch === undefined) throw SeenStoreError.noScope(this.name);
    if (!epoch.counting)
      throw new SeenStoreError(
        'USAGE',
        `epoch ${this.name}/${epoch.header.epoch} is not counting: only counting epochs can delete`,
      );
    const keys = urlKeys(urls, epoch.header.normalize as NormalizeMode, urls.length <= MAX_BATCH_URLS);
    let deleted = 0;
    for (let start = 0; start < keys.length; start += MAX_BATCH_URLS)
      deleted += await epoch.delete(keys.slice(start, start + MAX_BATCH_URLS));
    return deleted;
  }

  /** Per URL: `revisit` when the previous epoch holds it, else `new`. Without a previous epoch, all are new. */
  async classify(urls: readonly string[]): Promise<Classification[]> {
    this.#ctx.assertOpen();
    const open = await this.#epochs.open(false);
    const previous = open === undefined ? undefined : open.header.epoch - 1;
    if (
      previous === undefined ||
      previous < 1 ||
      !(await this.#ctx.backend.epochNumbers(this.name)).includes(previous)
    ) {
      urlKeys(urls, this.#epochs.normalizeOf(open));
      return urls.map(() => 'new');
    }
    return (await hasUrls(await this.#ctx.backend.epoch(this.name, previous), urls)).map((seen) =>
      seen ? 'revisit' : 'new',
    );
  }

  /** Compares two epochs over a URL list: in both, only in `from`, only in `to`, or in neither. */
  async diff(urls: readonly string[], from: EpochSpec, to: EpochSpec): Promise<DiffResult> {
    this.#ctx.assertOpen();
    const open = await this.#epochs.open(false);
    if (open === undefined) throw SeenStoreError.noScope(this.name);
    const single = async (spec: EpochSpec, which: string): Promise<number> => {
      const numbers = await this.#epochs.resolve(spec, open);
      if (numbers.length !== 1) throw new SeenStoreError('USAGE', `--${which} must name one epoch`);
      return numbers[0]!;
    };
    const a = await single(from, 'from');
    const b = await single(to, 'to');
    const inA = await hasUrls(await this.#epochs.epoch(a, open), urls);
    const inB = await hasUrls(await this.#epochs.epoch(b, open), urls);
    return { from: a, to: b, ...diffCategories(inA, inB) };
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
    const backend = this.#ctx.backend;
    let open = await this.#epochs.created();
    const next = planNextEpoch(options, this.#ctx.clock);
    for (let attempt = 0; ; attempt++) {
      try {
        const request = {
          epoch: open.header.epoch,
          next,
          ...(options.ifEpoch === undefined ? {} : { ifEpoch: options.ifEpoch }),
        };
        const rotation = await backend.rotate(this.name, request);
        this.#epochs.forgetAddTarget();
        if (rotation === null) return null;
        return {
          sealed: epochStats(rotation.sealed, undefined, await backend.usage(rotation.sealed)),
          opened: await this.#epochs.openedDetails(rotation.opened),
        };
      } catch (error) {
        if (!(error instanceof SeenStoreError && error.code === 'EPOCH_SEALED') || attempt > 0) throw error;
        open = await this.#epochs.created();
      }
    }
  }

  /**
   * Writes one epoch (default: the open one) to a portable export file (docs/format.md): to move
   * it to another machine, merge it with other crawlers' exports, or compare against it.
   */
  async export(
    path: string,
    epoch: EpochSpec = 'current',
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<ExportResult> {
    this.#ctx.assertOpen();
    const open = await this.#epochs.open(false);
    if (open === undefined) throw SeenStoreError.noScope(this.name);
    const numbers = await this.#epochs.resolve(epoch, open);
    if (numbers.length !== 1) throw new SeenStoreError('USAGE', 'export takes one epoch');
    return (await import('./transfer.js')).exportEpoch(
      this.#ctx.hash,
      await this.#ctx.backend.epoch(this.name, numbers[0]!),
      path,
      options.signal,
    );
  }

  /**
   * ORs export files into the open epoch (e.g. parallel crawlers that share its seeds). `epoch`,
   * when given, must be the open epoch (sealed epochs never change): EPOCH_SEALED otherwise.
   * Incompatible files (other seeds, geometry, hash scheme) are refused with INCOMPATIBLE before
   * anything is written; the merge is one atomic step. `signal` stops it before that step.
   */
  async merge(
    paths: readonly string[],
    epoch?: number,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<MergeResult> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('merge');
    const open = await this.#epochs.open(false);
    if (open === undefined) throw SeenStoreError.noScope(this.name);
    if (epoch !== undefined && epoch !== open.header.epoch) {
      if (!(await this.#ctx.backend.epochNumbers(this.name)).includes(epoch))
        throw SeenStoreError.noEpoch(this.name, epoch);
      throw new SeenStoreError(
        'EPOCH_SEALED',
        `epoch ${this.name}/${epoch} is sealed and never changes; merge into the open epoch ${open.header.epoch}, or merge the files with --out and import the result`,
      );
    }
    return (await import('./transfer.js')).mergeIntoEpoch(this.#ctx.hash, open, paths, options.signal);
  }

  /** Drops old sealed epochs (see PruneOptions); returns what was dropped. */
  async prune(options: PruneOptions): Promise<Dropped[]> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('prune');
    return (await import('./retention.js')).prune(this.#ctx.backend, this.name, options, this.#ctx.clock);
  }

  async stats(): Promise<ScopeStats> {
    this.#ctx.assertOpen();
    const open = await this.#epochs.open(false);
    if (open === undefined) return { scope: this.name, openEpoch: null, epochs: [] };
    const backend = this.#ctx.backend;
    const epochs: EpochStats[] = [];
    for (const n of await backend.epochNumbers(this.name)) {
      const isOpen = n === open.header.epoch;
      const summary = isOpen ? await open.summary() : undefined;
      const header = isOpen ? open.header : await epochHeaderOf(backend, this.name, n);
      epochs.push(epochStats(header, summary, await backend.usage(header)));
    }
    return { scope: this.name, openEpoch: open.header.epoch, epochs };
  }

  /** Header, seeds, geometry, slices and sizing decision of epoch `n`. */
  async epoch(n: number): Promise<EpochDetails> {
    this.#ctx.assertOpen();
    if ((await this.#epochs.open(false)) === undefined) throw SeenStoreError.noScope(this.name);
    return this.#epochs.details(n);
  }

  /** What epoch `n` was created with (capacity, FPR, strategy, seeds, slices): its header only, no bits read. */
  async settings(n: number): Promise<EpochSettings> {
    this.#ctx.assertOpen();
    if ((await this.#epochs.open(false)) === undefined) throw SeenStoreError.noScope(this.name);
    return epochSettings(await epochHeaderOf(this.#ctx.backend, this.name, n));
  }

  /** Folds the backend's write log into the open epoch's durable form now, where it keeps one (Capabilities.checkpoints; normally automatic). */
  async checkpoint(): Promise<CheckpointOutcome> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('checkpoint');
    const open = await this.#epochs.open(false);
    if (open === undefined) return 'clean';
    return checkpointEpoch(open);
  }
}
