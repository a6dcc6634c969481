import { SeenStoreError } from '../../errors.js';
import type { QueueItems } from '../backend.js';
import { faultPoint } from '../faults.js';
import { list, text, type RedisContext } from './context.js';
import { callParts, itemBytes } from './call-parts.js';
import type { Reply } from './connection.js';
import type { InboxEntry } from './queue-functions.js';

/** The version of the inbox entries this seenstore writes and reads (field `v`; INBOX_VERSION in lua/inbox.lua). */
const INBOX_VERSION = '2';
/** Inbox entries moved per XRANGE page: bounds a move's arguments and its time in Redis. */
const INBOX_PAGE_ENTRIES = 2_000;

/**
 * Queue items `indices` of a batch as ss_add reads them (queue_items in lua/inbox.lua): per item,
 * its place (the handle's batch number `batchSeq`, then its index in the batch, two u32
 * little-endian), a u32 byte length and the URL (UTF-8), the same for its queue key, and for its
 * data as JSON (length 0: none). An add sends the items of exactly the URLs it sends, in the same
 * order.
 */
export function encodeQueueItems(items: QueueItems, indices: readonly number[], batchSeq: number): Buffer {
  const json = indices.map((i) => (items.data?.[i] === undefined ? '' : (JSON.stringify(items.data[i]) ?? '')));
  let bytes = 0;
  for (const [j, i] of indices.entries())
    bytes +=
      20 +
      Buffer.byteLength(items.urls[i]!, 'utf8') +
      Buffer.byteLength(items.queues[i]!, 'utf8') +
      Buffer.byteLength(json[j]!, 'utf8');
  const out = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const [j, i] of indices.entries()) {
    out.writeUInt32LE(batchSeq, at);
    out.writeUInt32LE(i, at + 4);
    at = putString(out, at + 8, items.urls[i]!);
    at = putString(out, at, items.queues[i]!);
    at = putString(out, at, json[j]!);
  }
  return out;
}

function putString(out: Buffer, at: number, value: string): number {
  const length = out.write(value, at + 4, 'utf8');
  out.writeUInt32LE(length, at);
  return at + 4 + length;
}

/** The refusal of a scope whose frontier has the key layout before queues (docs/redis.md "Frontier"). */
export function oldFrontierError(scope: string): SeenStoreError {
  return new SeenStoreError(
    'FORMAT_UNSUPPORTED',
    `the frontier of scope ${scope} has the Redis key layout 1 (one stream per partition, before per-host queues): this seenstore neither reads nor migrates it; finish or clear it with the release that wrote it (docs/redis.md "Frontier")`,
  );
}

/**
 * Moves every entry of the scope's `inboxes` inboxes into its queue's partition, a page of each
 * inbox at a time: the entries are grouped by `route(queue key)` and handed to `admit` (each
 * partition admits an entry once, by the inbox id it last admitted from that inbox), then deleted
 * from their inboxes once `replicated(partition)` says a replica of the partition's master has
 * them. Movers may race and crash anywhere: an entry is admitted exactly once, and leaves its
 * inbox only after it was. Entries whose admission no replica confirmed stay in their inbox (the
 * next move admits nothing twice), and the move stops there. The URLs of one add, spread over
 * inboxes whose masters stamped them a millisecond apart, are all due at the earliest of their
 * times and keep their order in the add.
 */
export async function drainInboxes(
  ctx: RedisContext,
  scope: string,
  inboxes: number,
  route: (queue: string) => number,
  admit: (partition: number, entries: readonly InboxEntry[]) => Promise<unknown>,
  replicated: (partition: number) => Promise<boolean>,
): Promise<void> {
  const keys = Array.from({ length: inboxes }, (_, p) => ctx.keys.inbox(scope, p));
  for (let full = true; full; ) {
    const pages = await Promise.all(
      keys.map(async (key) =>
        list(
          await ctx.call(
            key,
            ['XRANGE', key, '-', '+', 'COUNT', String(INBOX_PAGE_ENTRIES)],
            `reading the inbox of ${scope}'s frontier`,
          ),
        ),
      ),
    );
    full = pages.some((page) => page.length >= INBOX_PAGE_ENTRIES);
    const read = pages.map((page, p) => page.map((entry) => inboxEntry(list(entry), p, scope)));
    if (read.every((entries) => entries.length === 0)) return;
    const batchDueMs = new Map<string, number>();
    for (const entry of read.flat())
      batchDueMs.set(entry.batch, Math.min(batchDueMs.get(entry.batch) ?? Infinity, entry.dueMs));
    const byPartition = new Map<number, InboxEntry[]>();
    for (const entry of mergedByDue(
      read.map((entries) => entries.map((e) => ({ ...e, dueMs: batchDueMs.get(e.batch)! }))),
    )) {
      const i = route(entry.queue);
      const part = byPartition.get(i);
      if (part === undefined) byPartition.set(i, [entry]);
      else part.push(entry);
    }
    // Each partition's entries (each inbox's in inbox order), in calls of bounded size
    // (call-parts.ts); then whether a replica of its master has them.
    const confirmed = new Map<number, boolean>();
    await Promise.all(
      [...byPartition].map(async ([i, entries]) => {
        for (const { from, to } of callParts(
          entries.length,
          (n) => itemBytes(entries[n]!.url, entries[n]!.queue, entries[n]!.data),
          INBOX_PAGE_ENTRIES,
        ))
          await admit(i, entries.slice(from, to));
        confirmed.set(i, await replicated(i));
      }),
    );
    faultPoint('frontier:inbox-admitted');
    // Entries of an unconfirmed partition stay in their inbox.
    const moved = read.map((entries) => entries.filter((entry) => confirmed.get(route(entry.queue))));
    await Promise.all(
      moved.map((entries, p) =>
        entries.length === 0
          ? undefined
          : ctx.call(
              keys[p]!,
              ['XDEL', keys[p]!, ...entries.map((entry) => entry.id)],
              `moving the inbox of ${scope}'s frontier`,
            ),
      ),
    );
    if ([...confirmed.values()].includes(false)) return;
  }
}

