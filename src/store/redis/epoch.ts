import { SeenStoreError, assert } from '../../errors.js';
import { filterGeometries } from '../../filters/keying.js';
import { keyCount, sliceKeys, type Keys } from '../../hash/xxhash.js';
import {
  PartlyDecided,
  type DeliveryWrite,
  type EpochBits,
  type EpochContents,
  type EpochSummary,
  type QueueItems,
} from '../backend.js';
import { isCountingEpoch, type EpochHeader, type SliceSpec } from '../records.js';
import { CALL_BYTES_MAX } from './call-parts.js';
import type { Reply } from './connection.js';
import { freshId, list, settleAll, text, type RedisContext } from './context.js';
import { TurnQueue, type Turn } from '../turns.js';
import { queuePart } from '../queue-items.js';
import { RedisDeliveries } from './deliveries.js';
import { encodeQueueItems } from './inbox.js';
import { GrowthPlan, slicesKeptChanging, type Planning } from './growth-plan.js';
import { mergeInto } from './merge.js';
import { deleteBatch, readBatch, sealPartition } from './functions.js';
import { readEpochFilters, readEpochState, redisBit, summarize, type EpochState } from './epoch-state.js';
import { addToPartition, createPartition, BATCH_ANSWERS_TTL_S, type Adding } from './partition-add.js';
import { sealedError } from './sealed-epoch.js';
import { batchKeys, groupByPartition, keyAt, readKeys, type Grouping, type Partition } from './partition.js';

export { checkRedisSlice, writeBytes } from './epoch-state.js';
export type { Reply };

/** Keys per ss_has / ss_count call. */
const READ_STEP = 16_384;

/** An epoch's entry in its scope's `epochs` hash. */
export interface EpochEntry {
  readonly uid: string;
  readonly header: EpochHeader;
}

/**
 * One epoch on Redis: P partitions (1 unless the epoch is partitioned, docs/redis.md
 * "Partitions"), each a self-contained scalable filter in its own slot, and the epoch's growth
 * plan in the scope's slot. A batch is hashed once, grouped by partition, and each partition's
 * keys are decided by one FCALL of ss_add there, all partitions at once: in order, testing every
 * slice, setting the newest's bits for new URLs, growing into the planned slices, counting, and
 * keeping the answers under the batch id so that a retry returns them. Every partition grows into
 * the same slices (the plan), so the epoch's bits are those of one filter.
 */
export class RedisEpoch implements EpochBits {
  readonly #ctx: RedisContext;
  readonly #uid: string;
  readonly #header: EpochHeader;
  /** The header's slices and the plan's, as last read: every slice any partition may have. */
  readonly #growth: GrowthPlan;
  readonly #partitions: Partition[];
  #words = new Uint32Array(0);
  /** The handle's enqueuing adds so far: their URLs' places in their queues (encodeQueueItems). */
  #enqueues = 0;
  /** Position buffers not in use (a buffer is an argument of calls in flight until they resolve; batches may overlap). */
  readonly #spare: Buffer[] = [];
  /** What one partition's add uses of the epoch (partition-add.ts). */
  readonly #adding: Adding;

