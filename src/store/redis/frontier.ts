import { assert } from '../../errors.js';
import {
  queueKeyFixedError,
  type Frontier,
  type FrontierSettings,
  type FrontierStats,
  type LeasedUrl,
  type QueueChange,
  type QueueItems,
  type QueueStats,
  type TakeRequest,
  type UrlStatus,
  type EntryPage,
} from '../backend.js';
import type { Reply } from './connection.js';
import { list, pairs, type RedisContext } from './context.js';
import { callParts, distinctRuns, itemBytes } from './call-parts.js';
import { drainInboxes, oldFrontierError } from './inbox.js';
import { QUEUE_PARTITIONS } from './queue-partition.js';
import { ID_PATTERN, parseFrontierId, queueStats } from './frontier-records.js';
import { FrontierPartitions, ITEMS_PER_CALL, range } from './frontier-partitions.js';
import { entryPage, findEntries, forEachQueuedUrl, listQueues, urlStatusOf } from './frontier-reads.js';
import { inboxCount, parseFrontierSettings, readFrontierSettings, type Settings } from './frontier-settings.js';
import { takeUrls } from './frontier-take.js';
import {
  admitEntries,
  clearQueues,
  purgeIds,
  configureFrontier,
  pinFrontierQueueKey,
  deleteQueueEntries,
  finishIds,
  forgetUrls,
  queueCounts,
  queueState,
  reclaimOwner,
  releaseIds,
  scheduleUrls,
  setQueueState,
  type ScheduledUrl,
} from './queue-functions.js';

/**
 * The Redis backend's frontier of one scope (docs/redis.md "Frontier"). Adds queue their new URLs
 * into their partition's inbox in the same call that finds them new; the frontier moves them into
 * the partition of their queue key (drainInboxes) before any call that reads or takes queues. A
 * queue lives wholly in one slot, with its politeness state: every change of it is one call of
 * the function library (lua/queue-*.lua), and a take's gate is checked inside that call.
 */
export class RedisFrontier implements Frontier {
  readonly #ctx: RedisContext;
  readonly #scope: string;
  /** Its calls on the queue partitions: keys, routing, answered writes (frontier-partitions.ts). */
  readonly #p: FrontierPartitions;
  #layoutChecked = false;

  constructor(ctx: RedisContext, scope: string) {
    this.#ctx = ctx;
    this.#scope = scope;
    this.#p = new FrontierPartitions(ctx, scope);
  }

