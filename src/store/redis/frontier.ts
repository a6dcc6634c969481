import { SeenStoreError, assert } from '../../errors.js';
import {
  DEFAULT_FRONTIER_SETTINGS,
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
  type FrontierEntry,
} from '../backend.js';
import { faultPoint } from '../faults.js';
import { compareKeys } from '../politeness.js';
import { QUEUE_KEY_MODES, type QueueKeyMode } from '../../url/queue-key.js';
import type { Reply } from './connection.js';
import { freshId, list, pairs, text, type RedisContext } from './context.js';
import { callParts, distinctRuns, itemBytes } from './call-parts.js';
import { drainInboxes, oldFrontierError } from './inbox.js';
import type { QueuePartitionKeys } from './keys.js';
import { QUEUE_PARTITIONS, queuePartitionOf } from './queue-partition.js';
import { pickQueues, type Candidate } from './queue-picks.js';
import {
  ID_PATTERN,
  layout2Error,
  parseFrontierId,
  queueStats,
  readStoredEntry,
  scannedEntries,
  type FoundEntry,
} from './frontier-records.js';
import {
  admitEntries,
  clearQueues,
  purgeIds,
  configureFrontier,
  pinFrontierQueueKey,
  deleteQueueEntries,
  findUrls,
  finishIds,
  forgetUrls,
  listQueueStates,
  queueCounts,
  queueState,
  readyQueues,
  reclaimOwner,
  releaseIds,
  scanEntries,
  scheduleUrls,
  setQueueState,
  takeQueues,
  type AnswerArgs,
  type QueueSettingsArgs,
  type ScheduledUrl,
} from './queue-functions.js';

/** Seconds a frontier call's answer stays for a retry of the same call (deleted by the handle's next call on that partition). */
export const FRONTIER_ANSWER_TTL_S = 300;
/** Most inboxes a scope may have (`{PREFIX/SCOPE}:queues`). */
export const MAX_INBOXES = 65_536;
/** The frontier key layout this seenstore writes (`layout` in the settings): 3, compact queues; 2 was a JSON record per entry, 1 one stream per partition. */
const FRONTIER_LAYOUT = '3';
/** Most ids or URLs one call sends to one partition. */
const ITEMS_PER_CALL = 10_000;
/** Most rounds of one take (a round reads ready queues, then takes them; racing takers may leave it short). */
const MAX_TAKE_ROUNDS = 16;
/** Most ready queues read from one partition per round. */
const CANDIDATES_PER_PARTITION = 1_000;
/** Entry pages read per HSCAN page of forEachUrl (lua/queue-codec.lua: up to ENTRIES_PER_PAGE entries each). */
const SCAN_PAGES = 300;
/** Entry numbers per page of a partition's entries (PAGE_ENTRIES in lua/queue-codec.lua). */
const ENTRIES_PER_PAGE = 32;

