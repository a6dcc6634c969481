import { SeenStoreError } from '../errors.js';
import type { Delivery, RecordedBatch } from '../epochs/delivery.js';
import { formatCount } from './output.js';
import { MAX_BATCH_URLS } from '../epochs/epoch-queries.js';
import type { BatchOptions } from './input.js';

let stdoutClaimed = false;

/** Whether a command handles stdout's errors itself (main.ts then leaves an EPIPE to it). */
export function stdoutErrorsClaimed(): boolean {
  return stdoutClaimed;
}

/**
 * Writes a batch's lines to stdout and resolves once the kernel took every byte (the write's
 * callback: a pipe's reader has room for them, a file has them), so that the caller acknowledges
 * a batch as delivered only then and records no more than it can deliver. A reader that went away
 * (EPIPE, or stdout already closed) rejects with OUTPUT_CLOSED.
 */
export function writeDelivered(lines: Uint8Array): Promise<void> {
  stdoutClaimed = true;
  if (lines.length === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    process.stdout.write(lines, (error) => (error ? reject(outputError(error)) : resolve()));
  });
}

function outputError(error: Error): SeenStoreError {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === 'EPIPE'
      ? 'the reader of the output went away (EPIPE)'
      : `writing the output failed (${code ?? error.message})`;
  return new SeenStoreError('OUTPUT_CLOSED', why, { cause: error });
}

/** Writes a batch and tells the delivery once it is written. */
export async function deliver(delivery: Delivery, batch: RecordedBatch): Promise<void> {
  await writeDelivered(batch.lines);
  delivery.written(batch);
}

/**
 * Writes what earlier runs left undelivered (Delivery.redelivered), before anything new; resolves
 * with the URLs written. Stops between batches once `signal` is aborted.
 */
export async function redeliver(delivery: Delivery, signal: AbortSignal): Promise<number> {
  let urls = 0;
  for (const batch of delivery.redelivered) {
    if (signal.aborted) break;
    await deliver(delivery, batch);
    urls += batch.urls;
  }
  return urls;
}

/**
 * How a delivering run that stopped abnormally ends: a reader gone (OUTPUT_CLOSED) or a signal
 * (INTERRUPTED) keeps the lines written last as undelivered too (Delivery.keepWritten), and the
 * error says what was done and what was kept. Other errors pass through as they are.
 */
export async function stoppedRun(error: unknown, delivery: Delivery | undefined, done: string): Promise<unknown> {
  if (!(error instanceof SeenStoreError) || delivery === undefined) return error;
  if (error.code !== 'OUTPUT_CLOSED' && error.code !== 'INTERRUPTED') return error;
  let kept: string;
  try {
    kept = `${formatCount(await delivery.keepWritten())} URLs kept for redelivery (the next run on this scope prints them first)`;
  } catch (keeping) {
    kept = `keeping the URLs written last for redelivery failed (${(keeping as Error).message}); the batches not written are kept`;
  }
  return new SeenStoreError(error.code, `${error.message}; ${done}; ${kept}`, { cause: error });
}

/**
 * Closes the store at the end of a delivering run. When the run is already failing (`failing`),
 * a failure of the close (the same deleted store, or a full disk that refuses the checkpoint too)
 * must not replace the error that says what happened, which stays the one line: it is dropped.
 * What the run acknowledged is durable whether or not the close's checkpoint was written.
 */
export async function closeKeepingError(store: { close(): Promise<void> }, failing: boolean): Promise<void> {
  try {
    await store.close();
  } catch (error) {
    if (!failing) throw error;
  }
}

/** A delivering run keeps each batch in one step: at most MAX_BATCH_URLS URLs (a larger --batch-size is split). */
export function deliveringBatches(options: BatchOptions): BatchOptions {
  return options.batchSize <= MAX_BATCH_URLS ? options : { ...options, batchSize: MAX_BATCH_URLS };
}
