import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { SeenStoreError } from '../errors.js';
import { LineSplitter, type InvalidReason } from './lines.js';

export type OnInvalid = 'skip' | 'fail';

export interface BatchOptions {
  /** Lines per batch (one durable commit each). */
  readonly batchSize: number;
  /** A non-empty batch is processed at the latest this long after its first line arrived. */
  readonly maxDelayMs: number;
  readonly maxLineBytes: number;
  readonly onInvalid: OnInvalid;
  /** Extra per-line check (e.g. URL parsing when normalising); returns false for unusable lines. */
  readonly accept: (line: string) => boolean;
  /** Called with a message for each invalid line that is skipped (the first few). */
  readonly warn: (message: string) => void;
}

export interface InputCounts {
  /** Non-empty lines read. */
  read: number;
  invalid: number;
}

/** Invalid lines reported one by one before only the count is kept. */
const INVALID_LINES_REPORTED = 10;

/** Opens FILE, or stdin when FILE is absent or `-`. */
export function openInput(file: string | undefined): Readable {
  if (file === undefined || file === '-') return process.stdin;
  const stream = createReadStream(file, { highWaterMark: 256 * 1024 });
  return stream;
}

/**
 * Streams lines from `input` into batches and hands each batch to `handle`, one at a time and in
 * order. A batch closes when it is full or `maxDelayMs` after its first line, so a slow producer
 * still gets timely answers. With onInvalid `fail`, the first invalid line stops the run before
 * its batch is handled: batches already handled stay recorded, nothing of the failing one is.
 */
export async function forEachBatch(
  input: Readable,
  options: BatchOptions,
  handle: (lines: string[]) => Promise<void>,
): Promise<InputCounts> {
  const counts: InputCounts = { read: 0, invalid: 0 };
  let pending: string[] = [];
  let failure: unknown;
  let chain: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const flush = (): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    chain = chain.then(async () => {
      if (pending.length === 0 || failure !== undefined) return;
      const batch = pending;
      pending = [];
      await handle(batch);
    });
    chain.catch((error: unknown) => {
      failure ??= error;
      input.destroy();
    });
    return chain;
  };

  const invalid = (lineNo: number, reason: InvalidReason): void => {
    counts.invalid++;
    if (options.onInvalid === 'fail') {
      throw new SeenStoreError('INVALID_URL', `line ${lineNo}: ${reason}; stopped (--on-invalid fail), this batch was not recorded`);
    }
    if (counts.invalid <= INVALID_LINES_REPORTED) options.warn(`line ${lineNo}: ${reason}, skipped`);
  };
  const splitter = new LineSplitter(
    {
      line: (text, lineNo) => {
        if (!options.accept(text)) return invalid(lineNo, 'not a usable URL');
        counts.read++;
        pending.push(text);
      },
      invalid,
    },
    options.maxLineBytes,
  );

  try {
    for await (const chunk of input) {
      splitter.push(chunk as Buffer);
      if (pending.length >= options.batchSize) await flush();
      else if (pending.length > 0 && timer === undefined) timer = setTimeout(() => void flush(), options.maxDelayMs);
      if (failure !== undefined) break;
    }
    if (failure === undefined) {
      splitter.end();
      await flush();
    }
  } catch (error) {
    failure ??= error;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    await chain.catch(() => undefined);
  }
  if (failure !== undefined) throw failure;
  if (counts.invalid > INVALID_LINES_REPORTED) options.warn(`${counts.invalid} invalid lines skipped in all`);
  return counts;
}
