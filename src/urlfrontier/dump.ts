import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { SeenStoreError } from '../errors.js';
import { queueOf } from '../epochs/frontier.js';
import type { Scope } from '../epochs/scope.js';
import type { ScopeOptions } from '../epochs/scope-types.js';
import type { SeenStore } from '../epochs/seen-store.js';
import type { QueueKeyMode } from '../url/queue-key.js';
import { DumpLineError, formatDumpLine, parseDumpLine, type DumpItem } from './dump-format.js';

/*
 * Moving a crawl between seenstore and the reference URLFrontier: import and export of the
 * reference client's DumpURLs files (dump-format.ts), streamed, gzipped or not.
 */

/** Longest line of a dump: a 64 KiB URL and 64 KiB of metadata as JSON, escaped. */
const DUMP_LINE_BYTES_MAX = 1024 * 1024;
/** Lines per batch when the caller does not say: each batch is a few durable commits. */
export const DUMP_BATCH_LINES_DEFAULT = 1_000;
/** Entries read per page while exporting. */
const EXPORT_PAGE_ENTRIES = 1_000;
/** Invalid lines reported one by one (under `skip`) before only the count is kept. */
const INVALID_LINES_REPORTED = 10;
const GZIP_MAGIC = [0x1f, 0x8b] as const;

export interface ImportDumpOptions {
  /** Lines handled together (default 1,000): per scope, one enqueue, and for known lines one schedule and one add. */
  readonly batchLines?: number;
  /** `fail` (default): the first bad line stops the import with INVALID_URL; `skip`: bad lines are counted and reported. */
  readonly onInvalid?: 'fail' | 'skip';
  /** Every line goes to this scope, whatever its crawlID. */
  readonly scope?: string;
  /** Options of the scopes the import creates (merged over `keys: 'raw'`, as the URLFrontier service creates crawls). */
  readonly scopeOptions?: ScopeOptions;
  /** Told about each invalid line skipped (the first few) and their total. */
  readonly warn?: (message: string) => void;
  readonly signal?: AbortSignal;
  /** The clock refetch dates are checked against (tests). */
  readonly nowMs?: () => number;
}

export interface ImportDumpCounts {
  /** Non-empty lines read. */
  read: number;
  /** Discovered URLs that were new: queued. */
  queued: number;
  /** Discovered URLs already seen: not queued again. */
  seen: number;
  /** Known URLs with a refetch date: scheduled for it (and recorded as seen). */
  scheduled: number;
  /** Known URLs without a date: recorded as seen and finished, not queued. */
  done: number;
  invalid: number;
  /** Scopes the lines went to. */
  scopes: string[];
}

/**
 * The bytes of `input`, gunzipped when they start with gzip's magic bytes (whatever the file is
 * called). A damaged or cut gzip stream ends the iteration with STORE_CORRUPT.
 */
export async function* dumpBytes(input: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const source = input[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < GZIP_MAGIC.length) {
    const next = await source.next();
    if (next.done === true) break;
    head = Buffer.concat([head, next.value]);
  }
  async function* rest(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    for (let next = await source.next(); next.done !== true; next = await source.next()) yield next.value;
  }
  if (head[0] !== GZIP_MAGIC[0] || head[1] !== GZIP_MAGIC[1]) {
    yield* rest();
    return;
  }
  const gunzip = Readable.from(rest()).pipe(createGunzip());
  try {
    for await (const chunk of gunzip) yield chunk as Buffer;
  } catch (error) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `the gzip stream of the dump is damaged or cut short (${(error as Error).message}); the lines before it were imported`,
      { cause: error },
    );
  }
}

/**
 * Splits bytes into lines (LF or CRLF), numbered from 1, skipping empty ones; a line longer than
 * DUMP_LINE_BYTES_MAX comes as undefined, without its bytes ever being held whole.
 */
