import type { ServerDuplexStream } from '@grpc/grpc-js';
import { SeenStoreError } from '../errors.js';
import { MAX_QUEUE_KEY_LENGTH, queueKeyOf } from '../url/queue-key.js';
import { holdsControlString } from '../url/url-shape.js';
import type { Crawls } from './crawls.js';
import { isMalformed, type AckMessage, type MalformedMessage, type UrlInfo, type UrlItem } from './proto.js';
import { invalidArgument, RpcError, toServiceError } from './status.js';

/** Items of one stream committed together: one enqueue (one durable commit) per run of a batch. */
export const PUT_BATCH_ITEMS_MAX = 8_192;
/** Items received and not yet committed past which the stream is no longer read (backpressure). */
const PENDING_ITEMS_MAX = 4 * PUT_BATCH_ITEMS_MAX;
/** Longest URL accepted, in UTF-8 bytes: the library's limit on a key. */
const URL_BYTES_MAX = 64 * 1024;
const SECONDS_TO_MS = 1_000;

/** What a put stream tells its service: for the log and the metrics. */
export interface PutStreamHooks<Ack> {
  /** Hears once per stream of each crawl ID whose items are SKIPPED because it cannot be a crawl. */
  readonly onUnusableCrawl: (crawlID: string, message: string) => void;
  /** The acks of one commit, written; `startNs` (process.hrtime.bigint()) when it began. */
  readonly onAcks: (acks: readonly Ack[], startNs: bigint) => void;
}

/** One item of a batch, checked: what to do with it and which ack it gets. */
interface PutEntry {
  readonly ackId: string;
  readonly crawlID: string;
  readonly kind: 'discovered' | 'known';
  readonly url: string;
  /** The queue the client named; '' for the crawl's own queue key of the URL. */
  readonly key: string;
  readonly metadata: Record<string, { readonly values: readonly string[] }> | undefined;
  /** Known items: when to fetch again, ms since the Unix epoch; 0 finishes the URL. */
  readonly atMs: number;
}

type Checked = PutEntry | { readonly ackId: string; readonly skipped: string };

/**
 * PutURLs: a stream of URL items, one ack per item once what it asked for is durable. A
 * discovered item is enqueue-if-new (exactly-once discovery: a URL seen before, or a duplicate in
 * the stream, is acked OK and queued once); a known item is scheduled for its
 * refetchable_from_date, or finished when that is 0. An item that can never succeed (no URL, no
 * queue derivable, too long, a bad time, an unusable crawl ID) is acked SKIPPED; one the store failed to write is acked
 * FAIL (the client may send it again). A message that does not decode ends the stream with
 * INVALID_ARGUMENT after the acks of everything before it.
 */
export class PutUrlsStream {
  readonly #call: ServerDuplexStream<UrlItem | MalformedMessage, AckMessage>;
  readonly #crawls: Crawls;
  #pending: UrlItem[] = [];
  #running: Promise<void> | undefined;
  #ended = false;
  #malformed: string | undefined;
  #cancelled = false;

  readonly #hooks: PutStreamHooks<AckMessage>;
  readonly #warned = new Set<string>();