interface Settings extends FrontierSettings, QueueSettingsArgs {
  readonly partitions: number;
}

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
  /** Per partition, the answer key of this handle's last call there (deleted by the next). */
  readonly #previous = new Map<number, string>();
  readonly #words = new Uint32Array(2);
  #layoutChecked = false;

  constructor(ctx: RedisContext, scope: string) {
    this.#ctx = ctx;
    this.#scope = scope;
  }

  /**
   * Reads the ready queues of every partition (or of the requested queue's), picks queues across
   * them oldest ready first (queue-picks.ts), and takes them, each partition's picks in one call
   * that checks their gates again; racing takers leave a round short, and the next round picks
   * among the queues still ready.
   */
  async take(request: TakeRequest): Promise<LeasedUrl[]> {
    const owners = this.#ctx.keys.owners(this.#scope);
    const [s] = await Promise.all([
      this.#prepared(),
      request.owner === undefined
        ? undefined
        : this.#ctx.call(
            owners,
            ['HSET', owners, request.owner, String(this.#ctx.now())],
            this.#doing('recording an owner of'),
          ),
    ]);
    const partitions = request.queue === undefined ? range(s.partitions) : [this.#route(request.queue, s)];
    const out: LeasedUrl[] = [];
    const tried = new Set<string>();
    const skipped = new Map<number, number>();
    let queuesOut = 0;
    for (let round = 0; round < MAX_TAKE_ROUNDS && out.length < request.count; round++) {
      const limit = candidateLimit(request, partitions.length);
      const read = await Promise.all(
        partitions.map((i) =>
          this.#candidates(i, s, skipped.get(i) ?? 0, limit, request.queue === undefined ? '' : `=${request.queue}`),
        ),
      );
      const more = read.some((found) => found.length >= limit);
      const picked = pickQueues(read.flat(), request, out.length, queuesOut, tried, skipped);
      if (picked.size === 0) {
        if (!more) break;
        continue;
      }
      const taken = await Promise.all([...picked].map(([i, picks]) => this.#takeFrom(i, s, request, picks)));
      const byQueue = new Map<string, LeasedUrl[]>();
      for (const entry of taken.flat()) byQueue.set(entry.queue, [...(byQueue.get(entry.queue) ?? []), entry]);
      const order = [...picked.values()].flat().sort((a, b) => a.order - b.order);
      for (const pick of order) {
        tried.add(pick.key);
        const leased = byQueue.get(pick.key);
        if (leased === undefined) continue;
        out.push(...leased);
        queuesOut++;
      }
    }
    return out.slice(0, request.count);
  }

  async #candidates(i: number, s: Settings, offset: number, limit: number, only: string): Promise<Candidate[]> {
    const reply = list(
      await readyQueues(this.#ctx, this.#keys(i), s, offset, limit, only, this.#doing('reading the ready queues of')),
    );
    const out: Candidate[] = [];
    for (let at = 1; at + 3 < reply.length; at += 4) {
      out.push({
        partition: i,
        key: text(reply[at]),
        readyAtMs: Number(reply[at + 1]),
        lastTakeMs: Number(reply[at + 2]),
        available: Number(reply[at + 3]),
      });
    }
    return out;
  }

  async #takeFrom(
    i: number,
    s: Settings,
    request: TakeRequest,
    picks: readonly { key: string; quota: number }[],
  ): Promise<LeasedUrl[]> {
    const sentAtMs = this.#ctx.now();
    const reply = list(
      await this.#answered(i, (answer) =>
        takeQueues(
          this.#ctx,
          this.#keys(i),
          answer,
          s,
          request.leaseMs,
          request.owner ?? '',
          picks,
          this.#doing('taking from'),
        ),
      ),
    );
    faultPoint('frontier:take-after-commit');
    if (leaseOutlived(sentAtMs, request.leaseMs, reply.length, this.#ctx)) return [];
    return reply.map((entry) => this.#leased(i, list(entry)));
  }

  async done(ids: readonly string[], refetchAtMs?: readonly number[], failed = false): Promise<number> {
    const s = await this.#settings();
    return this.#eachPart(ids, s, (i, part) =>
      this.#answered(i, (answer) =>
        finishIds(
          this.#ctx,
          this.#keys(i),
          answer,
          s,
          part.map(({ id }) => id),
          part.map(({ index }) => refetchAtMs?.[index] ?? 0),
          failed,
          this.#doing('finishing URLs of'),
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
        this.#answered(i, (answer) =>
          releaseIds(
            this.#ctx,
            this.#keys(i),
            answer,
            s,
            part.map(({ id }) => id),
            part.map(({ index }) => payloads[index]!),
            this.#doing('releasing URLs of'),
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
        this.#answered(i, (answer) =>
          reclaimOwner(this.#ctx, this.#keys(i), answer, s, owner, this.#doing('reclaiming leases of')),
        ),
      ),
    );
    return counts.reduce((sum: number, n) => sum + Number(n), 0);
  }

  /**
   * Known URLs: each goes to its queue's partition. A URL queued in another partition (its queue
   * key changed) is removed there first, then scheduled anew: two calls, the one place where a
   * crash between them can drop a URL from the frontier (it stays seen).
   */
  /** In order: a URL named twice in one schedule sees where its first mention left it (distinctRuns). */
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
    const found = await this.#find(items.urls, s);
    const byPartition = new Map<number, ScheduledUrl[]>();
    const moving = new Map<number, string[]>();
    items.urls.forEach((url, n) => {
      const where = found[n];
      const home = this.#route(items.queues[n]!, s);
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
      [...moving].map(([i, urls]) => forgetUrls(this.#ctx, this.#keys(i), s, urls, this.#doing('moving URLs of'))),
    );
    let waiting = 0;
    for (const [i, part] of byPartition) {
      for (const { from, to } of callParts(
        part.length,
        (n) => itemBytes(part[n]!.url, part[n]!.queue, part[n]!.data),
        ITEMS_PER_CALL,
      )) {
        waiting += Number(
          await this.#answered(i, (answer) =>
            scheduleUrls(this.#ctx, this.#keys(i), answer, s, part.slice(from, to), this.#doing('scheduling URLs of')),
          ),
        );
      }
    }
    return waiting;
  }

  async urlStatus(url: string): Promise<UrlStatus | undefined> {
    const s = await this.#prepared();
    const where = (await this.#find([url], s))[0];
    if (where === undefined) return undefined;
    const { entry, nowMs } = where;
    const state = entry.l > nowMs ? 'leased' : entry.t > nowMs ? 'scheduled' : 'waiting';
    return {
      id: `${where.partition}-${where.id}`,
      queue: entry.q,
      state,
      atMs: state === 'leased' ? entry.l : entry.t,
      attempts: entry.a,
      epoch: entry.e,
      createdMs: entry.c ?? entry.t,
    };
  }

  /** Where each URL is queued, looked up in every partition at once (a URL's queue, and so its partition, is not known from it). */
  async #find(urls: readonly string[], s: Settings): Promise<(FoundEntry | undefined)[]> {
    const out: (FoundEntry | undefined)[] = new Array(urls.length).fill(undefined);
    for (let from = 0; from < urls.length; from += ITEMS_PER_CALL) {
      const part = urls.slice(from, from + ITEMS_PER_CALL);
      await Promise.all(
        range(s.partitions).map(async (i) => {
          const reply = list(await findUrls(this.#ctx, this.#keys(i), part, this.#doing('looking up URLs of')));
          const nowMs = Number(reply[0]);
          for (let n = 0; n < part.length; n++) {
            const json = text(reply[2 + 2 * n]);
            if (json !== '')
              out[from + n] = {
                partition: i,
                id: text(reply[1 + 2 * n]),
                entry: readStoredEntry(json, this.#scope),
                nowMs,
              };
          }
        }),
      );
    }
    return out;
  }

  async settings(): Promise<FrontierSettings> {
    const { queueKey, delayMs, maxInFlightPerQueue } = await this.#settings();
    return { queueKey, delayMs, maxInFlightPerQueue };
  }

  async pinnedSettings(): Promise<FrontierSettings> {
    const key = this.#ctx.keys.frontier(this.#scope);
    const { queueKey, delayMs, maxInFlightPerQueue } = this.#parseSettings(
      pairs(await pinFrontierQueueKey(this.#ctx, key, this.#doing('reading the settings of'))),
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
      this.#doing('configuring'),
    );
    const { queueKey, delayMs, maxInFlightPerQueue } = this.#parseSettings(pairs(reply));
    if (change.queueKey !== undefined && change.queueKey !== queueKey) throw queueKeyFixedError(queueKey);
    return { queueKey, delayMs, maxInFlightPerQueue };
  }

  /** Whether any URL was ever queued: an inbox or a queue partition exists. */
  async #everQueued(s: Settings): Promise<boolean> {
    const inboxes = await this.#inboxes();
    const keys = [
      ...range(inboxes).map((p) => this.#ctx.keys.inbox(this.#scope, p)),
      ...range(s.partitions).map((i) => this.#keys(i).state[0]!),
    ];
    const found = await Promise.all(keys.map((key) => this.#ctx.call(key, ['EXISTS', key], this.#doing('reading'))));
    return found.some((n) => Number(n) > 0);
  }

  async setQueue(key: string, change: QueueChange): Promise<void> {
    const s = await this.#settings();
    const i = this.#route(key, s);
    await setQueueState(this.#ctx, this.#keys(i), s, key, change, this.#doing('changing a queue of'));
  }

  async queues(options: { readonly after?: string; readonly limit: number }): Promise<QueueStats[]> {
    const s = await this.#prepared();
    const lists = await Promise.all(
      range(s.partitions).map(async (i) => {
        const reply = list(
          await listQueueStates(
            this.#ctx,
            this.#keys(i),
            s,
            options.after ?? '',
            options.limit,
            this.#doing('listing the queues of'),
          ),
        );
        const out: QueueStats[] = [];
        for (let at = 0; at + 1 < reply.length; at += 2) out.push(queueStats(text(reply[at]), list(reply[at + 1])));
        return out;
      }),
    );
    return lists
      .flat()
      .sort((a, b) => compareKeys(a.key, b.key))
      .slice(0, options.limit);
  }

  async queue(key: string): Promise<QueueStats | undefined> {
    const s = await this.#prepared();
    const reply = list(
      await queueState(this.#ctx, this.#keys(this.#route(key, s)), s, key, this.#doing('reading a queue of')),
    );
    return reply.length === 0 ? undefined : queueStats(key, reply);
  }

  async deleteQueue(key: string): Promise<number> {
    const s = await this.#prepared();
    return Number(
      await deleteQueueEntries(this.#ctx, this.#keys(this.#route(key, s)), s, key, this.#doing('deleting a queue of')),
    );
  }

  async clear(options: { readonly completed?: boolean } = {}): Promise<number> {
    const s = await this.#prepared();
    const counts = await Promise.all(
      range(s.partitions).map((i) =>
        clearQueues(this.#ctx, this.#keys(i), s, options.completed === true, this.#doing('clearing')),
      ),
    );
    return counts.reduce((sum: number, n) => sum + Number(n), 0);
  }

  async owners(sinceMs: number): Promise<string[]> {
    const key = this.#ctx.keys.owners(this.#scope);
    const all = pairs(await this.#ctx.call(key, ['HGETALL', key], this.#doing('reading the owners of')));
    return [...all].filter(([, lastMs]) => Number(lastMs) >= sinceMs).map(([owner]) => owner);
  }

  async stats(): Promise<FrontierStats> {
    const s = await this.#prepared();
    const all = await Promise.all(
      range(s.partitions).map(async (i) =>
        list(await queueCounts(this.#ctx, this.#keys(i), s, this.#doing('reading'))).map(Number),
      ),
    );
    const sum = (at: number) => all.reduce((total, counts) => total + (counts[at] ?? 0), 0);
    return { pending: sum(0) - sum(1), leased: sum(1), done: sum(2), failed: sum(4), queues: sum(3) };
  }

  /** Every queued URL, a batch per HSCAN page of each partition's entry pages: reads only; a URL queued or finished meanwhile may or may not be seen. */
  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    const s = await this.#prepared();
    for (const i of range(s.partitions)) {
      let cursor = '0';
      do {
        const page = scannedEntries(
          await scanEntries(this.#ctx, this.#keys(i), cursor, SCAN_PAGES, this.#doing('listing')),
          this.#scope,
        );
        cursor = page.cursor;
        if (page.entries.length > 0) onBatch(page.entries.map(({ entry }) => entry.u));
      } while (cursor !== '0');
    }
  }

  /**
   * A page of entries: one HSCAN page of one partition's entry pages (cursor `PARTITION:HSCAN`),
   * so a page may hold more or fewer than `limit`; of one queue, only its partition is read.
   * HSCAN may repeat an entry when the hash is resized during the listing.
   */
  async entries(options: {
    readonly cursor?: string;
    readonly limit: number;
    readonly queue?: string;
  }): Promise<EntryPage> {
    const s = await this.#prepared();
    const partitions = options.queue === undefined ? range(s.partitions) : [this.#route(options.queue, s)];
    let [at, scan] =
      options.cursor === undefined
        ? [0, '0']
        : (options.cursor.split(':').map((part, i) => (i === 0 ? Number(part) : part)) as [number, string]);
    const nowMs = this.#ctx.now();
    const entries: FrontierEntry[] = [];
    while (at < partitions.length && entries.length === 0) {
      const i = partitions[at]!;
      const page = scannedEntries(
        await scanEntries(
          this.#ctx,
          this.#keys(i),
          scan,
          Math.max(1, Math.ceil(options.limit / ENTRIES_PER_PAGE)),
          this.#doing('listing'),
        ),
        this.#scope,
      );
      scan = page.cursor;
      for (const { id, entry } of page.entries) {
        if (options.queue !== undefined && entry.q !== options.queue) continue;
        const state = entry.l > nowMs ? 'leased' : entry.t > nowMs ? 'scheduled' : 'waiting';
        const data = entry.d === undefined ? undefined : (JSON.parse(entry.d) as unknown);
        entries.push({
          id: `${i}-${id}`,
          url: entry.u,
          queue: entry.q,
          state,
          atMs: state === 'leased' ? entry.l : entry.t,
          createdMs: entry.c ?? entry.t,
          ...(data === undefined ? {} : { data }),
        });
      }
      if (scan === '0') {
        at++;
      }
    }
    return at < partitions.length ? { entries, cursor: `${at}:${scan}` } : { entries };
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
            this.#keys(i),
            s,
            beforeMs,
            part.slice(from, from + ITEMS_PER_CALL),
            this.#doing('purging'),
          ),
        );
      }
    }
    return n;
  }

  /** The settings, with the inboxes moved into the queues (before anything reads or takes queues); a frontier of layout 1 is refused. */
  async #prepared(): Promise<Settings> {
    let [s, inboxes] = await Promise.all([this.#settings(), this.#inboxes()]);
    if (!this.#layoutChecked) {
      const old = await Promise.all(
        range(inboxes).map((p) =>
          this.#ctx.call(
            this.#ctx.keys.oldStream(this.#scope, p),
            ['EXISTS', this.#ctx.keys.oldStream(this.#scope, p)],
            this.#doing('reading'),
          ),
        ),
      );
      if (old.some((n) => Number(n) > 0)) throw oldFrontierError(this.#scope);
      // The partitions are pinned before the first URL moves into them, so a later release's default never remaps a queue.
      if (s.rev === '0')
        s = this.#parseSettings(
          pairs(
            await configureFrontier(
              this.#ctx,
              this.#ctx.keys.frontier(this.#scope),
              QUEUE_PARTITIONS,
              [],
              this.#doing('creating'),
            ),
          ),
        );
      this.#layoutChecked = true;
    }
    await drainInboxes(
      this.#ctx,
      this.#scope,
      inboxes,
      (queue) => this.#route(queue, s),
      (i, entries) => admitEntries(this.#ctx, this.#keys(i), s, entries, this.#doing('queuing new URLs of')),
      (i) => this.#ctx.onAReplica(this.#keys(i).state[0]!, this.#doing('queuing new URLs of')),
    );
    return s;
  }

  async #settings(): Promise<Settings> {
    const key = this.#ctx.keys.frontier(this.#scope);
    return this.#parseSettings(
      pairs(await this.#ctx.call(key, ['HGETALL', key], this.#doing('reading the settings of'))),
    );
  }

  /** Settings as stored (the defaults for a frontier that has none yet), checked right after reading. */
  #parseSettings(stored: Map<string, string>): Settings {
    const where = `${this.#ctx.keys.frontier(this.#scope)}`;
    const layout = stored.get('layout') ?? FRONTIER_LAYOUT;
    if (layout === '2') throw layout2Error(this.#scope);
    if (layout !== FRONTIER_LAYOUT)
      throw new SeenStoreError(
        'FORMAT_UNSUPPORTED',
        `${where}: frontier layout ${layout}, this seenstore reads ${FRONTIER_LAYOUT}`,
      );
    const whole = (name: string, fallback: number, max: number): number => {
      const value = stored.get(name);
      if (value === undefined) return fallback;
      const n = Number(value);
      if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n > max)
        throw new SeenStoreError('STORE_CORRUPT', `${where}: ${name} is not a whole number up to ${max} (${value})`);
      return n;
    };
    const queueKey = (stored.get('queueKey') ?? DEFAULT_FRONTIER_SETTINGS.queueKey) as QueueKeyMode;
    if (!QUEUE_KEY_MODES.includes(queueKey))
      throw new SeenStoreError('STORE_CORRUPT', `${where}: queue key ${queueKey}`);
    const partitions = whole('partitions', QUEUE_PARTITIONS, 10_000);
    if (partitions < 1) throw new SeenStoreError('STORE_CORRUPT', `${where}: 0 partitions`);
    return {
      queueKey,
      delayMs: whole('delayMs', DEFAULT_FRONTIER_SETTINGS.delayMs, Number.MAX_SAFE_INTEGER),
      maxInFlightPerQueue: whole(
        'maxInFlightPerQueue',
        DEFAULT_FRONTIER_SETTINGS.maxInFlightPerQueue,
        Number.MAX_SAFE_INTEGER,
      ),
      rev: String(whole('rev', 0, Number.MAX_SAFE_INTEGER)),
      partitions,
    };
  }

  /** How many inboxes the scope has (`{PREFIX/SCOPE}:queues`, absent: 1). */
  async #inboxes(): Promise<number> {
    const key = this.#ctx.keys.queues(this.#scope);
    const value = await this.#ctx.call(key, ['GET', key], this.#doing('reading'));
    if (value === null) return 1;
    const n = Number(text(value));
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_INBOXES)
      throw new SeenStoreError('STORE_CORRUPT', `${key}: not an inbox count from 1 to ${MAX_INBOXES} (${text(value)})`);
    return n;
  }

  #route(queue: string, s: Settings): number {
    return queuePartitionOf(this.#ctx.hash, queue, s.partitions, this.#words);
  }

  #keys(i: number): QueuePartitionKeys {
    return this.#ctx.keys.queuePartition(this.#scope, i);
  }

  #doing(what: string): string {
    return `${what} the frontier of ${this.#scope}`;
  }

  /** One write on partition i under a fresh call id, answered once (a retry after a lost reply gets the first answer). */
  async #answered(i: number, call: (answer: AnswerArgs) => Promise<Reply>): Promise<Reply> {
    const own = this.#keys(i).answer(freshId(12));
    const previous = this.#previous.get(i);
    const reply = await call({
      answer: own,
      previousAnswer: previous ?? own,
      dropPrevious: previous !== undefined,
      answerTtlS: FRONTIER_ANSWER_TTL_S,
    });
    this.#previous.set(i, own);
    return reply;
  }

  /** A take's entry (`take_queue` in lua/queue-take.lua: id, URL, queue, epoch, attempts, lease end, data or ''), checked right after reading. */
  #leased(i: number, entry: Reply[]): LeasedUrl {
    const id = `${i}-${text(entry[0])}`;
    const url = text(entry[1]);
    const epoch = Number(entry[3]);
    const leasedUrl = {
      id,
      url,
      queue: text(entry[2]),
      epoch,
      attempts: Number(entry[4]),
      leaseUntilMs: Number(entry[5]),
    };
    const data = text(entry[6]);
    if (data === '') return leasedUrl;
    try {
      return { ...leasedUrl, data: JSON.parse(data) as unknown };
    } catch (error) {
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `the frontier of ${this.#scope}, entry ${id} (${url}): its data is not JSON`,
        { cause: error },
      );
    }
  }
}

/**
 * Ready queues read from each partition per round: twice a partition's share of the queues a take
 * may hand out (at least 8), so that a take reads about as many queues as it hands out whatever
 * the frontier holds; a round that reads a full list from some partition is followed by another.
 */
function candidateLimit(request: TakeRequest, partitions: number): number {
  const queues = Math.min(request.count, request.maxQueues || request.count);
  return Math.min(CANDIDATES_PER_PARTITION, queues, Math.max(8, Math.ceil((2 * queues) / partitions)));
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/**
 * Whether a take's answer came too late to hand out: its leases began after `sentAtMs` (Redis ran
 * the call after it was sent) and last `leaseMs`, so once that much time has passed since the
 * send, they may have run out and another taker may hold the same URLs (a take held behind a
 * WAIT for a stalled replica). Such entries are not returned: their leases running out gives them
 * back. Redis's clock is never compared with this one; the time elapsed is the store's clock's
 * (RedisContext.now), which its calls pass as Redis's now when it has one: the clock of the lease.
 */
function leaseOutlived(sentAtMs: number, leaseMs: number, entries: number, ctx: RedisContext): boolean {
  const elapsedMs = ctx.now() - sentAtMs;
  if (elapsedMs < leaseMs || entries === 0) return false;
  ctx.warn(
    `a frontier take was answered after ${elapsedMs} ms, past its ${leaseMs} ms lease: its ${entries} URLs are not handed out, and come back as their leases have run out`,
  );
  return true;
}
