import { keyCount, type Utf8Keys } from '../hash/xxhash.js';
import type { Deliveries, UndeliveredBatch, UndeliveredKey } from '../store/backend.js';
import { newOwner } from '../store/owners.js';
import { MAX_BATCH_URLS } from './epoch-queries.js';
import type { Scope } from './scope.js';
import type { AddOptions } from './scope-types.js';

/**
 * Bytes of the lines written last that a run which stops abnormally keeps as undelivered (on top of
 * the batches not yet written): a reader that dies loses what sits unread in its pipe, and a Linux
 * pipe holds at most 1 MiB (/proc/sys/fs/pipe-max-size).
 */
export const KEEP_WRITTEN_BYTES = 2 ** 20;

const NEWLINE = 0x0a;
/** Buffers kept for reuse, and the smallest worth keeping (smaller ones come from Node's pool). */
const SPARE_BUFFERS = 4;
const SPARE_BYTES_MIN = 64 * 1024;

/** A batch this run recorded: its new URLs' lines, to be written, then reported with `written`. */
export interface RecordedBatch extends UndeliveredBatch {
  /** The URLs it holds (its lines). */
  readonly urls: number;
}

export interface DeliveryOptions {
  /** Print first what earlier runs left undelivered (default true; `--no-redeliver`). */
  readonly redeliver?: boolean;
  /** The run enqueues what it finds new (frontier push): what it redelivers is enqueued too. */
  readonly enqueue?: boolean;
}

/**
 * At-least-once delivery for a command that records URLs and then prints them (docs/reliability.md,
 * "Delivery"). Each batch's new URLs are kept as undelivered in the same atomic step that records
 * them; `written` says that the reader's side took a batch's bytes (the kernel accepted them), and
 * the next add deletes it in its own step; `finish` deletes the rest once everything was written.
 * A run that stops abnormally leaves its unwritten batches, and with `keepWritten` the last
 * KEEP_WRITTEN_BYTES it wrote, for the next run, which claims them (`redelivered`) and prints
 * them first — once the process that left them is gone, never a running one's.
 */
export class Delivery {
  readonly #scope: Scope;
  readonly #deliveries: Deliveries;
  readonly #owner: string;
  #seq = 0;
  /** Stored batches written since the last step: the next step deletes them. */
  #delivered: number[] = [];
  /** Stored batches recorded and not written yet, by seq: their URL counts. */
  readonly #unwritten = new Map<number, number>();
  /** The last batches written, oldest first, while the ones after the oldest hold under KEEP_WRITTEN_BYTES. */
  readonly #recent: RecordedBatch[] = [];
  #recentBytes = 0;
  /** Buffers of batches written and no longer kept: the next batches' lines go there (no allocation per batch). */
  readonly #spare: Buffer[] = [];
  /** The buffers this run's batches were written into whole (never another's, or Node's shared pool). */
  readonly #reusable = new WeakSet<ArrayBufferLike>();
  /** The batches earlier runs left, claimed by this one: write them first. */
  readonly redelivered: readonly RecordedBatch[];

  private constructor(scope: Scope, deliveries: Deliveries, owner: string, redelivered: readonly UndeliveredBatch[]) {
    this.#scope = scope;
    this.#owner = owner;
    this.#deliveries = deliveries;
    this.redelivered = redelivered.map((batch) => ({ ...batch, urls: countLines(batch.lines) }));
    for (const batch of this.redelivered) this.#unwritten.set(batch.seq, batch.urls);
    this.#seq = redelivered.length;
  }

  /**
   * Starts a delivering run on the scope: with `redeliver` (the default), it first claims the
   * batches of runs that are gone (of two runs starting at once, each batch goes to one).
   */
  static async begin(scope: Scope, options: DeliveryOptions = {}): Promise<Delivery> {
    const deliveries = await scope.deliveries();
    const owner = newOwner();
    const claimed = options.redeliver === false ? [] : await deliveries.claim(owner, 1);
    // A run killed between keeping a batch and recording it left lines that are not recorded:
    // they are recorded now, before they are printed (printed implies recorded).
    for (const batch of claimed) {
      const urls = Buffer.from(batch.lines.buffer, batch.lines.byteOffset, batch.lines.length)
        .toString('utf8')
        .split('\n')
        .filter((line) => line !== '');
      await (options.enqueue === true ? scope.enqueue(urls) : scope.add(urls));
    }
    return new Delivery(scope, deliveries, owner, claimed);
  }

  /** URLs recorded by this run (or claimed) that were not written yet. */
  get unwrittenUrls(): number {
    let n = 0;
    for (const urls of this.#unwritten.values()) n += urls;
    return n;
  }

  /** As Scope.addIfAbsentUtf8 (the lines as they are: each key's bytes, printed as they came). */
  async addIfAbsentUtf8(
    lines: Utf8Keys,
    options: AddOptions = {},
  ): Promise<{ answers: boolean[]; batch: RecordedBatch }> {
    return this.#add(lines, options, false, (answers) => {
      const out = selectedUtf8Lines(lines, answers, this.#spare);
      if (out.buffer.byteLength >= SPARE_BYTES_MIN) this.#reusable.add(out.buffer);
      return out;
    });
  }

