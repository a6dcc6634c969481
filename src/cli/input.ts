import { createReadStream, fstatSync, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { SeenStoreError } from '../errors.js';
import type { Utf8Keys } from '../hash/xxhash.js';
import { FileChunks } from './file-chunks.js';
import { holdsControlTrimmed } from '../url/url-shape.js';
import { CONTROL_REASON, LineSplitter, Utf8LineBatcher, type InvalidReason } from './lines.js';

export type OnInvalid = 'skip' | 'fail';

export interface BatchOptions {
  /** Lines per batch (one durable commit each). */
  readonly batchSize: number;
  /** A non-empty batch is processed at the latest this long after its first line arrived. */
  readonly maxDelayMs: number;
  readonly maxLineBytes: number;
  readonly onInvalid: OnInvalid;
  /**
   * Extra per-line check (e.g. URL parsing when normalising); returns false for unusable lines.
   * `controlFree`: the line surely holds no control character (LineSink), so a check that looks
   * for one at every character may skip it.
   */
  readonly accept: (line: string, controlFree: boolean) => boolean;
  /** forEachUtf8Batch: lines are URL keys (normalisation `url`), trimmed and checked as such. */
  readonly urlKeys?: boolean;
  /** Called with a message for each invalid line that is skipped (the first few). */
  readonly warn: (message: string) => void;
  /**
   * Batches handed over before the oldest one has finished (default 1). With 2, the next batch is
   * hashed, decided and committed while the previous one's output is still being written (and the
   * input read on); the handler must then wait for `previous` before it acknowledges anything, to
   * keep the order.
   */
  readonly inFlight?: number;
  /** When aborted, reading stops and the run ends with INTERRUPTED once the batches under way are handled. */
  readonly signal?: AbortSignal;
  /** Told the lines and bytes read so far after each chunk of input, and `done` at the end. */
  readonly progress?: ProgressSink;
}

export interface ProgressSink {
  update(linesRead: number, bytesRead: number): void;
  done(): void;
}

export interface InputCounts {
  /** Non-empty lines read. */
  read: number;
  invalid: number;
}

/** Invalid lines reported one by one before only the count is kept. */
const INVALID_LINES_REPORTED = 10;

/** Bytes per read of an input file: 64 KiB reads (process.stdin's) cost ~20 % more CPU on filter-new. */
const INPUT_READ_BYTES = 256 * 1024;

/**
 * Opens FILE, or stdin when FILE is absent or `-`. Stdin redirected from a regular file is read
 * like FILE, in large reads; a pipe or terminal stays process.stdin, which a stop closes at once
 * (a read of a pipe pending in the thread pool would hold the process until its writer wrote).
 */
export function openInput(file: string | undefined): Readable {
  if (file === undefined || file === '-') {
    return stdinIsFile()
      ? createReadStream('', { fd: 0, autoClose: false, highWaterMark: INPUT_READ_BYTES })
      : process.stdin;
  }
  refuseDirectory(file);
  return createReadStream(file, { highWaterMark: INPUT_READ_BYTES });
}

/** Chunks of input for the batch readers below: a Readable, or FileChunks. */
export type InputChunks = AsyncIterable<Buffer> & { destroy(): void };

/**
 * As openInput, for forEachBatch and forEachUtf8Batch, which copy what they keep of a chunk: a
 * regular file (or stdin redirected from one) is read into two reused buffers (FileChunks).
 */
export function openInputChunks(file: string | undefined): InputChunks {
  if (file === undefined || file === '-') return stdinIsFile() ? new FileChunks(0, INPUT_READ_BYTES) : process.stdin;
  refuseDirectory(file);
  return new FileChunks(file, INPUT_READ_BYTES);
}

/** Refuses a directory up front: read, it would fail later with a bare EISDIR. */
function refuseDirectory(file: string): void {
  if (statSync(file, { throwIfNoEntry: false })?.isDirectory() === true) {
    throw new SeenStoreError('USAGE', `${file} is a directory; give a file of URLs, one per line (or - for stdin)`);
  }
}

function stdinIsFile(): boolean {
  try {
    return fstatSync(0).isFile();
  } catch {
    // A closed stdin: process.stdin reports it as it always did.
    return false;
  }
}

/** Where lines collect into a batch until it is taken. */
interface Batcher<B> {
  /** Lines in the batch being collected. */
  readonly count: number;
  push(chunk: Buffer): void;
  end(): void;
  take(): B;
  /** Lines of a batch taken. */
  size(batch: B): number;
  /** Lines `start` up to `end` of a batch taken, sharing its buffers. */
  part(batch: B, start: number, end: number): B;
  /**
   * Makes lines `start` on of a batch just taken (nothing collected since) the start of the batch
   * being collected. Without it, what follows a chunk's last full batch is handed over as a short
   * batch of its own.
   */
  keep?(batch: B, start: number): void;
}

type OnInvalidLine = (lineNo: number, reason: InvalidReason) => void;

/**
 * Streams lines from `input` into batches of strings and hands each batch to `handle`, one at a
 * time and in order. A batch closes when it is full or `maxDelayMs` after its first line, so a slow
 * producer still gets timely answers. With onInvalid `fail`, the first invalid line stops the run
 * before its batch is handled: batches already handled stay recorded, nothing of the failing one is.
 */
export function forEachBatch(
  input: InputChunks,
  options: BatchOptions,
  handle: (lines: string[]) => Promise<void>,
): Promise<InputCounts> {
  return runBatches(input, options, handle, (invalid) => {
    let pending: string[] = [];
    const splitter = new LineSplitter(
      {
        line: (text, lineNo, controlFree) => {
          if (options.accept(text, controlFree)) pending.push(text);
          else invalid(lineNo, holdsControlTrimmed(text) ? CONTROL_REASON : 'not a usable URL');
        },
        invalid,
      },
      options.maxLineBytes,
    );
    return {
      get count() {
        return pending.length;
      },
      push: (chunk) => splitter.push(chunk),
      end: () => splitter.end(),
      take: () => {
        const batch = pending;
        pending = [];
        return batch;
      },
      size: (batch) => batch.length,
      part: (batch, start, end) => batch.slice(start, end),
      keep: (batch, start) => {
        pending = batch.slice(start);
      },
    };
  });
}

/**
 * As forEachBatch, with each batch's lines as UTF-8 ranges of one buffer, no string per line: for
 * epochs that hash lines as they are (normalisation `none`, or `url` with `urlKeys`), where
 * `accept` adds nothing to the UTF-8, length and URL-shape checks. A batch's buffers are filled
 * again after `handle`'s promise for it settles: copy what must outlive it.
 */
export function forEachUtf8Batch(
  input: InputChunks,
  options: BatchOptions,
  handle: (lines: Utf8Keys, previous: Promise<void>) => Promise<void>,
): Promise<InputCounts> {
  // runBatches takes a batch only once fewer than `inFlight` are unanswered: with one being filled,
  // a batch's buffers are free again `inFlight` + 1 batches later, once `handle` let go of it.
  const reuse = Math.max(1, options.inFlight ?? 1);
  return runBatches(
    input,
    options,
    handle,
    (invalid) => new Utf8LineBatcher(options.maxLineBytes, invalid, options.urlKeys === true, reuse),
  );
}

async function runBatches<B>(
  input: InputChunks,
  options: BatchOptions,
  handle: (batch: B, previous: Promise<void>) => Promise<void>,
  makeBatcher: (invalid: OnInvalidLine) => Batcher<B>,
): Promise<InputCounts> {
  const counts: InputCounts = { read: 0, invalid: 0 };
  const depth = Math.max(1, options.inFlight ?? 1);
  let failure: unknown;
  // Flushes run one after another; each hands its batch over and waits while `depth` are in flight.
  let chain: Promise<void> = Promise.resolve();
  const inFlight: Promise<void>[] = [];
  let last: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const fail = (error: unknown): void => {
    failure ??= error;
    input.destroy();
  };

  const invalid = (lineNo: number, reason: InvalidReason): void => {
    counts.invalid++;
    if (options.onInvalid === 'fail') {
      throw new SeenStoreError(
        'INVALID_URL',
        `line ${lineNo}: ${reason}; stopped (--on-invalid fail), this batch was not recorded`,
      );
    }
    if (counts.invalid <= INVALID_LINES_REPORTED) options.warn(`line ${lineNo}: ${reason}, skipped`);
  };
  const batcher = makeBatcher(invalid);
  const onAbort = (): void => {
    const why = (options.signal?.reason as Error | undefined)?.message ?? 'aborted';
    fail(
      new SeenStoreError(
        'INTERRUPTED',
        `stopped (${why}) between batches; every line printed before it was answered in full`,
      ),
    );
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });

  /**
   * Hands over what was collected, in batches of at most batchSize. `full` (the batch filled up,
   * more input may follow): lines past the last full batch stay to start the next one, so that a
   * chunk that overfills a batch costs no extra short batch (each is a durable commit of its own).
   */
  const flush = (full = false): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    chain = chain.then(async () => {
      if (batcher.count === 0 || failure !== undefined) return;
      let whole = batcher.take();
      let size = batcher.size(whole);
      const rest = size % options.batchSize;
      if (full && rest > 0 && size > options.batchSize && batcher.keep !== undefined) {
        batcher.keep(whole, size - rest);
        size -= rest;
        whole = batcher.part(whole, 0, size);
      }
      counts.read += size;
      for (let start = 0; start < size && failure === undefined; start += options.batchSize) {
        const batch =
          size <= options.batchSize ? whole : batcher.part(whole, start, Math.min(size, start + options.batchSize));
        const done = handle(batch, last);
        done.catch(fail);
        last = done;
        inFlight.push(done);
        while (inFlight.length >= depth) await inFlight.shift();
      }
    });
    chain.catch(fail);
    return chain;
  };

  let bytesRead = 0;
  try {
    for await (const chunk of input) {
      batcher.push(chunk as Buffer);
      bytesRead += (chunk as Buffer).length;
      options.progress?.update(counts.read + batcher.count, bytesRead);
      if (batcher.count >= options.batchSize) await flush(true);
      if (batcher.count > 0 && timer === undefined) timer = setTimeout(() => void flush(), options.maxDelayMs);
      if (failure !== undefined) break;
    }
    if (failure === undefined) {
      batcher.end();
      await flush();
      await Promise.all(inFlight);
    }
  } catch (error) {
    failure ??= error;
  } finally {
    options.progress?.done();
    options.signal?.removeEventListener('abort', onAbort);
    if (timer !== undefined) clearTimeout(timer);
    await chain.catch(() => undefined);
    await Promise.allSettled(inFlight);
  }
  if (failure !== undefined) throw failure;
  if (counts.invalid > INVALID_LINES_REPORTED) options.warn(`${counts.invalid} invalid lines skipped in all`);
  return counts;
}
