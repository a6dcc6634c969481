import { SeenStoreError } from '../errors.js';
import { planSlice } from '../filters/scalable.js';
import { growthOf, parseStrategy, sliceShape, strategyName, type Strategy } from '../filters/strategy.js';
import { HASH_SCHEME_ID, freshSeedHex, isSeedHex } from '../hash/scheme.js';
import { defaultPartitionCount, partitionedBits, partitionSeedFor } from '../filters/partitions.js';
import { CHUNK_PAYLOAD_BYTES } from '../store/chunks.js';
import { SCOPE_NAME_PATTERN, type EpochHeader, type SizingDecision } from '../store/records.js';
import { KNOWN_NORMALIZE_MODES, epochNormalizeMode, type NormalizeMode } from '../url/normalize.js';
import type { ScopeOptions } from './scope-types.js';

/** Capacity of a scope's first epoch when none is given: a mid-sized site crawl. */
export const DEFAULT_CAPACITY_URLS = 1_000_000;
/** Target false-positive rate when none is given: 1 %, about 9.6 bits per URL. */
export const DEFAULT_FPR_TARGET = 0.01;

export interface EpochPlan {
  readonly capacityUrls: number;
  readonly fprTarget: number;
  readonly strategy: Strategy;
  readonly normalize: NormalizeMode;
  readonly sizing: SizingDecision;
  /**
   * Seeds of the epoch's first slice (16 hex digits each, one per filter of the strategy) instead of fresh ones:
   * parallel crawlers that share an epoch's seeds can merge their exports.
   */
  readonly seeds?: readonly string[];
}

export function checkScopeName(name: string): void {
  if (typeof name !== 'string') throw new TypeError('a scope name is a string');
  if (!SCOPE_NAME_PATTERN.test(name)) {
    throw new SeenStoreError(
      'USAGE',
      `invalid scope name ${JSON.stringify(name)}: use 1-64 of A-Z a-z 0-9 . _ - (not starting with . _ -)`,
    );
  }
}

export function checkPlan(plan: Omit<EpochPlan, 'sizing'>): void {
  const { capacityUrls, fprTarget, strategy, normalize } = plan;
  if (!Number.isSafeInteger(capacityUrls) || capacityUrls < 1) {
    throw new SeenStoreError('USAGE', `capacity must be a whole number of URLs >= 1, got ${capacityUrls}`);
  }
  if (!(fprTarget > 0 && fprTarget < 1)) throw new SeenStoreError('USAGE', `fpr must be in (0, 1), got ${fprTarget}`);
  if (!KNOWN_NORMALIZE_MODES.includes(normalize)) {
    throw new SeenStoreError(
      'USAGE',
      `unknown normalisation ${JSON.stringify(normalize)} (${KNOWN_NORMALIZE_MODES.join(', ')})`,
    );
  }
  if (plan.seeds !== undefined) checkSeeds(plan.seeds, strategy.filters, strategyName(strategy));
}

/** Given seeds: `count` of them, each 16 lower-case hex digits (as `epoch show` prints them). */
export function checkSeeds(seeds: readonly string[], count: number, strategy: string): void {
  if (!Array.isArray(seeds) || seeds.length !== count || !seeds.every(isSeedHex)) {
    throw new SeenStoreError(
      'USAGE',
      `seeds must be ${count} value${count === 1 ? '' : 's'} of 16 lower-case hex digits (one per filter of ${strategy}), as epoch show prints them; got ${JSON.stringify(seeds)}`,
    );
  }
}

/** A new epoch's header: one slice with fresh CSPRNG seeds and the geometry of the plan. */
export function newEpochHeader(scope: string, epoch: number, plan: EpochPlan, nowMs = Date.now()): EpochHeader {
  checkPlan(plan);
  const { layout, filters } = plan.strategy;
  let first;
  try {
    first = planSlice(0, plan.capacityUrls, plan.fprTarget, growthOf(plan.strategy), (n, p) =>
      sliceShape(plan.strategy, n, p),
    );
  } catch (error) {
    throw SeenStoreError.capacity(error);
  }
  const now = nowMs;
  const seeds = plan.seeds !== undefined ? [...plan.seeds] : Array.from({ length: filters }, () => freshSeedHex());
  // partitioned: P given or from the first slice's size; whole blocks in every partition.
  const partitions =
    plan.strategy.kind === 'partitioned' ? (plan.strategy.partitions ?? defaultPartitionCount(first.mBits)) : undefined;
  return {
    v: 1,
    scope,
    epoch,
    state: 'open',
    createdAtMs: now,
    sealedAtMs: null,
    hashScheme: HASH_SCHEME_ID,
    normalize: plan.normalize,
    chunkBytes: CHUNK_PAYLOAD_BYTES,
    capacityUrls: plan.capacityUrls,
    fprTarget: plan.fprTarget,
    growth: growthOf(plan.strategy),
    slices: [
      {
        layout,
        mBits: partitions === undefined ? first.mBits : partitionedBits(first.mBits, partitions),
        k: first.k,
        capacityUrls: first.capacityUrls,
        fprTarget: first.fprTarget,
        seeds,
        ...(first.shape.keying === undefined ? {} : { keying: first.shape.keying }),
        createdAtMs: now,
      },
    ],
    sizing: plan.sizing,
    final: null,
    ...(partitions === undefined ? {} : { partitions: { count: partitions, seed: partitionSeedFor(seeds[0]!) } }),
  };
}

/** The plan of a scope's first epoch from its ScopeOptions, checked and frozen; `driverDefault`: the store driver's default strategy. */
export function firstEpochPlan(options: ScopeOptions, driverDefault: string): EpochPlan {
  const capacityUrls = options.capacityUrls ?? DEFAULT_CAPACITY_URLS;
  const fprTarget = options.fprTarget ?? DEFAULT_FPR_TARGET;
  const plan = {
    capacityUrls,
    fprTarget,
    strategy: scopeStrategy(options, driverDefault),
    normalize: epochNormalizeMode(options.normalize, options.keys),
    sizing: {
      policy: options.capacityUrls === undefined ? 'default' : 'explicit',
      reason:
        options.capacityUrls === undefined
          ? `first epoch, no capacity given: default ${DEFAULT_CAPACITY_URLS} URLs`
          : 'first epoch, capacity given by the caller',
      inputs: { capacityUrls, fprTarget },
    },
    ...(options.seeds === undefined ? {} : { seeds: options.seeds }),
  } as const;
  checkPlan(plan);
  return Object.freeze(plan);
}

/** The strategy asked for (or its layout), else the default of the store's driver (Capabilities.defaultStrategy). */
function scopeStrategy(options: ScopeOptions, driverDefault: string): Strategy {
  if (options.strategy === undefined) return parseStrategy(String(options.layout ?? driverDefault));
  const strategy = parseStrategy(options.strategy);
  if (options.layout !== undefined && options.layout !== strategy.layout) {
    throw new SeenStoreError(
      'USAGE',
      `layout ${options.layout} contradicts strategy ${options.strategy}; give only the strategy`,
    );
  }
  return strategy;
}