async function* dumpLines(bytes: AsyncIterable<Buffer>): AsyncGenerator<[string | undefined, number]> {
  let carry = Buffer.alloc(0);
  let lineNo = 0;
  /** Inside a line already reported too long: its bytes are dropped up to its newline. */
  let overlong = false;
  const line = (raw: Buffer): [string | undefined, number] | undefined => {
    lineNo++;
    if (overlong || raw.length > DUMP_LINE_BYTES_MAX) return [undefined, lineNo];
    const end = raw.length > 0 && raw[raw.length - 1] === 0x0d ? raw.length - 1 : raw.length;
    return end > 0 ? [raw.toString('utf8', 0, end), lineNo] : undefined;
  };
  for await (const chunk of bytes) {
    const block = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
    let start = 0;
    for (let nl = block.indexOf(0x0a); nl >= 0; nl = block.indexOf(0x0a, start)) {
      const next = line(block.subarray(start, nl));
      overlong = false;
      if (next !== undefined) yield next;
      start = nl + 1;
    }
    carry = Buffer.from(block.subarray(start));
    if (carry.length > DUMP_LINE_BYTES_MAX) {
      overlong = true;
      carry = Buffer.alloc(0);
    }
  }
  if (carry.length > 0 || overlong) {
    const last = line(carry);
    if (last !== undefined) yield last;
  }
}

/**
 * Imports a DumpURLs file into `store`: discovered lines are enqueued (queued when new, as a
 * crawler's discovery), known lines with a refetch date scheduled for it, known lines without one
 * recorded as seen and finished. A line's crawlID names its scope (`""` is DEFAULT, as for the
 * URLFrontier service), its key its queue (none: the URL's queue key in the scope), its metadata
 * the entry's payload. Streamed: at most a batch of lines is held. Running it again over the same
 * file changes nothing more (every step is add-if-absent or a move to the same place).
 */
export async function importDump(
  store: SeenStore,
  input: AsyncIterable<Buffer>,
  options: ImportDumpOptions = {},
): Promise<ImportDumpCounts> {
  const batchLines = options.batchLines ?? DUMP_BATCH_LINES_DEFAULT;
  if (!Number.isSafeInteger(batchLines) || batchLines < 1)
    throw new TypeError('batchLines must be a whole number >= 1');
  const counts: ImportDumpCounts = { read: 0, queued: 0, seen: 0, scheduled: 0, done: 0, invalid: 0, scopes: [] };
  const importer = new DumpImporter(store, options, counts);
  const now = options.nowMs ?? Date.now;
  let batch: DumpItem[] = [];
  for await (const [line, lineNo] of dumpLines(dumpBytes(input))) {
    if (options.signal?.aborted === true)
      throw new SeenStoreError(
        'INTERRUPTED',
        `stopped between batches at line ${lineNo}; the lines before its batch were imported`,
      );
    counts.read++;
    try {
      if (line === undefined) throw new DumpLineError(`longer than ${DUMP_LINE_BYTES_MAX} bytes`);
      batch.push(parseDumpLine(line, now(), options.scope));
    } catch (error) {
      if (!(error instanceof DumpLineError)) throw error;
      importer.invalid(lineNo, error.message);
      continue;
    }
    if (batch.length >= batchLines) {
      await importer.write(batch);
      batch = [];
    }
  }
  await importer.write(batch);
  if (counts.invalid > INVALID_LINES_REPORTED) options.warn?.(`${counts.invalid} invalid lines skipped in all`);
  return counts;
}

/** Writes batches of checked lines to their scopes. */
class DumpImporter {
  readonly #store: SeenStore;
  readonly #options: ImportDumpOptions;
  readonly #counts: ImportDumpCounts;
  readonly #modes = new Map<string, Promise<QueueKeyMode>>();

  constructor(store: SeenStore, options: ImportDumpOptions, counts: ImportDumpCounts) {
    this.#store = store;
    this.#options = options;
    this.#counts = counts;
  }