  /** Records the taker as an owner and moves the inboxes into the queues, then takes (frontier-take.ts). */
  async take(request: TakeRequest): Promise<LeasedUrl[]> {
    const owners = this.#ctx.keys.owners(this.#scope);
    const [s] = await Promise.all([
      this.#prepared(),
      request.owner === undefined
        ? undefined
        : this.#ctx.call(
            owners,
            ['HSET', owners, request.owner, String(this.#ctx.now())],
            this.#p.doing('recording an owner of'),
          ),
    ]);
    return takeUrls(this.#p, s, request);
  }

  async done(ids: readonly string[], refetchAtMs?: readonly number[], failed = false): Promise<number> {
    const s = await this.#settings();
    return this.#eachPart(ids, s, (i, part) =>
      this.#p.answered(i, (answer) =>
        finishIds(
          this.#ctx,
          this.#p.keys(i),
          answer,
          s,
          part.map(({ id }) => id),
          part.map(({ index }) => refetchAtMs?.[index] ?? 0),
          failed,
          this.#p.doing('finishing URLs of'),
        ),
      ),
    );
  }

  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    assert(
      data === undefined || data.length === ids.length,
      'release: one payload per id (ScopeFrontier.release checks)',
    );
    const s = await this.#settings();
    const payloads = ids.map((_, index) => (data?.[index] === undefined ? '' : (JSON.stringify(data[index]) ?? '')));
    return this.#eachPart(
      ids,
      s,
      (i, part) =>
        this.#p.answered(i, (answer) =>
          releaseIds(
            this.#ctx,
            this.#p.keys(i),
            answer,
            s,
            part.map(({ id }) => id),
            part.map(({ index }) => payloads[index]!),
            this.#p.doing('releasing URLs of'),
          ),
        ),
      (index) => itemBytes(payloads[index]!),
    );
  }

  /**
   * `ids` (every one checked first) by partition, in calls of at most ITEMS_PER_CALL ids and
   * CALL_BYTES_MAX bytes (`bytesOf(index)`: what id `index` carries besides itself); the sum of
   * what the calls answered.
   */
  async #eachPart(
    ids: readonly string[],
    s: Settings,
    call: (i: number, part: { id: string; index: number }[]) => Promise<Reply>,
    bytesOf: (index: number) => number = () => 0,
  ): Promise<number> {
    const byPartition = new Map<number, { id: string; index: number }[]>();
    ids.forEach((id, index) => {
      const parsed = parseFrontierId(id);
      byPartition.set(parsed.partition, [...(byPartition.get(parsed.partition) ?? []), { id: parsed.entry, index }]);
    });
    let total = 0;
    for (const [i, entries] of byPartition) {
      if (i >= s.partitions) continue;
      for (const { from, to } of callParts(
        entries.length,
        (n) => entries[n]!.id.length + bytesOf(entries[n]!.index),
        ITEMS_PER_CALL,
      )) {
        total += Number(await call(i, entries.slice(from, to)));
      }
    }
    return total;
  }

  async reclaim(owner: string): Promise<number> {
    const s = await this.#settings();
    const counts = await Promise.all(
      range(s.partitions).map((i) =>
        this.#p.answered(i, (answer) =>
          reclaimOwner(this.#ctx, this.#p.keys(i), answer, s, owner, this.#p.doing('reclaiming leases of')),
        ),
      ),
    );
    return counts.reduce((sum: number, n) => sum + Number(n), 0);
  }

  /**
   * Known URLs: each goes to its queue's partition. A URL queued in another partition (its queue
   * key changed) is removed there first, then scheduled anew: two calls, the one place where a
   * crash between them can drop a URL from the frontier (it stays seen). In order: a URL named
   * twice in one schedule sees where its first mention left it (distinctRuns).
   */
  async schedule(items: QueueItems, atMs: readonly number[]): Promise<number> {
    let waiting = 0;
    for (const { from, to } of distinctRuns(items.urls)) {
      const run = {
        urls: items.urls.slice(from, to),
        queues: items.queues.slice(from, to),
        ...(items.data === undefined ? {} : { data: items.data.slice(from, to) }),
      };
      waiting += await this.#scheduleDistinct(run, atMs.slice(from, to));
    }
    return waiting;
  }

  async #scheduleDistinct(items: QueueItems, atMs: readonly number[]): Promise<number> {
    const s = await this.#prepared();
    const found = await findEntries(this.#p, items.urls, s);
    const byPartition = new Map<number, ScheduledUrl[]>();
    const moving = new Map<number, string[]>();
    items.urls.forEach((url, n) => {
      const where = found[n];
      const home = this.#p.route(items.queues[n]!, s);
      const data = items.data?.[n] === undefined ? '' : (JSON.stringify(items.data[n]) ?? '');
      if (atMs[n] === 0 && where === undefined) return;
      const target = atMs[n] === 0 ? where!.partition : home;
      if (where !== undefined && where.partition !== target)
        moving.set(where.partition, [...(moving.get(where.partition) ?? []), url]);
      const keep = where !== undefined && where.partition !== target && data === '' ? (where.entry.d ?? '') : data;
      byPartition.set(target, [
        ...(byPartition.get(target) ?? []),
        { url, queue: items.queues[n]!, atMs: atMs[n]!, data: keep },
      ]);
    });
    await Promise.all(
      [...moving].map(([i, urls]) => forgetUrls(this.#ctx, this.#p.keys(i), s, urls, this.#p.doing('moving URLs of'))),
    );
    let waiting = 0;
    for (const [i, part] of byPartition) {
      for (const { from, to } of callParts(
        part.length,
        (n) => itemBytes(part[n]!.url, part[n]!.queue, part[n]!.data),
        ITEMS_PER_CALL,
      )) {
        waiting += Number(
          await this.#p.answered(i, (answer) =>
            scheduleUrls(
              this.#ctx,
              this.#p.keys(i),
              answer,
              s,
              part.slice(from, to),
              this.#p.doing('scheduling URLs of'),
            ),
          ),
        );
      }
    }
    return waiting;
  }

  async urlStatus(url: string): Promise<UrlStatus | undefined> {
    return urlStatusOf(this.#p, await this.#prepared(), url);
  }

  async settings(): Promise<FrontierSettings> {
    const { queueKey, delayMs, maxInFlightPerQueue } = await this.#settings();
    return { queueKey, delayMs, maxInFlightPerQueue };
  }

  async pinnedSettings(): Promise<FrontierSettings> {
    const key = this.#ctx.keys.frontier(this.#scope);
    const { queueKey, delayMs, maxInFlightPerQueue } = parseFrontierSettings(
      this.#p,
      pairs(await pinFrontierQueueKey(this.#ctx, key, this.#p.doing('reading the settings of'))),
    );
    return { queueKey, delayMs, maxInFlightPerQueue };
  }

  async configure(change: Partial<FrontierSettings>): Promise<FrontierSettings> {
    const s = await this.#settings();
    // A frontier from before pinning has queued URLs without pinning its key: refused here. A pinned key is refused by the function, atomically (below).
    if (change.queueKey !== undefined && change.queueKey !== s.queueKey && (await this.#everQueued(s)))
      throw queueKeyFixedError(s.queueKey);
    const fields: [string, string][] = [];
    if (change.queueKey !== undefined) fields.push(['queueKey', change.queueKey]);
    if (change.delayMs !== undefined) fields.push(['delayMs', String(change.delayMs)]);
    if (change.maxInFlightPerQueue !== undefined)
      fields.push(['maxInFlightPerQueue', String(change.maxInFlightPerQueue)]);
    const reply = await configureFrontier(
      this.#ctx,
      this.#ctx.keys.frontier(this.#scope),
      QUEUE_PARTITIONS,
      fields,
      this.#p.doing('configuring'),
    );
    const { queueKey, delayMs, maxInFlightPerQueue } = parseFrontierSettings(this.#p, pairs(reply));
    if (change.queueKey !== undefined && change.queueKey !== queueKey) throw queueKeyFixedError(queueKey);
    return { queueKey, delayMs, maxInFlightPerQueue };
  }

  /** Whether any URL was ever queued: an inbox or a queue partition exists. */
  async #everQueued(s: Settings): Promise<boolean> {
    const inboxes = await inboxCount(this.#p);
    const keys = [
      ...range(inboxes).map((p) => this.#ctx.keys.inbox(this.#scope, p)),
      ...range(s.partitions).map((i) => this.#p.keys(i).state[0]!),
    ];
    const found = await Promise.all(keys.map((key) => this.#ctx.call(key, ['EXISTS', key], this.#p.doing('reading'))));
    return found.some((n) => Number(n) > 0);
  }

  async setQueue(key: string, change: QueueChange): Promise<void> {
    const s = await this.#settings();
    const i = this.#p.route(key, s);
    await setQueueState(this.#ctx, this.#p.keys(i), s, key, change, this.#p.doing('changing a queue of'));
  }

  async queues(options: { readonly after?: string; readonly limit: number }): Promise<QueueStats[]> {
    return listQueues(this.#p, await this.#prepared(), options);
  }

  async queue(key: string): Promise<QueueStats | undefined> {
    const s = await this.#prepared();
    const reply = list(
      await queueState(this.#ctx, this.#p.keys(this.#p.route(key, s)), s, key, this.#p.doing('reading a queue of')),
    );
    return reply.length === 0 ? undefined : queueStats(key, reply);
  }

  async deleteQueue(key: string): Promise<number> {
    const s = await this.#prepared();
    return Number(
      await deleteQueueEntries(
        this.#ctx,
        this.#p.keys(this.#p.route(key, s)),
        s,
        key,
        this.#p.doing('deleting a queue of'),
      ),
    );
  }

  async clear(options: { readonly completed?: boolean } = {}): Promise<number> {
    const s = await this.#prepared();
    const counts = await Promise.all(
      range(s.partitions).map((i) =>
        clearQueues(this.#ctx, this.#p.keys(i), s, options.completed === true, this.#p.doing('clearing')),
      ),
    );
    return counts.reduce((sum: number, n) => sum + Number(n), 0);
  }

  async owners(sinceMs: number): Promise<string[]> {
    const key = this.#ctx.keys.owners(this.#scope);
    const all = pairs(await this.#ctx.call(key, ['HGETALL', key], this.#p.doing('reading the owners of')));
    return [...all].filter(([, lastMs]) => Number(lastMs) >= sinceMs).map(([owner]) => owner);
  }

  async stats(): Promise<FrontierStats> {
    const s = await this.#prepared();
    const all = await Promise.all(
      range(s.partitions).map(async (i) =>
        list(await queueCounts(this.#ctx, this.#p.keys(i), s, this.#p.doing('reading'))).map(Number),
      ),
    );
    const sum = (at: number) => all.reduce((total, counts) => total + (counts[at] ?? 0), 0);
    return { pending: sum(0) - sum(1), leased: sum(1), done: sum(2), failed: sum(4), queues: sum(3) };
  }

  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    return forEachQueuedUrl(this.#p, await this.#prepared(), onBatch);
  }

  async entries(options: {
    readonly cursor?: string;
    readonly limit: number;
    readonly queue?: string;
  }): Promise<EntryPage> {
    return entryPage(this.#p, await this.#prepared(), options);
  }

  async purge(ids: readonly string[], beforeMs: number): Promise<number> {
    const s = await this.#prepared();
    const byPartition = new Map<number, string[]>();
    for (const id of ids) {
      const match = ID_PATTERN.exec(id);
      if (match === null) continue;
      const part = byPartition.get(Number(match[1])) ?? [];
      part.push(match[2]!);
      byPartition.set(Number(match[1]), part);
    }
    let n = 0;
    for (const [i, part] of byPartition) {
      if (i >= s.partitions) continue;
      for (let from = 0; from < part.length; from += ITEMS_PER_CALL) {
        n += Number(
          await purgeIds(
            this.#ctx,
            this.#p.keys(i),
            s,
            beforeMs,
            part.slice(from, from + ITEMS_PER_CALL),
            this.#p.doing('purging'),
          ),
        );
      }
    }
    return n;
  }

  /** The settings, with the inboxes moved into the queues (before anything reads or takes queues); a frontier of layout 1 is refused. */
  async #prepared(): Promise<Settings> {
    let [s, inboxes] = await Promise.all([this.#settings(), inboxCount(this.#p)]);
    if (!this.#layoutChecked) {
      const old = await Promise.all(
        range(inboxes).map((p) =>
          this.#ctx.call(
            this.#ctx.keys.oldStream(this.#scope, p),
            ['EXISTS', this.#ctx.keys.oldStream(this.#scope, p)],
            this.#p.doing('reading'),
          ),
        ),
      );
      if (old.some((n) => Number(n) > 0)) throw oldFrontierError(this.#scope);
      // The partitions are pinned before the first URL moves into them, so a later release's default never remaps a queue.
      if (s.rev === '0')
        s = parseFrontierSettings(
          this.#p,
          pairs(
            await configureFrontier(
              this.#ctx,
              this.#ctx.keys.frontier(this.#scope),
              QUEUE_PARTITIONS,
              [],
              this.#p.doing('creating'),
            ),
          ),
        );
      this.#layoutChecked = true;
    }
    await drainInboxes(
      this.#ctx,
      this.#scope,
      inboxes,
      (queue) => this.#p.route(queue, s),
      (i, entries) => admitEntries(this.#ctx, this.#p.keys(i), s, entries, this.#p.doing('queuing new URLs of')),
      (i) => this.#ctx.onAReplica(this.#p.keys(i).state[0]!, this.#p.doing('queuing new URLs of')),
    );
    return s;
  }

  async #settings(): Promise<Settings> {
    return readFrontierSettings(this.#p);
  }
}