  constructor(
    call: ServerDuplexStream<UrlItem | MalformedMessage, AckMessage>,
    crawls: Crawls,
    hooks: PutStreamHooks<AckMessage>,
  ) {
    this.#call = call;
    this.#crawls = crawls;
    this.#hooks = hooks;
    call.on('data', (item: UrlItem | MalformedMessage) => this.#receive(item));
    call.on('end', () => {
      this.#ended = true;
      this.#kick();
    });
    call.on('cancelled', () => {
      this.#cancelled = true;
    });
    call.on('error', () => {
      this.#cancelled = true;
    });
  }

  #receive(item: UrlItem | MalformedMessage): void {
    if (this.#malformed !== undefined) return;
    if (isMalformed(item)) {
      this.#malformed = item.malformed;
      this.#ended = true;
    } else {
      this.#pending.push(item);
      if (this.#pending.length >= PENDING_ITEMS_MAX) this.#call.pause();
    }
    this.#kick();
  }

  /** Starts committing on the next turn, so that the items that arrived in this one join the batch. */
  #kick(): void {
    if (this.#running !== undefined) return;
    this.#running = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#drain())
      .finally(() => {
        this.#running = undefined;
        // A cancelled call gets no more acks: what it left pending is dropped (never acknowledged).
        if (this.#cancelled) this.#pending = [];
        else if (this.#pending.length > 0 || (this.#ended && !this.#call.writableEnded)) this.#kick();
      });
  }

  async #drain(): Promise<void> {
    while (this.#pending.length > 0 && !this.#cancelled) {
      const batch =
        this.#pending.length <= PUT_BATCH_ITEMS_MAX ? this.#pending : this.#pending.slice(0, PUT_BATCH_ITEMS_MAX);
      this.#pending = batch === this.#pending ? [] : this.#pending.slice(PUT_BATCH_ITEMS_MAX);
      if (this.#call.isPaused() && this.#pending.length < PENDING_ITEMS_MAX) this.#call.resume();
      const startNs = process.hrtime.bigint();
      const acks = await this.#commit(batch);
      for (const ack of acks) this.#call.write(ack);
      this.#hooks.onAcks(acks, startNs);
    }
    if (!this.#ended || this.#call.writableEnded || this.#cancelled) return;
    if (this.#malformed !== undefined) this.#call.emit('error', toServiceError(invalidArgument(this.#malformed)));
    else this.#call.end();
  }

  /** The batch's acks in item order, each given once its run is durable. */
  async #commit(batch: readonly UrlItem[]): Promise<AckMessage[]> {
    const checked = batch.map(checkItem);
    const acks: AckMessage[] = checked.map((entry) => ({
      ID: entry.ackId,
      status: 'skipped' in entry ? 'SKIPPED' : 'OK',
    }));
    // Runs of one crawl and one kind, in stream order: a URL discovered then known in one batch ends known.
    let start = 0;
    while (start < checked.length) {
      const first = checked[start]!;
      let end = start + 1;
      if (!('skipped' in first)) {
        while (end < checked.length && sameRun(first, checked[end]!)) end++;
        const statuses = await this.#run(checked.slice(start, end) as PutEntry[]);
        for (let i = 0; i < statuses.length; i++) acks[start + i] = { ID: acks[start + i]!.ID, status: statuses[i]! };
      }
      start = end;
    }
    return acks;
  }

  /** One run, atomically; a run the library refuses as bad input is retried item by item, so that only the bad items are SKIPPED. */
  async #run(run: readonly PutEntry[]): Promise<AckMessage['status'][]> {
    try {
      await this.#write(run);
      return run.map(() => 'OK');
    } catch (error) {
      // A crawl ID that cannot be a scope name fails the whole run, which is all of that crawl.
      if (error instanceof RpcError) {
        const crawlID = run[0]!.crawlID;
        if (!this.#warned.has(crawlID)) {
          this.#warned.add(crawlID);
          this.#hooks.onUnusableCrawl(crawlID, error.message);
        }
        return run.map(() => 'SKIPPED');
      }
      if (!isBadInput(error)) return run.map(() => 'FAIL');
      if (run.length === 1) return ['SKIPPED'];
      const statuses: AckMessage['status'][] = [];
      for (const entry of run) statuses.push(...(await this.#run([entry])));
      return statuses;
    }
  }

  async #write(run: readonly PutEntry[]): Promise<void> {
    const { crawlID, kind } = run[0]!;
    const scope = await this.#crawls.scope(crawlID);
    const mode = await this.#crawls.queueKeyMode(crawlID);
    const urls = run.map((entry) => entry.url);
    const queues = run.map((entry) => (entry.key === '' ? queueKeyOf(entry.url, mode)! : entry.key));
    const withData = run.some((entry) => entry.metadata !== undefined);
    const data = withData
      ? run.map((entry) => (entry.metadata === undefined ? null : { metadata: entry.metadata }))
      : undefined;
    if (kind === 'discovered') await scope.enqueue(urls, { queues, ...(data === undefined ? {} : { data }) });
    else
      await scope.frontier().schedule(
        urls,
        run.map((entry) => entry.atMs),
        { queues, ...(data === undefined ? {} : { data }) },
      );
  }
}

function sameRun(a: PutEntry, b: Checked): boolean {
  return !('skipped' in b) && b.kind === a.kind && b.crawlID === a.crawlID;
}

export function isBadInput(error: unknown): boolean {
  return error instanceof SeenStoreError && (error.code === 'USAGE' || error.code === 'INVALID_URL');
}

/**
 * Why a URLInfo can never be queued (its item is SKIPPED), or undefined: no URL, too long, a
 * control character in it (U+0000-U+001F, U+007F), a key too long, or no key and no host to
 * derive one from (the reference service skips it too).
 */
export function infoSkipReason(info: UrlInfo): string | undefined {
  const url = info.url;
  if (url === '') return 'no URL';
  if (url.length > URL_BYTES_MAX || Buffer.byteLength(url) > URL_BYTES_MAX) return 'URL too long';
  if (holdsControlString(url, 0, url.length)) return 'a control character in the URL';
  if (info.key.length > MAX_QUEUE_KEY_LENGTH) return 'key too long';
  if (info.key === '' && queueKeyOf(url, 'host') === undefined) return 'no host to derive a queue from';
  return undefined;
}

/** What an item asks, or why it is SKIPPED. Queue keys are derived later, with the crawl's queue-key mode. */
function checkItem(item: UrlItem): Checked {
  const kind = item.item;
  const body = kind === 'discovered' ? item.discovered : kind === 'known' ? item.known : undefined;
  const info = body?.info ?? null;
  const url = info?.url ?? '';
  const ackId = item.ID === '' ? url : item.ID;
  if (kind === undefined || info === null) return { ackId, skipped: 'neither discovered nor known, or no URLInfo' };
  const skipped = infoSkipReason(info);
  if (skipped !== undefined) return { ackId, skipped };
  const refetchS = kind === 'known' ? item.known!.refetchable_from_date : 0;
  if (!Number.isSafeInteger(refetchS * SECONDS_TO_MS)) return { ackId, skipped: 'refetchable_from_date out of range' };
  const metadata = Object.keys(info.metadata).length === 0 ? undefined : info.metadata;
  return { ackId, crawlID: info.crawlID, kind, url, key: info.key, metadata, atMs: refetchS * SECONDS_TO_MS };
}
