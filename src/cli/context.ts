import { resolve } from 'node:path';
import { SeenStoreError } from '../errors.js';
import { MAX_THREADS, SeenStore } from '../epochs/seen-store.js';
import type { Scope, ScopeOptions } from '../epochs/scope.js';
import { parseEpochSpec, type EpochSpec, type MembershipMode } from '../epochs/epoch-spec.js';
import { LAYOUTS, type Layout } from '../filters/bloom.js';
import { MAX_KEY_BYTES, NORMALIZE_MODES, toKey, type NormalizeMode } from '../url/normalize.js';
import type { BatchOptions, OnInvalid } from './input.js';
import { parseStrategy, strategyName } from '../filters/strategy.js';
import { isSeedHex } from '../hash/scheme.js';
import { isRedisLocation } from '../store/open.js';

/** Options every command accepts (declared on the program). */
export interface GlobalOptions {
  readonly store?: string;
  readonly scope?: string;
  readonly json?: boolean;
  readonly debug?: boolean;
  /** `--threads N` of the adding commands (SeenStoreOptions.threads). */
  readonly threads?: string;
  /** `--wait-replicas N`: Redis stores, replicas that confirm each write (SeenStoreOptions.waitReplicas). */
  readonly waitReplicas?: string;
}

/** Options of the commands that read URLs. */
export interface InputOptions {
  readonly onInvalid?: string;
  readonly batchSize?: string;
  readonly batchDelayMs?: string;
}

/** Options that shape a scope's first epoch. */
export interface PlanOptions {
  readonly capacity?: string;
  readonly fpr?: string;
  readonly layout?: string;
  readonly strategy?: string;
  readonly normalize?: string;
  readonly seeds?: string;
}

export const DEFAULT_STORE_DIR = '.seenstore';
export const DEFAULT_BATCH_SIZE = 10_000;
export const DEFAULT_BATCH_DELAY_MS = 50;

/**
 * The store directory: --store, else $SEENSTORE_DIR (an empty one counts as unset, as shells
 * leave it), else ./.seenstore. An empty --store is a mistake, not the current directory.
 */
export function storeDir(options: GlobalOptions): string {
  if (options.store !== undefined && options.store.trim() === '') throw new SeenStoreError('USAGE', '--store must name a directory, got an empty string');
  const fromEnv = process.env.SEENSTORE_DIR === '' ? undefined : process.env.SEENSTORE_DIR;
  const location = options.store ?? fromEnv ?? DEFAULT_STORE_DIR;
  // A redis:// or rediss:// location names a server, not a path: it passes through as given.
  return isRedisLocation(location) ? location : resolve(location);
}

/** Options of every open from the global flags (SeenStoreOptions). */
function storeOptions(options: GlobalOptions): { waitReplicas?: number } {
  const waitReplicas = parseCount('wait-replicas', options.waitReplicas, 0);
  return waitReplicas === undefined ? {} : { waitReplicas };
}

export function scopeName(options: GlobalOptions): string {
  return options.scope ?? 'default';
}

export async function openStore(options: GlobalOptions, create: boolean): Promise<SeenStore> {
  const threads = parseCount('threads', options.threads);
  if (threads !== undefined && threads > MAX_THREADS) throw new SeenStoreError('USAGE', `--threads must be at most ${MAX_THREADS}, got ${threads}`);
  return SeenStore.open(storeDir(options), { create, onWarning: (message) => warn(message), ...storeOptions(options), ...(threads === undefined ? {} : { threads }) });
}

/**
 * Opens an existing store read-only (SeenStoreOptions.readOnly): for the commands that only read,
 * so that they never write, checkpoint or create anything, and work on a read-only mount.
 */
export async function openStoreReadOnly(options: GlobalOptions): Promise<SeenStore> {
  return SeenStore.open(storeDir(options), { create: false, readOnly: true, onWarning: (message) => warn(message), ...storeOptions(options) });
}

