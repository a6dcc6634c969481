import { SeenStoreError } from '../index.js';
import type { ServerMetrics } from './metrics.js';
import type { Request } from './resp-parser.js';
import type { ServedScope } from './served-store.js';

/**
 * The items of one write command (BF.ADD, BF.MADD, BF.INSERT) waiting for its scope's next group
 * commit: arguments firstArg .. firstArg + count - 1 of `request`. `settle` is called once, with
 * the batch's answers (the entry's are answers[from .. from + count - 1]) or with the error that
 * failed it.
 */
export interface AddEntry {
  readonly request: Request;
  readonly firstArg: number;
  readonly count: number;
  readonly settle: (answers: readonly boolean[] | undefined, from: number, error?: unknown) => void;
}

/**
 * URLs in one group commit: the library's largest journal record, so that one batch is one
 * `addIfAbsentUtf8` call is one journal commit (one fsync). A single command with more items still
 * goes alone, and the library splits it.
 */
export const BATCH_URLS_MAX = 65_536;

/** Longest wait for a batch to fill to the size of the one before (see GroupCommit.#gather). */
const GATHER_MS_MAX = 1;

/**
 * Group commit for one scope. Write commands of every connection join the pending batch; the
 * batch starts on the next event-loop turn (all the requests that arrived in this one join it),
 * and while it is being made durable the next batch gathers. Each entry is settled only once its
 * batch is durable, so a reply means the URLs survive kill -9. The URLs are copied, one command
 * span at a time, into one buffer, and handed to the library as UTF-8 ranges: no string per URL.
 */
export class GroupCommit {
  readonly #scope: ServedScope;
  readonly #metrics: ServerMetrics;
  #pending: AddEntry[] = [];
  #running: Promise<void> | undefined;
  #scheduled = false;
  /** Commands of the last batch plus those that arrived during its commit: the next batch waits for as many (see #gather). */
  #target = 0;
  #wake: (() => void) | undefined;

  constructor(scope: ServedScope, metrics: ServerMetrics) {
    this.#scope = scope;
    this.#metrics = metrics;
  }

  add(entry: AddEntry): void {
    this.#pending.push(entry);
    if (this.#wake !== undefined && this.#pending.length >= this.#target) this.#release();
    if (this.#running === undefined && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#target = 0;
        this.#running = this.#run().finally(() => {
          this.#running = undefined;
        });
      });
    }
  }

  /** Resolves once nothing is pending or in flight (shutdown waits for this). */
  async idle(): Promise<void> {
    while (this.#running !== undefined || this.#scheduled || this.#pending.length > 0) {
      await (this.#running ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  async #run(): Promise<void> {
    for (;;) {
      if (this.#pending.length < this.#target) await this.#gather();
      if (this.#pending.length === 0) return;
      const batch = this.#take();
      await this.#commit(batch, true);
      // Everyone active: the clients just answered (they usually send again at once) and those
      // that sent during the commit.
      this.#target = batch.length + this.#pending.length;
    }
  }

  /**
   * Waits, after a batch, until the clients it answered have sent again (most do at once), so that
   * the next batch holds every active client: at most GATHER_MS_MAX. Starting the next batch with
   * only what arrived during the commit would split the clients into two alternating halves, and
   * a commit costs the same (0.35 ms on a quiet disk here, several ms on a busy one) whatever its
   * size: that cost is what group commit amortises.
   */
  #gather(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#release(), GATHER_MS_MAX);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /**
   * Ends the wait on the next turn of the event loop, never inside the I/O callback that filled
   * the batch: the other sockets that became readable in the same poll still join it.
   */
  #release(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    if (wake !== undefined) setImmediate(wake);
  }

  #take(): AddEntry[] {
    let urls = 0;
    let n = 0;
    while (n < this.#pending.length && (n === 0 || urls + this.#pending[n]!.count <= BATCH_URLS_MAX))
      urls += this.#pending[n++]!.count;
    const batch = this.#pending.slice(0, n);
    this.#pending = this.#pending.slice(n);
    return batch;
  }

  async #commit(batch: readonly AddEntry[], splitOnInvalid: boolean): Promise<void> {
    const { bytes, ranges, count } = gather(batch);
    const startedNs = process.hrtime.bigint();
    let answers: boolean[];
    try {
      answers = await this.#scope.addIfAbsentUtf8({ bytes, ranges, count });
    } catch (error) {
      // Commands are checked before they join, but the library has the last word (a `whatwg`
      // scope refuses what is not an absolute URL): then each command is committed alone, so
      // one bad command fails only itself.
      if (splitOnInvalid && batch.length > 1 && error instanceof SeenStoreError && error.code === 'INVALID_URL') {
        for (const entry of batch) await this.#commit([entry], false);
        return;
      }
      for (const entry of batch) entry.settle(undefined, 0, error);
      return;
    }
    this.#metrics.commitSeconds.observe(Number(process.hrtime.bigint() - startedNs) / 1e9);
    this.#metrics.batchUrls.observe(count);
    let added = 0;
    for (let i = 0; i < count; i++) if (answers[i]) added++;
    this.#metrics.urls.inc({ op: 'adds' }, count);
    this.#metrics.urls.inc({ op: 'new' }, added);
    let from = 0;
    for (const entry of batch) {
      entry.settle(answers, from);
      from += entry.count;
    }
  }
}

/** One buffer holding every entry's item span, and the ranges of the items in it. */
function gather(batch: readonly AddEntry[]): { bytes: Buffer; ranges: Uint32Array; count: number } {
  let totalBytes = 0;
  let count = 0;
  for (const entry of batch) {
    const { offsets } = entry.request;
    totalBytes += offsets[2 * (entry.firstArg + entry.count - 1) + 1]! - offsets[2 * entry.firstArg]!;
    count += entry.count;
  }
  // Its own ArrayBuffer (never a slice of Buffer's shared pool): it is moved to the store thread.
  const bytes = Buffer.from(new ArrayBuffer(totalBytes));
  const ranges = new Uint32Array(2 * count);
  let at = 0;
  let r = 0;
  for (const entry of batch) {
    const { buf, offsets } = entry.request;
    const spanStart = offsets[2 * entry.firstArg]!;
    const spanEnd = offsets[2 * (entry.firstArg + entry.count - 1) + 1]!;
    buf.copy(bytes, at, spanStart, spanEnd);
    const shift = at - spanStart;
    for (let i = entry.firstArg; i < entry.firstArg + entry.count; i++) {
      ranges[r++] = offsets[2 * i]! + shift;
      ranges[r++] = offsets[2 * i + 1]! + shift;
    }
    at += spanEnd - spanStart;
  }
  return { bytes, ranges, count };
}