/**
 * The inboxes' entries as one sequence, oldest add first (due time, then place), each inbox's
 * entries in their inbox order (a partition admits an inbox's entries only in that order: its
 * mark). Within an inbox the adds are in time order already, so the result is in due order but
 * for adds stamped out of order by different masters' clocks: a queue's FIFO then appends its
 * URLs in order (lua/queue-state.lua), where reading inbox after inbox made it merge every call.
 */
function mergedByDue(inboxes: readonly InboxEntry[][]): InboxEntry[] {
  const heads = inboxes.map(() => 0);
  const first = (p: number): InboxEntry => inboxes[p]![heads[p]!]!;
  const earlier = (a: number, b: number): boolean =>
    first(a).dueMs < first(b).dueMs ||
    (first(a).dueMs === first(b).dueMs &&
      (first(a).place < first(b).place || (first(a).place === first(b).place && a < b)));
  // A binary heap of the inboxes that have entries left, by their first entry.
  const heap = inboxes.flatMap((entries, p) => (entries.length > 0 ? [p] : []));
  const down = (at: number): void => {
    for (;;) {
      let least = at;
      for (const child of [2 * at + 1, 2 * at + 2])
        if (child < heap.length && earlier(heap[child]!, heap[least]!)) least = child;
      if (least === at) return;
      [heap[at], heap[least]] = [heap[least]!, heap[at]!];
      at = least;
    }
  };
  for (let at = Math.floor(heap.length / 2) - 1; at >= 0; at--) down(at);
  const out: InboxEntry[] = [];
  while (heap.length > 0) {
    const p = heap[0]!;
    out.push(first(p));
    heads[p] = heads[p]! + 1;
    if (heads[p]! >= inboxes[p]!.length) {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    if (heap.length > 0) down(0);
  }
  return out;
}

/** Inbox p's entry [id, [field, value, ...]], checked right after reading. */
function inboxEntry(entry: Reply[], source: number, scope: string): InboxEntry {
  const id = text(entry[0]);
  const fields = new Map<string, string>();
  const flat = list(entry[1]);
  for (let f = 0; f + 1 < flat.length; f += 2) fields.set(text(flat[f]), text(flat[f + 1]));
  const version = fields.get('v') ?? '';
  const where = `the inbox of ${scope}'s frontier, entry ${id}`;
  if (version !== INBOX_VERSION) {
    const newer = /^[0-9]+$/.test(version) && Number(version) > Number(INBOX_VERSION);
    throw new SeenStoreError(
      newer ? 'FORMAT_UNSUPPORTED' : 'STORE_CORRUPT',
      `${where}: ${newer ? `of entry version ${version}, newer than this seenstore's` : 'not an entry seenstore wrote'}`,
    );
  }
  const [url, queue, epoch, batch, place] = ['u', 'k', 'e', 'b', 'n'].map((name) => fields.get(name));
  if (
    url === undefined ||
    url === '' ||
    queue === undefined ||
    batch === undefined ||
    !/^[1-9][0-9]*$/.test(epoch ?? '') ||
    !/^[0-9]+$/.test(place ?? '')
  ) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: no URL, queue, epoch or place in its add`);
  }
  return {
    source,
    id,
    url,
    queue,
    epoch: epoch!,
    batch,
    place: Number(place),
    dueMs: Number(id.split('-')[0]),
    data: fields.get('d') ?? '',
  };
}
