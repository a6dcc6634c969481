import { readdirSync, statSync } from 'node:fs';
import { SeenStoreError } from '../errors.js';
import { MAX_THREADS, SeenStore } from '../epochs/seen-store.js';
import type { Scope, ScopeOptions } from '../epochs/scope.js';
import { parseEpochSpec, type EpochSpec, type MembershipMode } from '../epochs/epoch-spec.js';
import { LAYOUTS, type Layout } from '../filters/bloom.js';
import {
  KEY_MODES,
  MAX_KEY_BYTES,
  NORMALIZE_MODES,
  toKey,
  type KeyMode,
  type NormalizeMode,
} from '../url/normalize.js';
import type { BatchOptions, OnInvalid } from './input.js';
import { InputProgress } from './output.js';
import { parseStrategy, strategyName } from '../filters/strategy.js';
import { parseChoice, parseCount, parseFpr, parseSeeds } from './parse.js';
import { DEFAULT_BATCH_DELAY_MS, DEFAULT_BATCH_SIZE, DEFAULT_STORE_DIR } from './defaults.js';

export { parseCount, parseFpr, parseSeeds } from './parse.js';
export { DEFAULT_BATCH_DELAY_MS, DEFAULT_BATCH_SIZE, DEFAULT_PUSH_BATCH_SIZE, DEFAULT_STORE_DIR } from './defaults.js';
import { driverFor } from '../store/open.js';

/** Options every command accepts (declared on the program). */
export interface GlobalOptions {
  readonly store?: string;
  readonly scope?: string;
  readonly json?: boolean;
  readonly debug?: boolean;
  /** false with --no-create: a store or scope that does not exist is NOT_FOUND, never created. */
  readonly create?: boolean;
  /** --allow-nonempty-dir: a store may be created in a directory that holds other files. */
  readonly allowNonemptyDir?: boolean;
  /** --quiet: no informational lines on stderr (creations, summaries); warnings and errors stay. */
  readonly quiet?: boolean;
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
  readonly keys?: string;
  readonly seeds?: string;
}

/**
 * The store directory: --store, else $SEENSTORE_DIR (an empty one counts as unset, as shells
 * leave it), else ./.seenstore. An empty --store is a mistake, not the current directory.
 */
export function storeDir(options: GlobalOptions): string {
  if (options.store !== undefined && options.store.trim() === '')
    throw new SeenStoreError('USAGE', '--store must name a directory, got an empty string');
  const fromEnv = process.env.SEENSTORE_DIR === '' ? undefined : process.env.SEENSTORE_DIR;
  const location = options.store ?? fromEnv ?? DEFAULT_STORE_DIR;
  // The driver says what a location means: a directory becomes absolute, a URL passes through.
  return driverFor(location).resolve(location);
}

/** Options of every open from the global flags (SeenStoreOptions). */
function storeOptions(options: GlobalOptions): { waitReplicas?: number } {
  const waitReplicas = parseCount('wait-replicas', options.waitReplicas, 0);
  return waitReplicas === undefined ? {} : { waitReplicas };
}

export function scopeName(options: GlobalOptions): string {
  return options.scope ?? 'default';
}

/**
 * Opens the store for writing. `create`: whether this command may create it (filter-new, add,
 * import), unless --no-create says not to; creating one says so in a line on stderr, terminal or
 * not, unless --quiet (a mistyped --store would otherwise start a whole re-crawl in silence, and
 * under cron the line is the only trace of it).
 */
export async function openStore(options: GlobalOptions, create: boolean, input?: string): Promise<SeenStore> {
  const threads = parseCount('threads', options.threads);
  if (threads !== undefined && threads > MAX_THREADS)
    throw new SeenStoreError('USAGE', `--threads must be at most ${MAX_THREADS}, got ${threads}`);
  checkInputFile(input);
  const dir = storeDir(options);
  const mayCreate = create && options.create !== false;
  const absent = await driverFor(dir).knownAbsent(dir);
  if (mayCreate && absent && options.allowNonemptyDir !== true) refuseForeignDirectory(dir);
  const store = await SeenStore.open(dir, {
    create: mayCreate,
    onWarning: (message) => warn(message),
    ...storeOptions(options),
    ...(threads === undefined ? {} : { threads }),
  });
  if (mayCreate && absent) inform(options, `created store at ${dir}`);
  return store;
}

/**
 * A named input file is checked before the store is opened: a typo in its name must fail with
 * NOT_FOUND before a new store is created for it.
 */
function checkInputFile(file: string | undefined): void {
  if (file === undefined || file === '-') return;
  const stats = statSync(file, { throwIfNoEntry: false });
  if (stats === undefined) throw new SeenStoreError('NOT_FOUND', `no such file: ${file}`);
  if (stats.isDirectory())
    throw new SeenStoreError('USAGE', `${file} is a directory; give a file of URLs, one per line (or - for stdin)`);
}