  constructor(ctx: RedisContext, entry: EpochEntry, slices: SliceSpec[]) {
    this.#ctx = ctx;
    this.#uid = entry.uid;
    this.#header = entry.header;
    this.#growth = new GrowthPlan(ctx, entry.header, ctx.keys.plan(entry.header.scope, entry.uid), slices);
    const count = entry.header.partitions?.count ?? 1;
    this.#partitions = Array.from({ length: count }, (_, index) => ({
      index,
      keys: ctx.keys.epoch(entry.header.scope, entry.uid, index),
      have: 1,
      newestAdded: 0,
      previousBatch: '',
      turns: new TurnQueue(),
    }));
    this.#adding = {
      ctx,
      header: entry.header,
      growth: this.#growth,
      counting: this.counting,
      partitions: count,
      where: this.#where,
    };
  }

  get uid(): string {
    return this.#uid;
  }

  get header(): EpochHeader {
    return this.#header.slices.length === this.#growth.slices.length
      ? this.#header
      : { ...this.#header, slices: this.#growth.slices };
  }

  get counting(): boolean {
    return isCountingEpoch(this.#header);
  }

  get #where(): string {
    return `epoch ${this.#header.scope}/${this.#header.epoch}`;
  }

  async addIfAbsent(
    keys: Keys,
    answers: boolean[] | undefined,
    enqueue?: QueueItems,
    deliver?: DeliveryWrite,
  ): Promise<number> {
    if (deliver === undefined) return this.#add(keys, answers, enqueue);
    assert(answers !== undefined, 'a delivered add wants the answers');
    const deliveries = new RedisDeliveries(
      this.#ctx,
      this.#ctx.keys.undelivered(this.#header.scope),
      this.#header.scope,
    );
    return deliveries.around(deliver, keyCount(keys), answers, () => this.#add(keys, answers, enqueue));
  }

  async #add(keys: Keys, answers: boolean[] | undefined, enqueue?: QueueItems): Promise<number> {
    const count = keyCount(keys);
    if (count === 0) return 0;
    assert(
      enqueue === undefined || (answers !== undefined && enqueue.urls.length === count),
      'an enqueue gives one URL per key and wants the answers',
    );
    const batch = freshId(12);
    const doing = `adding a batch to ${this.#where}`;
    const decided = new Uint8Array(count);
    const pending = new Set<number>();
    const sealed: number[] = [];
    /**
     * This batch's turn in each partition it touches: batches of one handle are decided in each
     * partition in the order they were given, also when one is refused and retried (a partition not
     * created yet, a growth) — else a URL in two batches in flight could be answered new at its later
     * occurrence. Other partitions go on meanwhile.
     */
    const turns = new Map<number, Turn>();
    /** An enqueue's items of each partition's URLs, encoded once (ss_add's arguments on every attempt). */
    const queued = new Map<number, Buffer>();
    let fresh = 0;
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    try {
      for (let attempt = 0; ; attempt++) {
        if (attempt > 50) throw slicesKeptChanging(doing);
        let { planning, grouping, positions, perKey } = this.#positionsOf(keys, count, buffer);
        if (attempt === 0) {
          for (let p = 0; p < this.#partitions.length; p++)
            if (grouping.starts[p + 1]! > grouping.starts[p]!) pending.add(p);
          for (const p of pending) turns.set(p, this.#partitions[p]!.turns.take());
          if (enqueue !== undefined) {
            const batchSeq = this.#enqueues++ % 2 ** 32;
            let bytes = 0;
            for (const p of pending) {
              const items = encodeQueueItems(
                enqueue,
                Array.from({ length: grouping.starts[p + 1]! - grouping.starts[p]! }, (_, t) => keyAt(grouping, p, t)),
                batchSeq,
              );
              queued.set(p, items);
              bytes += items.length;
            }
            if (bytes > CALL_BYTES_MAX && count > 1) {
              // Nothing sent yet: too large for one call, the batch goes as two, which take turns after this one's.
              for (const turn of turns.values()) turn.done();
              turns.clear();
              return await this.#addHalves(keys, answers!, enqueue, count);
            }
          }
        }
        // Growth planned now (a plan grown meanwhile, by this handle or another) needs positions for the new slices too.
        await this.#growth.makeRoom(this.#partitions, grouping, pending);
        if (this.#growth.planning() !== planning)
          ({ planning, grouping, positions, perKey } = this.#positionsOf(keys, count, buffer));
        const calls = [...pending].map(async (p) => {
          const from = grouping.starts[p]!;
          const n = grouping.starts[p + 1]! - from;
          await turns.get(p)!.ready;
          const items = queued.get(p);
          const queue = items === undefined ? undefined : { items, epoch: this.#header.epoch };
          const outcome = await addToPartition(
            this.#adding,
            this.#partitions[p]!,
            planning,
            positions.subarray(from * perKey * 4, (from + n) * perKey * 4),
            n,
            batch,
            doing,
            queue,
          );
          return { p, outcome };
        });
        for (const { p, outcome } of await settleAll(calls)) {
          if (outcome.kind === 'retry') continue;
          pending.delete(p);
          turns.get(p)!.done();
          if (outcome.kind === 'sealed') {
            sealed.push(p);
            continue;
          }
          fresh += outcome.fresh;
          const n = grouping.starts[p + 1]! - grouping.starts[p]!;
          for (let t = 0; t < n; t++) {
            const i = keyAt(grouping, p, t);
            decided[i] = 1;
            if (answers !== undefined) answers[i] = outcome.flags[t] === 0x31;
          }
        }
        if (pending.size === 0) break;
      }
    } finally {
      for (const turn of turns.values()) turn.done();
      this.#spare.push(buffer.bytes);
    }
    if (sealed.length === 0) return fresh;
    const refusal = await sealedError(this.#ctx, this.#header, this.#where);
    if (refusal.code !== 'EPOCH_SEALED' || !decided.includes(1)) throw refusal;
    throw new PartlyDecided(
      `${refusal.message}; ${sealed.length} of its partitions were sealed before this batch reached them`,
      decided,
      fresh,
    );
  }

  /**
   * An enqueuing add, an enqueue too large for one call: as two adds (each atomic: a URL is still
   * queued exactly when it is new, and a URL in both halves is new in the first only).
   */
  async #addHalves(keys: Keys, answers: boolean[], enqueue: QueueItems, count: number): Promise<number> {
    let fresh = 0;
    const middle = count >> 1;
    for (const [start, end] of [
      [0, middle],
      [middle, count],
    ] as const) {
      const part = new Array<boolean>(end - start);
      const items = queuePart(enqueue, start, end);
      fresh += await this.#add(sliceKeys(keys, start, end), part, items);
      for (let i = start; i < end; i++) answers[i] = part[i - start]!;
    }
    return fresh;
  }

  async has(keys: readonly string[], out: Uint8Array): Promise<void> {
    if (this.counting) {
      const counts = new Array<number>(keys.length).fill(0);
      await this.#countInto(keys, counts);
      for (let i = 0; i < keys.length; i++) out[i] = counts[i]! > 0 ? 1 : 0;
      return;
    }
    await this.#readEach(keys, 'ss_has', (flags, i, t) => {
      out[i] = flags[t] === 0x31 ? 1 : 0;
    });
  }

  async count(keys: readonly string[], out: number[]): Promise<void> {
    assert(this.counting, 'count reaches only counting epochs');
    await this.#countInto(keys, out);
  }

  /** out[i] += key i's count (the spectral estimate of the slice that holds it), by ss_count. */
  async #countInto(keys: readonly string[], out: number[]): Promise<void> {
    await this.#readEach(keys, 'ss_count', (counts, i, t) => {
      out[i]! += counts[t]!;
    });
  }

  /**
   * A read-only function over `keys` in steps, each partition's keys in one call (in parallel):
   * `take(reply, i, t)` for key i, the t-th of its partition's call.
   */
  async #readEach(
    keys: readonly string[],
    name: 'ss_has' | 'ss_count',
    take: (reply: Buffer, i: number, t: number) => void,
  ): Promise<void> {
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    const doing = `reading ${this.#where}`;
    try {
      for (let from = 0; from < keys.length; from += READ_STEP) {
        const part = keys.slice(from, from + READ_STEP);
        const pending = new Set<number>();
        for (let attempt = 0; ; attempt++) {
          if (attempt > 50) throw slicesKeptChanging(doing);
          const { planning, grouping, positions, perKey } = this.#positionsOf(part, part.length, buffer);
          if (attempt === 0)
            for (let p = 0; p < this.#partitions.length; p++)
              if (grouping.starts[p + 1]! > grouping.starts[p]!) pending.add(p);
          const calls = [...pending].map(async (p) => {
            const partition = this.#partitions[p]!;
            if (partition.have > planning.slices.length) return;
            const start = grouping.starts[p]!;
            const n = grouping.starts[p + 1]! - start;
            const keys = readKeys(partition, planning.positions.filters.length);
            const args = {
              slicesAssumed: partition.have,
              count: n,
              geometry: this.#growth.geometryFor(planning, partition.have),
              positions: positions.subarray(start * perKey * 4, (start + n) * perKey * 4),
            };
            const reply = list(await readBatch(this.#ctx, name, keys, args, doing));
            if (text(reply[0]) === 'ok') {
              const answers = reply[1] as Buffer;
              for (let t = 0; t < n; t++) take(answers, from + keyAt(grouping, p, t), t);
              pending.delete(p);
            } else {
              await this.#growth.stale(partition, Number(reply[1]));
            }
          });
          await settleAll(calls);
          if (pending.size === 0) break;
        }
      }
    } finally {
      this.#spare.push(buffer.bytes);
    }
  }

  async delete(keys: readonly string[]): Promise<number> {
    assert(this.counting, 'delete reaches only counting epochs');
    const doing = `deleting from ${this.#where}`;
    const batch = freshId(12);
    // Counting epochs are never partitioned (strategy `counting` is not `partitioned`).
    const part = this.#partitions[0]!;
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    try {
      for (let attempt = 0; attempt < 50; attempt++) {
        const { planning, positions, perKey } = this.#positionsOf(keys, keys.length, buffer);
        const args = {
          slicesAssumed: part.have,
          count: keys.length,
          geometry: this.#growth.geometryFor(planning, part.have),
          positions: positions.subarray(0, keys.length * perKey * 4),
          answersTtlS: BATCH_ANSWERS_TTL_S,
          dropPrevious: part.previousBatch !== '',
        };
        const reply = list(
          await deleteBatch(this.#ctx, batchKeys(part, batch, planning.positions.filters.length), args, doing),
        );
        const outcome = text(reply[0]);
        if (outcome === 'ok' || outcome === 'done') {
          part.previousBatch = part.keys.batch(batch);
          return Number(text(reply[1]));
        }
        if (outcome === 'sealed') throw await sealedError(this.#ctx, this.#header, this.#where);
        await this.#growth.stale(part, Number(reply[1]));
      }
      throw slicesKeptChanging(doing);
    } finally {
      this.#spare.push(buffer.bytes);
    }
  }

  async summary(): Promise<EpochSummary> {
    return summarize(await this.#state());
  }

  async contents(): Promise<EpochContents> {
    const state = await this.#state();
    const filters = await readEpochFilters(this.#ctx, state.slices, this.#partitions, this.#where);
    return { header: this.header, summary: summarize(state), sliceAdded: state.sliceAdded, filters };
  }

  /**
   * ORs `incoming` (every filter of every slice, whole) into the epoch, partition by partition:
   * each partition first grows into the slices the incoming bits reach (ss_extend), then ORs its
   * part of each filter in one ss_merge. The distinct URLs brought in are estimated per partition
   * from its fill, and count toward its slices' capacities.
   */
  async merge(incoming: readonly Uint8Array[], check: (header: EpochHeader) => void): Promise<number> {
    const doing = `merging into ${this.#where}`;
    // The engine refuses to merge into a counting epoch (INCOMPATIBLE, transfer.ts mergeMismatch) before it gets here.
    assert(!this.counting, 'merge reaches only Bloom epochs');
    await this.#growth.reload();
    check(this.header);
    const geometries = this.#growth.slices.flatMap((slice) => filterGeometries(slice));
    if (incoming.length !== geometries.length) {
      throw new SeenStoreError(
        'USAGE',
        `merge: ${incoming.length} filters given, ${this.#where} has ${geometries.length}`,
      );
    }
    const merging = {
      ctx: this.#ctx,
      growth: this.#growth,
      partitions: this.#partitions,
      where: this.#where,
      scope: this.#header.scope,
      epoch: this.#header.epoch,
      init: (part: Partition) => createPartition(this.#adding, part),
    };
    const gains = await settleAll(this.#partitions.map((part) => mergeInto(merging, part, incoming, doing)));
    return gains.reduce((sum, n) => sum + n, 0);
  }

  /** Seals every partition (idempotent; each refuses adds from then on) and returns the epoch's final state. */
  async seal(): Promise<EpochSummary & { readonly header: EpochHeader; readonly sliceAdded: number[] }> {
    const doing = `sealing ${this.#where}`;
    const first = JSON.stringify(this.#header.slices[0]);
    await settleAll(this.#partitions.map((part) => sealPartition(this.#ctx, readKeys(part, 0), first, doing)));
    const state = await this.#state();
    return { ...summarize(state), header: this.header, sliceAdded: state.sliceAdded };
  }

  /**
   * Hashes `keys` for every planned slice, groups them by partition, and writes their positions
   * (each within its partition, in the functions' bit order) into `buffer`, partition after
   * partition: partition p's are keys starts[p]..starts[p + 1] - 1 of the grouping's order.
   */
  #positionsOf(
    keys: Keys,
    count: number,
    buffer: { bytes: Buffer },
  ): { planning: Planning; grouping: Grouping; positions: Buffer; perKey: number } {
    const planning = this.#growth.planning();
    const { hasher, positions } = planning;
    const stride = hasher.stride;
    if (this.#words.length < count * stride) this.#words = new Uint32Array(count * stride);
    const bytes = count * positions.perKey * 4;
    if (buffer.bytes.length < bytes) buffer.bytes = Buffer.alloc(bytes);
    hasher.hash(count === keyCount(keys) ? keys : sliceKeys(keys, 0, count), this.#words);
    const grouping = groupByPartition(hasher, count);
    positions.writeU32(this.#words, stride, count, buffer.bytes, redisBit, grouping.order);
    return { planning, grouping, positions: buffer.bytes, perKey: positions.perKey };
  }

  /** The epoch's counts and set bits, every partition's summed (epoch-state.ts). */
  #state(): Promise<EpochState> {
    return readEpochState(this.#ctx, this.#growth, this.#partitions, this.#where, this.counting);
  }
}