  invalid(lineNo: number, reason: string): void {
    this.#counts.invalid++;
    if (this.#options.onInvalid !== 'skip') {
      throw new SeenStoreError(
        'INVALID_URL',
        `line ${lineNo} of the dump: ${reason}; stopped (--on-invalid fail): the batches before its own were imported, nothing after`,
      );
    }
    if (this.#counts.invalid <= INVALID_LINES_REPORTED) this.#options.warn?.(`line ${lineNo}: ${reason}, skipped`);
  }

  /**
   * One batch, scope by scope: discovered lines first, then known ones, so that a URL both
   * discovered and known in one batch ends known, as it would line by line.
   */
  async write(batch: readonly DumpItem[]): Promise<void> {
    const byScope = new Map<string, DumpItem[]>();
    for (const item of batch) {
      let items = byScope.get(item.scope);
      if (items === undefined) byScope.set(item.scope, (items = []));
      items.push(item);
    }
    for (const [name, items] of byScope) {
      const scope = this.#store.scope(name, { keys: 'raw', ...this.#options.scopeOptions });
      if (!this.#counts.scopes.includes(name)) this.#counts.scopes.push(name);
      await this.#discovered(
        scope,
        items.filter((item) => item.kind === 'discovered'),
      );
      await this.#known(
        scope,
        items.filter((item) => item.kind === 'known'),
      );
    }
  }

  async #discovered(scope: Scope, items: readonly DumpItem[]): Promise<void> {
    if (items.length === 0) return;
    const answers = await scope.enqueue(
      items.map((item) => item.url),
      await this.#queueOptions(scope, items),
    );
    const queued = answers.filter(Boolean).length;
    this.#counts.queued += queued;
    this.#counts.seen += items.length - queued;
  }

  /**
   * Known URLs are scheduled (a date) or finished (0), and recorded as seen: the reference holds
   * them as known, so a later discovery of one must not queue it a second time.
   */
  async #known(scope: Scope, items: readonly DumpItem[]): Promise<void> {
    if (items.length === 0) return;
    const urls = items.map((item) => item.url);
    await scope.frontier().schedule(
      urls,
      items.map((item) => item.refetchMs),
      await this.#queueOptions(scope, items),
    );
    await scope.add(urls);
    const scheduled = items.filter((item) => item.refetchMs > 0).length;
    this.#counts.scheduled += scheduled;
    this.#counts.done += items.length - scheduled;
  }

  async #queueOptions(scope: Scope, items: readonly DumpItem[]): Promise<{ queues: string[]; data?: unknown[] }> {
    const needsMode = items.some((item) => item.key === '');
    const mode = needsMode ? await this.#mode(scope) : 'host';
    const queues = items.map((item) => (item.key === '' ? queueOf(item.url, mode) : item.key));
    const withData = items.some((item) => item.data !== undefined);
    return withData ? { queues, data: items.map((item) => item.data ?? null) } : { queues };
  }

  /** A scope's queue key, pinned: lines without a key are queued as the scope's own URLs would be. */
  #mode(scope: Scope): Promise<QueueKeyMode> {
    let mode = this.#modes.get(scope.name);
    if (mode === undefined) {
      mode = scope.frontier().pinnedQueueKey();
      this.#modes.set(scope.name, mode);
    }
    return mode;
  }
}

export interface ExportDumpOptions {
  /** Only these scopes (default: every scope whose frontier holds URLs). */
  readonly scopes?: readonly string[];
  readonly signal?: AbortSignal;
}

/**
 * The lines of a DumpURLs file holding the frontiers of `store` (or of `options.scopes`): every
 * entry of each, waiting and leased ones as discovered, scheduled ones as known with their date,
 * each scope as the crawl of its name. Finished URLs are not in it: seenstore keeps them only as
 * bits of the filter, so an export carries the frontier, not the crawl's history. Pages are read
 * as the lines are consumed.
 */
export async function* exportDumpLines(store: SeenStore, options: ExportDumpOptions = {}): AsyncGenerator<string> {
  const names = options.scopes ?? (await store.scopeNames());
  for (const name of names) {
    const frontier = store.scope(name).frontier();
    let cursor: string | undefined;
    do {
      if (options.signal?.aborted === true)
        throw new SeenStoreError('INTERRUPTED', `stopped while exporting scope ${name}; the dump is incomplete`);
      const page = await frontier.entries({ limit: EXPORT_PAGE_ENTRIES, ...(cursor === undefined ? {} : { cursor }) });
      if (page.entries.length > 0) yield `${page.entries.map((entry) => formatDumpLine(entry, name)).join('\n')}\n`;
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
}