export function warn(message: string): void {
  process.stderr.write(`seenstore: ${message}\n`);
}

/** A whole number >= min, written as digits or in exponent form (1e6). */
export function parseCount(name: string, text: string | undefined, min = 1): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\s*[0-9.eE+]+\s*$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new SeenStoreError('USAGE', `--${name} must be a whole number >= ${min}, got ${JSON.stringify(text)}`);
  }
  return value;
}

export function parseFpr(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !(value > 0 && value < 1)) {
    throw new SeenStoreError('USAGE', `--fpr must be a probability strictly between 0 and 1, got ${JSON.stringify(text)}`);
  }
  return value;
}

function parseChoice<T extends string>(name: string, text: string | undefined, choices: readonly T[]): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text)) {
    throw new SeenStoreError('USAGE', `--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
  }
  return text as T;
}

export function scopeOptions(options: PlanOptions): ScopeOptions {
  const capacityUrls = parseCount('capacity', options.capacity);
  const fprTarget = parseFpr(options.fpr);
  const layout = parseChoice<Layout>('layout', options.layout, LAYOUTS);
  const normalize = parseChoice<NormalizeMode>('normalize', options.normalize, NORMALIZE_MODES);
  const seeds = parseSeeds(options.seeds);
  return {
    ...(seeds === undefined ? {} : { seeds }),
    ...(capacityUrls === undefined ? {} : { capacityUrls }),
    ...(fprTarget === undefined ? {} : { fprTarget }),
    ...(layout === undefined ? {} : { layout }),
    ...(options.strategy === undefined ? {} : { strategy: strategyName(parseStrategy(options.strategy)) }),
    ...(normalize === undefined ? {} : { normalize }),
  };
}

/** --seeds HEX[,HEX...]: as `epoch show` prints them. */
export function parseSeeds(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const seeds = text.split(',').map((seed) => seed.trim());
  if (!seeds.every(isSeedHex)) {
    throw new SeenStoreError('USAGE', `--seeds must be 16 lower-case hex digits per filter, comma-separated, as epoch show prints them; got ${JSON.stringify(text)}`);
  }
  return seeds;
}

/** How lines are batched and checked; `mode` is the normalisation of the epoch the lines go to. */
export function batchOptions(options: InputOptions, mode: NormalizeMode): BatchOptions {
  return {
    batchSize: parseCount('batch-size', options.batchSize) ?? DEFAULT_BATCH_SIZE,
    maxDelayMs: parseCount('batch-delay-ms', options.batchDelayMs, 0) ?? DEFAULT_BATCH_DELAY_MS,
    maxLineBytes: MAX_KEY_BYTES,
    onInvalid: parseChoice<OnInvalid>('on-invalid', options.onInvalid, ['skip', 'fail']) ?? 'skip',
    accept: (line) => toKey(line, mode) !== undefined,
    warn,
  };
}

/** The scope named by --scope, which must exist (commands that only read never create one). */
export async function requireScope(store: SeenStore, options: GlobalOptions): Promise<Scope> {
  const name = scopeName(options);
  if (!(await store.scopeNames()).includes(name)) {
    throw new SeenStoreError('NOT_FOUND', `scope ${name} does not exist in ${store.dir} (nothing was ever added to it)`);
  }
  return store.scope(name);
}

export function epochSpec(text: string | undefined, fallback: EpochSpec): EpochSpec {
  return text === undefined ? fallback : parseEpochSpec(text);
}

export function membershipMode(text: string | undefined): MembershipMode {
  return parseChoice<MembershipMode>('mode', text, ['any', 'all']) ?? 'any';
}

/** --epoch N of filter-new and add: only add to that epoch. */
export function pinnedEpoch(text: string | undefined): { epoch?: number } {
  const epoch = parseCount('epoch', text);
  return epoch === undefined ? {} : { epoch };
}
