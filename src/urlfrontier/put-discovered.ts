import type { ServerDuplexStream } from '@grpc/grpc-js';
import { queueKeyOf } from '../url/queue-key.js';
import type { Crawls } from './crawls.js';
import { isMalformed, type MalformedMessage, type UrlInfo } from './proto.js';
import { infoSkipReason, isBadInput, type PutStreamHooks } from './put-urls.js';
import { invalidArgument, RpcError, toServiceError } from './status.js';

/** Batches of one stream received and not yet acked, past which it is no longer read (the reference's putDiscovered.max.inflight). */
export const PUT_DISCOVERED_IN_FLIGHT_DEFAULT = 16;
/** Most URLs of waiting batches joined into one enqueue (one durable commit); a batch is never split. */
const JOINED_URLS_MAX = 8_192;

export interface DiscoveredBatch {
  readonly ID: string;
  readonly items: readonly UrlInfo[];
}

export interface BatchAck {
  readonly ID: string;
  readonly statuses: readonly Status[];
}

type Status = 'OK' | 'SKIPPED' | 'FAIL';

export interface PutDiscoveredOptions extends PutStreamHooks<BatchAck> {
  readonly crawls: Crawls;
  /** Batches received and not yet acked before the stream is paused (>= 1). */
  readonly maxInFlight: number;
}

/** One URL of a batch, checked: where its status goes and what to enqueue. */
interface Slot {
  readonly batch: number;
  readonly index: number;
  readonly info: UrlInfo;
}

/**
 * PutDiscovered: a stream of batches of discovered URLs (a page's outlinks), one BatchAck per
 * batch once it is durable, echoing its ID with one status per URL in order. A URL is created
 * (OK) when it is new, else SKIPPED: known before, repeated within the batch (or an earlier one),
 * or one that can never be queued (no host, too long). An empty batch is acked with its ID and no
 * statuses (clients probe with one). The URLs of one crawl are enqueued in one call, so a batch is
 * one durable commit; batches waiting together are joined into one. At most `maxInFlight` batches
 * are received and not acked: past that the stream is not read (HTTP/2 flow control holds the
 * client). A message that does not decode ends the stream with INVALID_ARGUMENT after the acks of
 * every batch before it.
 */
export class PutDiscoveredStream {
  readonly #call: ServerDuplexStream<DiscoveredBatch | MalformedMessage, BatchAck>;
  readonly #options: PutDiscoveredOptions;
  readonly #warned = new Set<string>();
  #pending: DiscoveredBatch[] = [];
  #running: Promise<void> | undefined;
  #ended = false;
  #malformed: string | undefined;
  #cancelled = false;

  constructor(call: ServerDuplexStream<DiscoveredBatch | MalformedMessage, BatchAck>, options: PutDiscoveredOptions) {
    this.#call = call;
    this.#options = options;
    call.on('data', (batch: DiscoveredBatch | MalformedMessage) => this.#receive(batch));
    call.on('end', () => {
      this.#ended = true;
      this.#kick();
    });
    call.on('cancelled', () => (this.#cancelled = true));
    call.on('error', () => (this.#cancelled = true));
  }

  #receive(batch: DiscoveredBatch | MalformedMessage): void {
    if (this.#malformed !== undefined) return;
    if (isMalformed(batch)) {
      this.#malformed = batch.malformed;
      this.#ended = true;
    } else {
      this.#pending.push(batch);
      if (this.#pending.length >= this.#options.maxInFlight) this.#call.pause();
    }
    this.#kick();
  }

  /** Starts committing on the next turn, so that the batches that arrived in this one are joined. */
  #kick(): void {
    if (this.#running !== undefined) return;
    this.#running = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#drain())
      .finally(() => {
        this.#running = undefined;
        if (this.#cancelled) this.#pending = [];
        else if (this.#pending.length > 0 || (this.#ended && !this.#call.writableEnded)) this.#kick();
      });
  }

  async #drain(): Promise<void> {
    while (this.#pending.length > 0 && !this.#cancelled) {
      let end = 1;
      let urls = this.#pending[0]!.items.length;
      while (end < this.#pending.length && urls + this.#pending[end]!.items.length <= JOINED_URLS_MAX)
        urls += this.#pending[end++]!.items.length;
      const joined = this.#pending.slice(0, end);
      const startNs = process.hrtime.bigint();
      const statuses = await this.#commit(joined);
      // Removed once acked: a batch counts toward the in-flight cap until its ack is written.
      this.#pending = this.#pending.slice(end);
      const acks = joined.map((batch, i) => ({ ID: batch.ID, statuses: statuses[i]! }));
      for (const ack of acks) this.#call.write(ack);
      this.#options.onAcks(acks, startNs);
      if (this.#call.isPaused() && this.#pending.length < this.#options.maxInFlight) this.#call.resume();
    }
    if (!this.#ended || this.#call.writableEnded || this.#cancelled) return;
    if (this.#malformed !== undefined) this.#call.emit('error', toServiceError(invalidArgument(this.#malformed)));
    else this.#call.end();
  }

  /** The statuses of the joined batches, per batch in item order, once their URLs are durable. */
  async #commit(batches: readonly DiscoveredBatch[]): Promise<Status[][]> {
    const statuses = batches.map((batch) => batch.items.map((): Status => 'SKIPPED'));
    const byCrawl = new Map<string, Slot[]>();
    batches.forEach((batch, b) => {
      batch.items.forEach((info, index) => {
        if (info === null || infoSkipReason(info) !== undefined) return;
        const slots = byCrawl.get(info.crawlID);
        if (slots === undefined) byCrawl.set(info.crawlID, [{ batch: b, index, info }]);
        else slots.push({ batch: b, index, info });
      });
    });
    for (const [crawlID, slots] of byCrawl) {
      const answers = await this.#enqueue(crawlID, slots);
      slots.forEach((slot, i) => (statuses[slot.batch]![slot.index] = answers[i]!));
    }
    return statuses;
  }

  /** One crawl's URLs in one enqueue; a call refused as bad input is retried URL by URL, so that only the bad ones are SKIPPED. */
  async #enqueue(crawlID: string, slots: readonly Slot[]): Promise<Status[]> {
    try {
      const scope = await this.#options.crawls.scope(crawlID);
      const mode = await this.#options.crawls.queueKeyMode(crawlID);
      const urls = slots.map((slot) => slot.info.url);
      const queues = slots.map(({ info }) => (info.key === '' ? queueKeyOf(info.url, mode)! : info.key));
      const withData = slots.some(({ info }) => Object.keys(info.metadata).length > 0);
      const data = withData
        ? slots.map(({ info }) => (Object.keys(info.metadata).length === 0 ? null : { metadata: info.metadata }))
        : undefined;
      const answers = await scope.enqueue(urls, { queues, ...(data === undefined ? {} : { data }) });
      return answers.map((isNew) => (isNew ? 'OK' : 'SKIPPED'));
    } catch (error) {
      if (error instanceof RpcError) {
        if (!this.#warned.has(crawlID)) {
          this.#warned.add(crawlID);
          this.#options.onUnusableCrawl(crawlID, error.message);
        }
        return slots.map(() => 'SKIPPED');
      }
      if (!isBadInput(error)) return slots.map(() => 'FAIL');
      if (slots.length === 1) return ['SKIPPED'];
      const out: Status[] = [];
      for (const slot of slots) out.push(...(await this.#enqueue(crawlID, [slot])));
      return out;
    }
  }
}
