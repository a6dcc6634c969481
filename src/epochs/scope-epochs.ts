import { SeenStoreError, assert } from '../errors.js';
import type { EpochBits } from '../store/backend.js';
import type { EpochHeader } from '../store/records.js';
import type { NormalizeMode } from '../url/normalize.js';
import { newEpochHeader, type EpochPlan } from './create.js';
import { resolveEpochs, type EpochSpec } from './epoch-spec.js';
import { epochDetails, openingSummary, type EpochDetails } from './epoch-stats.js';
import type { ScopeContext } from './scope.js';

/**
 * A scope handle's epochs as it finds them (scope.ts): the open one (the scope created first when
 * asked and allowed, checked once against an explicit normalisation, kept as the target of the
 * next add), an epoch spec resolved to numbers, and an epoch's details.
 */
export class ScopeEpochs {
  readonly name: string;
  /** The first epoch's plan, for a scope this handle creates. */
  readonly plan: EpochPlan;
  readonly #ctx: ScopeContext;
  readonly #explicitNormalize: NormalizeMode | undefined;
  readonly #mayCreate: boolean;
  /** The open epoch this handle last saw (to check an explicit normalisation against it once). */
  #openEpoch: number | undefined;
  /**
   * The open epoch as this handle last found it, where its adds go without reading the scope
   * record first (a read per add; a round trip on Redis): every driver checks inside the add that
   * the epoch is still open (EPOCH_SEALED), and the add then goes on in the next one (add-routing.ts).
   */
  #addTarget: EpochBits | undefined;

  constructor(
    ctx: ScopeContext,
    name: string,
    plan: EpochPlan,
    explicitNormalize: NormalizeMode | undefined,
    mayCreate: boolean,
  ) {
    this.#ctx = ctx;
    this.name = name;
    this.plan = plan;
    this.#explicitNormalize = explicitNormalize;
    this.#mayCreate = mayCreate;
  }

  get addTarget(): EpochBits | undefined {
    return this.#addTarget;
  }

  /** Forgets the add target (a rotation by this handle sealed it). */
  forgetAddTarget(): void {
    this.#addTarget = undefined;
  }

  normalizeOf(open: EpochBits | undefined): NormalizeMode {
    return (open?.header.normalize as NormalizeMode | undefined) ?? this.plan.normalize;
  }

  /** The open epoch's bits, the scope created first when `create`; undefined when the scope does not exist. */
  async open(create: boolean): Promise<EpochBits | undefined> {
    const backend = this.#ctx.backend;
    let record = await backend.scopeRecord(this.name);
    if (record === undefined && create)
      record = await backend.createScope(this.name, newEpochHeader(this.name, 1, this.plan, this.#ctx.clock()));
    if (record === undefined) {
      this.#addTarget = undefined;
      return undefined;
    }
    const open = await backend.epoch(this.name, record.openEpoch);
    if (this.#openEpoch !== record.openEpoch) {
      const normalize = open.header.normalize as NormalizeMode;
      // `url` is `none` with URL keys: an explicit `none` alone fits either (scopes from before format 4 are `none`).
      const base = normalize === 'url' ? 'none' : normalize;
      if (
        this.#explicitNormalize !== undefined &&
        this.#explicitNormalize !== normalize &&
        this.#explicitNormalize !== base
      ) {
        throw new SeenStoreError(
          'USAGE',
          `epoch ${this.name}/${record.openEpoch} normalises with ${normalize}, not ${this.#explicitNormalize}: an epoch never mixes modes`,
        );
      }
      this.#openEpoch = record.openEpoch;
    }
    this.#addTarget = open;
    return open;
  }

  /** The open epoch's bits, the scope created first when it does not exist yet. */
  async created(): Promise<EpochBits> {
    const open = await this.open(this.#mayCreate);
    if (open === undefined)
      throw new SeenStoreError(
        'NOT_FOUND',
        `scope ${this.name} does not exist (and the scope was opened with create: false)`,
      );
    assert(open !== undefined, `scope ${this.name} exists once created`);
    return open;
  }

  /** The numbers of the epochs `spec` names; the open one alone (the default) asks the backend nothing. */
  async resolve(spec: EpochSpec, open: EpochBits): Promise<number[]> {
    if (spec === 'current') return [open.header.epoch];
    return resolveEpochs(spec, await this.#ctx.backend.epochNumbers(this.name), open.header.epoch, this.name);
  }

  /** Epoch `n` of the scope: `open` itself when it is the open one (no second load through the backend). */
  epoch(n: number, open: EpochBits): EpochBits | Promise<EpochBits> {
    return n === open.header.epoch ? open : this.#ctx.backend.epoch(this.name, n);
  }

  /**
   * The details of the epoch a rotation opened; as it was opened when other processes rotated
   * again and pruned it meanwhile (the rotation stands: only its answer has nothing left to read).
   */
  async openedDetails(header: EpochHeader): Promise<EpochDetails> {
    try {
      return await this.details(header.epoch);
    } catch (error) {
      if (!(error instanceof SeenStoreError && error.code === 'NOT_FOUND')) throw error;
      return epochDetails(header, openingSummary(header), { bytesOnDisk: 0, pendingRecords: 0 });
    }
  }

  async details(n: number): Promise<EpochDetails> {
    const epoch = await this.#ctx.backend.epoch(this.name, n);
    const summary = await epoch.summary();
    return epochDetails(epoch.header, summary, await this.#ctx.backend.usage(epoch.header));
  }
}