/**
 * A store is created in a directory that does not exist or is empty, not among unrelated files
 * (`--store .` in a folder of pages): unless --allow-nonempty-dir. A directory holding a store's
 * own files without its data file is left to the store, which tells lost data from a creation
 * cut short.
 */
function refuseForeignDirectory(dir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  // A store's own entries, a creation under way in it included (another process creating the
  // store at this moment: `.seenstore-creating-PID-N`), are the store's to judge.
  if (
    entries.length === 0 ||
    entries.some((name) => /\.mdb(-lock)?$/.test(name) || name.startsWith('.seenstore-creating-'))
  )
    return;
  throw new SeenStoreError(
    'USAGE',
    `${dir} holds ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'} (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', ...' : ''}) and no store: ` +
      'give --store a new or empty directory, or add --allow-nonempty-dir to create the store among them',
  );
}

/** The progress line of a command reading `file` (stdin when undefined or `-`), with a percentage for a regular file. */
export function inputProgress(label: string, file: string | undefined, extra: () => string): InputProgress {
  let totalBytes: number | undefined;
  if (file !== undefined && file !== '-') {
    try {
      const stats = statSync(file);
      if (stats.isFile()) totalBytes = stats.size;
    } catch {
      // Opening the input reports a missing file as NOT_FOUND.
    }
  }
  return new InputProgress(label, totalBytes, extra);
}

/**
 * Opens an existing store read-only (SeenStoreOptions.readOnly): for the commands that only read,
 * so that they never write, checkpoint or create anything, and work on a read-only mount.
 */
export async function openStoreReadOnly(options: GlobalOptions): Promise<SeenStore> {
  return SeenStore.open(storeDir(options), {
    create: false,
    readOnly: true,
    onWarning: (message) => warn(message),
    ...storeOptions(options),
  });
}

export function warn(message: string): void {
  process.stderr.write(`seenstore: ${message}\n`);
}

/** An informational line on stderr (a creation, a summary), unless --quiet. */
export function inform(options: GlobalOptions, message: string): void {
  if (options.quiet !== true) warn(message);
}

export function scopeOptions(options: PlanOptions): ScopeOptions {
  const capacityUrls = parseCount('capacity', options.capacity);
  const fprTarget = parseFpr(options.fpr);
  const layout = parseChoice<Layout>('layout', options.layout, LAYOUTS);
  const normalize = parseChoice<NormalizeMode>('normalize', options.normalize, NORMALIZE_MODES);
  const keys = parseChoice<KeyMode>('keys', options.keys, KEY_MODES);
  const seeds = parseSeeds(options.seeds);
  return {
    ...(seeds === undefined ? {} : { seeds }),
    ...(capacityUrls === undefined ? {} : { capacityUrls }),
    ...(fprTarget === undefined ? {} : { fprTarget }),
    ...(layout === undefined ? {} : { layout }),
    ...(options.strategy === undefined ? {} : { strategy: strategyName(parseStrategy(options.strategy)) }),
    ...(normalize === undefined ? {} : { normalize }),
    ...(keys === undefined ? {} : { keys }),
  };
}

/** How lines are batched and checked; `mode` is the normalisation of the epoch the lines go to. */
export function batchOptions(
  options: InputOptions,
  mode: NormalizeMode,
  defaultBatchSize = DEFAULT_BATCH_SIZE,
): BatchOptions {
  return {
    batchSize: parseCount('batch-size', options.batchSize) ?? defaultBatchSize,
    maxDelayMs: parseCount('batch-delay-ms', options.batchDelayMs, 0) ?? DEFAULT_BATCH_DELAY_MS,
    maxLineBytes: MAX_KEY_BYTES,
    onInvalid: parseChoice<OnInvalid>('on-invalid', options.onInvalid, ['skip', 'fail']) ?? 'skip',
    // A line decoded from valid UTF-8 is well-formed, and a control-free one needs no look for
    // control characters: what toKey leaves to the hashing then has nothing to find.
    accept: (line, controlFree) => toKey(line, mode, controlFree) !== undefined,
    warn,
  };
}

/** The scope named by --scope, which must exist (commands that only read never create one). */
export async function requireScope(store: SeenStore, options: GlobalOptions): Promise<Scope> {
  const name = scopeName(options);
  // The name is checked first: a name that can never exist is a USAGE error, not NOT_FOUND.
  const scope = store.scope(name);
  if (!(await store.scopeNames()).includes(name)) {
    throw new SeenStoreError(
      'NOT_FOUND',
      `scope ${name} does not exist in ${store.dir} (nothing was ever added to it)`,
    );
  }
  return scope;
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