  /** As Scope.addIfAbsent, or Scope.enqueue with `enqueue` (the URLs as given). */
  async addIfAbsent(
    urls: readonly string[],
    options: AddOptions = {},
    enqueue = false,
  ): Promise<{ answers: boolean[]; batch: RecordedBatch }> {
    return this.#add(urls, options, enqueue, (answers) => selectedLines(urls, answers));
  }

  async #add(
    urls: readonly string[] | Utf8Keys,
    options: AddOptions,
    enqueue: boolean,
    linesOf: (answers: readonly boolean[]) => Uint8Array,
  ): Promise<{ answers: boolean[]; batch: RecordedBatch }> {
    if (keyCount(urls) > MAX_BATCH_URLS) throw new TypeError(`a delivered batch holds at most ${MAX_BATCH_URLS} URLs`);
    const seq = ++this.#seq;
    // The step deletes the batches written so far; batches written meanwhile wait for the next.
    const delivered = this.#delivered;
    this.#delivered = [];
    let lines: Uint8Array | undefined;
    let answers: boolean[];
    try {
      answers = await this.#scope.addDelivered(
        urls,
        { owner: this.#owner, seq, delivered, lines: (decided) => (lines = linesOf(decided)) },
        options,
        enqueue,
      );
    } catch (error) {
      // A step that failed deleted nothing: the next one (or finish) deletes them.
      this.#delivered = [...delivered, ...this.#delivered];
      throw error;
    }
    lines ??= linesOf(answers);
    let urlsNew = 0;
    for (const isNew of answers) if (isNew) urlsNew++;
    if (urlsNew > 0) this.#unwritten.set(seq, urlsNew);
    return { answers, batch: { owner: this.#owner, seq, lines, urls: urlsNew } };
  }

  /** The reader's side took the batch's bytes: the next step releases it. */
  written(batch: RecordedBatch): void {
    if (!this.#unwritten.delete(batch.seq)) return;
    this.#delivered.push(batch.seq);
    this.#recent.push(batch);
    this.#recentBytes += batch.lines.length;
    while (this.#recent.length > 1 && this.#recentBytes - this.#recent[0]!.lines.length >= KEEP_WRITTEN_BYTES) {
      const old = this.#recent.shift()!;
      this.#recentBytes -= old.lines.length;
      // Written, and no longer kept for keepWritten: its buffer serves a later batch.
      if (this.#spare.length < SPARE_BUFFERS && this.#reusable.has(old.lines.buffer))
        this.#spare.push(Buffer.from(old.lines.buffer));
    }
  }

  /**
   * Everything recorded was written: deletes what this run still keeps. False when another run had
   * claimed some of it meanwhile (a Redis store's run that wrote nothing for DELIVERY_LEASE_MS):
   * that run prints it again.
   */
  async finish(): Promise<boolean> {
    const kept: UndeliveredKey[] = this.#delivered.map((seq) => ({ owner: this.#owner, seq }));
    this.#delivered = [];
    return kept.length === 0 || this.#deliveries.release(kept);
  }

  /**
   * For a run that stops abnormally (its reader gone, a signal): keeps the last KEEP_WRITTEN_BYTES
   * of lines it wrote as undelivered too, since a reader that died may not have read them.
   * Resolves with the URLs kept in all (those and the ones never written).
   */
  async keepWritten(): Promise<number> {
    // Written batches no step has deleted yet are still stored: they stay as they are; the ones
    // deleted already are stored again, as one batch.
    const deleted = this.#recent.filter((batch) => !this.#delivered.includes(batch.seq));
    if (deleted.length > 0) {
      const lines = Buffer.concat(deleted.map((batch) => batch.lines));
      await this.#deliveries.keep({ owner: this.#owner, seq: ++this.#seq, lines });
    }
    this.#delivered = [];
    let urls = this.unwrittenUrls;
    for (const batch of this.#recent) urls += batch.urls;
    return urls;
  }
}

function countLines(lines: Uint8Array): number {
  let n = 0;
  for (let i = lines.indexOf(NEWLINE); i >= 0; i = lines.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** The selected keys' bytes, each followed by a newline, in a buffer of their own. */
export function selectedUtf8Lines(batch: Utf8Keys, selected: readonly boolean[], spare: Buffer[] = []): Uint8Array {
  const { bytes, ranges, count } = batch;
  let size = 0;
  for (let i = 0; i < count; i++) if (selected[i]) size += ranges[2 * i + 1]! - ranges[2 * i]! + 1;
  const reuse = spare.findIndex((buffer) => buffer.length >= size);
  const out = reuse >= 0 ? spare.splice(reuse, 1)[0]!.subarray(0, size) : Buffer.allocUnsafe(size);
  let n = 0;
  for (let i = 0; i < count; ) {
    if (!selected[i]) {
      i++;
      continue;
    }
    const start = ranges[2 * i]!;
    let end = ranges[2 * i + 1]!;
    // Consecutive selected lines separated by a bare newline copy as one run.
    for (i++; i < count && selected[i] && ranges[2 * i] === end + 1; i++) end = ranges[2 * i + 1]!;
    Buffer.prototype.copy.call(bytes, out, n, start, end);
    n += end - start;
    out[n++] = NEWLINE;
  }
  return out;
}

function selectedLines(urls: readonly string[], selected: readonly boolean[]): Uint8Array {
  let text = '';
  for (let i = 0; i < urls.length; i++) if (selected[i]) text += `${urls[i]}\n`;
  return Buffer.from(text, 'utf8');
}
