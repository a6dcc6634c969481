import { SeenStoreError } from '../../errors.js';
import { EpochHasher } from '../../filters/epoch-hasher.js';
import { filterGeometries } from '../../filters/keying.js';
import { PositionPlan } from '../../filters/positions.js';
import { estimateCardinality } from '../../filters/sizing.js';
import type { HashSchemeId } from '../../hash/scheme.js';
import { keyCount, sliceKeys, type Keys } from '../../hash/xxhash.js';
import type { CheckpointOutcome, EpochBits, EpochContents, EpochSummary, QueueItems } from '../backend.js';
import { isCountingEpoch, type EpochHeader, type SliceSpec } from '../records.js';
import { freshId, list, pairs, text, type RedisContext } from './context.js';
import type { Reply } from './connection.js';
import type { EpochKeys } from './keys.js';
import { encodeQueueItems } from './frontier.js';
import { checkRedisSlice, redisBit, summarize, writeBytes, type EpochState } from './epoch-state.js';
import { nextSliceSpec } from '../slice-plan.js';

export { checkRedisSlice, MAX_REDIS_FILTER_BITS, writeBytes } from './epoch-state.js';
export type { Reply };

/** Most slices an epoch grows to (as on LMDB: slice j holds capacity × factor^j URLs). */
export const MAX_SLICES = 24;
/** Seconds a batch's answers stay for a retry of the same batch (deleted by the handle's next batch). */
export const BATCH_ANSWERS_TTL_S = 300;
/** How long an add waits for a rotation that sealed its epoch to publish the next one. */
const ROTATION_WAIT_MS = 10_000;

/**
 * Most bytes of queue items (URLs and data) one add sends: a larger enqueue is split (Redis takes
 * at most 512 MiB in one argument, and one call holds its master for as long as it runs).
 */
const QUEUE_ITEMS_BYTES_PER_CALL = 64 * 1024 * 1024;

/** What an enqueuing add sends beyond a plain add: the frontier stream as a key, the items and the epoch as arguments. */
interface QueueArgs {
  readonly keys: readonly string[];
  readonly args: readonly (string | Buffer)[];
  readonly bytes: number;
}

/** An epoch's entry in its scope's `epochs` hash. */
export interface EpochEntry {
  readonly uid: string;
  readonly header: EpochHeader;
}

/**
 * One epoch on Redis: its state hash, slice list and one bit string per filter, all in the slot
 * of the epoch's tag. Every add is one FCALL of ss_add (functions.ts) with the positions computed
 * here: it refuses a sealed epoch, tests every slice, sets the newest's bits for new URLs, grows
 * into a slice planned here when the newest is full, counts, and keeps the answers under the
 * batch id so that a retry returns them.
 */
export class RedisEpoch implements EpochBits {
  readonly #ctx: RedisContext;
  readonly #keys: EpochKeys;
  readonly #uid: string;
  #header: EpochHeader;
  #slices: SliceSpec[];
  /** Slices planned ahead for growth inside an add (used by whichever add grows first). */
  #planned: SliceSpec[] = [];
  /** New URLs in the newest slice as of the last add's reply: how many planned slices a batch needs. */
  #newestAdded = 0;
  #previousBatch = '';
  #words = new Uint32Array(0);
  /**
   * Position buffers not in use: a buffer is an argument of a call in flight until it resolves,
   * and calls may overlap (a caller need not wait for one batch before sending the next).
   */
  readonly #spare: Buffer[] = [];
  #plan: { readonly key: string; readonly hasher: EpochHasher; readonly positions: PositionPlan } | undefined;

  constructor(ctx: RedisContext, entry: EpochEntry, slices: SliceSpec[]) {
    this.#ctx = ctx;
    this.#uid = entry.uid;
    this.#keys = ctx.keys.epoch(entry.header.scope, entry.uid);
    this.#header = entry.header;
    this.#slices = slices;
  }

  get uid(): string {
    return this.#uid;
  }

  get header(): EpochHeader {
    return this.#header.slices.length === this.#slices.length ? this.#header : { ...this.#header, slices: this.#slices };
  }

  get counting(): boolean {
    return isCountingEpoch(this.#header);
  }

  get #where(): string {
    return `epoch ${this.#header.scope}/${this.#header.epoch}`;
  }

  async addIfAbsent(keys: Keys, answers: boolean[] | undefined, enqueue?: QueueItems): Promise<number> {
    const count = keyCount(keys);
    if (count === 0) return 0;
    if (enqueue !== undefined && (answers === undefined || enqueue.urls.length !== count)) throw new TypeError('enqueue needs answers and one URL per key');
    const queue = enqueue === undefined ? undefined : this.#queueArgs(enqueue, count);
    if (queue !== undefined && queue.bytes > QUEUE_ITEMS_BYTES_PER_CALL && count > 1) return this.#addHalves(keys, answers!, enqueue!, count);
    const batch = freshId(12);
    const doing = `adding a batch to ${this.#where}`;
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    try {
      return await this.#addWith(keys, answers, count, batch, doing, buffer, queue);
    } finally {
      this.#spare.push(buffer.bytes);
    }
  }

  /**
   * An enqueue whose URLs and data are too large for one call, as two (each atomic: a URL is still
   * queued exactly when it is new, and a URL in both halves is new in the first only).
   */
  async #addHalves(keys: Keys, answers: boolean[], enqueue: QueueItems, count: number): Promise<number> {
    let fresh = 0;
    const middle = count >> 1;
    for (const [start, end] of [[0, middle], [middle, count]] as const) {
      const part = new Array<boolean>(end - start);
      const items = { urls: enqueue.urls.slice(start, end), ...(enqueue.data === undefined ? {} : { data: enqueue.data.slice(start, end) }) };
      fresh += await this.addIfAbsent(sliceKeys(keys, start, end), part, items);
      for (let i = start; i < end; i++) answers[i] = part[i - start]!;
    }
    return fresh;
  }

  /**
   * What ss_add needs to enqueue the new URLs in the same call: the frontier stream of the add's
   * slot as a fourth key, the items and the epoch as two more arguments. Interim wiring while every
   * epoch is partition 0: the partitioned layout sends each partition's items (encodeQueueItems of
   * its URLs' indices) with that partition's stream.
   */
  #queueArgs(enqueue: QueueItems, count: number): QueueArgs {
    const all = Array.from({ length: count }, (_, i) => i);
    const items = encodeQueueItems(enqueue, all);
    return { keys: [this.#keys.queue], args: [items, String(this.#header.epoch)], bytes: items.length };
  }

  async #addWith(
    keys: Keys,
    answers: boolean[] | undefined,
    count: number,
    batch: string,
    doing: string,
    buffer: { bytes: Buffer },
    queue: QueueArgs | undefined,
  ): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      if (attempt > 50) throw new SeenStoreError('STORE_BUSY', `${doing}: the epoch's slices kept changing under 50 attempts`);
      this.#planGrowth(count);
      const all = [...this.#slices, ...this.#planned];
      const { positions, perKey } = this.#positionsOf(all, keys, count, buffer);
      const geometry = JSON.stringify({
        filters: this.#plan!.positions.filters.map((filter) => [filter.slice, filter.geometry.k]),
        bytes: this.#plan!.positions.filters.map((filter) => filter.geometry.mBits / 8),
        caps: all.map((slice) => slice.capacityUrls),
        planned: this.#planned.map((slice) => JSON.stringify(slice)),
        max: MAX_SLICES,
      });
      const reply = list(
        await this.#ctx.fcallDurable(
          this.counting ? 'ss_count_add' : 'ss_add',
          [this.#keys.state, this.#keys.slices, this.#keys.batch(batch), ...(queue?.keys ?? [])],
          [String(this.#slices.length), String(count), geometry, positions.subarray(0, count * perKey * 4), this.#keys.filterBase, String(BATCH_ANSWERS_TTL_S), this.#previousBatch, ...(queue?.args ?? [])],
          doing,
        ),
      );
      const outcome = text(reply[0]);
      if (outcome === 'malformed') throw new SeenStoreError('INTERNAL', `invariant broken: ss_add could not read the queue items sent (${doing})`);
      if (outcome === 'ok' || outcome === 'done') {
        const flags = reply[1] as Buffer;
        if (outcome === 'ok') {
          const sliceCount = Number(reply[2]);
          this.#newestAdded = Number(reply[3]);
          if (sliceCount > this.#slices.length) {
            this.#slices = all.slice(0, sliceCount);
            this.#planned = [];
            this.#plan = undefined;
          }
        }
        this.#previousBatch = this.#keys.batch(batch);
        let fresh = 0;
        for (let i = 0; i < count; i++) {
          const isNew = flags[i] === 0x31;
          if (isNew) fresh++;
          if (answers !== undefined) answers[i] = isNew;
        }
        return fresh;
      }
      if (outcome === 'missing') await this.#init();
      else if (outcome === 'stale') await this.#reloadSlices();
      else if (outcome === 'short') this.#newestAdded = Number(reply[1]);
      else if (outcome === 'sealed') throw await this.#sealedError();
      else throw new SeenStoreError('IO_ERROR', `${doing}: unexpected answer ${outcome}`);
    }
  }

  async has(keys: readonly string[], out: Uint8Array): Promise<void> {
    if (this.counting) {
      const counts = new Array<number>(keys.length).fill(0);
      await this.#countInto(keys, counts);
      for (let i = 0; i < keys.length; i++) out[i] = counts[i]! > 0 ? 1 : 0;
      return;
    }
    const step = 16_384;
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    try {
      await this.#hasWith(keys, out, step, buffer);
    } finally {
      this.#spare.push(buffer.bytes);
    }
  }

  async #hasWith(keys: readonly string[], out: Uint8Array, step: number, buffer: { bytes: Buffer }): Promise<void> {
    for (let from = 0; from < keys.length; from += step) {
      const part = keys.slice(from, from + step);
      for (let attempt = 0; ; attempt++) {
        const { positions, perKey } = this.#positionsOf(this.#slices, part, part.length, buffer);
        const geometry = JSON.stringify({ filters: this.#plan!.positions.filters.map((filter) => [filter.slice, filter.geometry.k]) });
        const reply = list(
          await this.#ctx.fcall('ss_has', [this.#keys.state, this.#keys.slices], [String(this.#slices.length), String(part.length), geometry, positions.subarray(0, part.length * perKey * 4), this.#keys.filterBase], `reading ${this.#where}`),
        );
        if (text(reply[0]) === 'ok') {
          const flags = reply[1] as Buffer;
          for (let i = 0; i < part.length; i++) out[from + i] = flags[i] === 0x31 ? 1 : 0;
          break;
        }
        if (attempt > 50) throw new SeenStoreError('STORE_BUSY', `reading ${this.#where}: the epoch's slices kept changing`);
        await this.#reloadSlices();
      }
    }
  }

  async count(keys: readonly string[], out: number[]): Promise<void> {
    if (!this.counting) throw this.#notCounting('count');
    await this.#countInto(keys, out);
  }

  /** out[i] += key i's count (the spectral estimate of the slice that holds it), by ss_count. */
  async #countInto(keys: readonly string[], out: number[]): Promise<void> {
    const step = 16_384;
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    try {
      for (let from = 0; from < keys.length; from += step) {
        const part = keys.slice(from, from + step);
        for (let attempt = 0; ; attempt++) {
          const { positions, perKey } = this.#positionsOf(this.#slices, part, part.length, buffer);
          const reply = list(await this.#ctx.fcall('ss_count', [this.#keys.state, this.#keys.slices], [String(this.#slices.length), String(part.length), this.#geometry(this.#slices), positions.subarray(0, part.length * perKey * 4), this.#keys.filterBase], `reading ${this.#where}`));
          if (text(reply[0]) === 'ok') {
            const counts = reply[1] as Buffer;
            for (let i = 0; i < part.length; i++) out[from + i]! += counts[i]!;
            break;
          }
          if (attempt > 50) throw new SeenStoreError('STORE_BUSY', `reading ${this.#where}: the epoch's slices kept changing`);
          await this.#reloadSlices();
        }
      }
    } finally {
      this.#spare.push(buffer.bytes);
    }
  }

  async delete(keys: readonly string[]): Promise<number> {
    if (!this.counting) throw this.#notCounting('delete');
    const doing = `deleting from ${this.#where}`;
    const batch = freshId(12);
    const buffer = { bytes: this.#spare.pop() ?? Buffer.alloc(0) };
    try {
      for (let attempt = 0; attempt < 50; attempt++) {
        const { positions, perKey } = this.#positionsOf(this.#slices, keys, keys.length, buffer);
        const reply = list(
          await this.#ctx.fcallDurable(
            'ss_count_delete',
            [this.#keys.state, this.#keys.slices, this.#keys.batch(batch)],
            [String(this.#slices.length), String(keys.length), this.#geometry(this.#slices), positions.subarray(0, keys.length * perKey * 4), this.#keys.filterBase, String(BATCH_ANSWERS_TTL_S), this.#previousBatch],
            doing,
          ),
        );
        const outcome = text(reply[0]);
        if (outcome === 'ok' || outcome === 'done') {
          this.#previousBatch = this.#keys.batch(batch);
          return Number(text(reply[1]));
        }
        if (outcome === 'sealed') throw await this.#sealedError();
        await this.#reloadSlices();
      }
      throw new SeenStoreError('STORE_BUSY', `${doing}: the epoch's slices kept changing`);
    } finally {
      this.#spare.push(buffer.bytes);
    }
  }

  /** What the functions need of the filters' layout: slice and k per filter, and byte sizes. */
  #geometry(slices: readonly SliceSpec[]): string {
    this.#positionPlan(slices);
    return JSON.stringify({
      filters: this.#plan!.positions.filters.map((filter) => [filter.slice, filter.geometry.k]),
      bytes: this.#plan!.positions.filters.map((filter) => filter.geometry.mBits / 8),
    });
  }

  async summary(): Promise<EpochSummary> {
    return summarize(await this.#state());
  }

  async contents(): Promise<EpochContents> {
    const state = await this.#state();
    const geometries = state.slices.flatMap((slice) => filterGeometries(slice));
    const filters = await Promise.all(
      geometries.map(async (geometry, index) => {
        const bytes = new Uint8Array(geometry.mBits / 8);
        const stored = await this.#ctx.call(this.#keys.filter(index), ['GET', this.#keys.filter(index)], `reading ${this.#where}`);
        if (Buffer.isBuffer(stored)) bytes.set(stored.subarray(0, bytes.length));
        return bytes;
      }),
    );
    return { header: this.header, summary: summarize(state), sliceAdded: state.sliceAdded, filters };
  }

  async merge(incoming: readonly Uint8Array[], check: (header: EpochHeader) => void): Promise<number> {
    const doing = `merging into ${this.#where}`;
    if (this.counting) {
      throw new SeenStoreError('INCOMPATIBLE', `${this.#where} counts: counting epochs cannot be merged (counters would have to be added, not OR-ed)`);
    }
    const id = freshId();
    for (let attempt = 0; attempt < 50; attempt++) {
      await this.#reloadSlices();
      check(this.header);
      const geometries = this.#slices.flatMap((slice) => filterGeometries(slice));
      if (incoming.length !== geometries.length) {
        throw new SeenStoreError('USAGE', `merge: ${incoming.length} filters given, ${this.#where} has ${geometries.length}`);
      }
      const temporary = incoming.map((_, index) => this.#keys.merging(id, index));
      for (const [index, bytes] of incoming.entries()) {
        if (bytes.every((b) => b === 0)) continue;
        await writeBytes(this.#ctx, temporary[index]!, bytes, doing);
      }
      const reply = list(await this.#ctx.fcallDurable('ss_merge', [this.#keys.state, this.#keys.slices], [String(this.#slices.length), String(incoming.length), this.#keys.filterBase, ...temporary], doing));
      const outcome = text(reply[0]);
      if (outcome === 'sealed') {
        await this.#ctx.call(temporary[0]!, ['DEL', ...temporary], doing);
        throw new SeenStoreError('EPOCH_SEALED', `${this.#where} is no longer open`);
      }
      if (outcome === 'stale') {
        await this.#ctx.call(temporary[0]!, ['DEL', ...temporary], doing);
        continue;
      }
      const before = list(reply[1]).map(Number);
      const after = list(reply[2]).map(Number);
      let gained = 0;
      let first = 0;
      const increments: string[] = [];
      for (const [j, slice] of this.#slices.entries()) {
        const geometry = filterGeometries(slice)[0]!;
        const more = Math.max(0, Math.round(estimateCardinality(after[first]!, geometry.mBits, geometry.k) - estimateCardinality(before[first]!, geometry.mBits, geometry.k)));
        if (more > 0) increments.push(`a${j}`, String(more));
        gained += more;
        first += filterGeometries(slice).length;
      }
      for (let i = 0; i < increments.length; i += 2) await this.#ctx.call(this.#keys.state, ['HINCRBY', this.#keys.state, increments[i]!, increments[i + 1]!], doing);
      await this.#ctx.replicated(this.#keys.state, doing);
      return gained;
    }
    throw new SeenStoreError('STORE_BUSY', `${doing}: the epoch's slices kept changing`);
  }

  async checkpoint(): Promise<CheckpointOutcome> {
    // Redis makes every write durable itself (AOF): there is nothing to fold.
    return 'clean';
  }

  /** Seals the epoch (idempotent; adds are refused from here on) and returns its final state. */
  async seal(): Promise<EpochSummary & { readonly header: EpochHeader; readonly sliceAdded: number[] }> {
    const doing = `sealing ${this.#where}`;
    await this.#ctx.fcallDurable('ss_seal', [this.#keys.state, this.#keys.slices], [this.#keys.filterBase, '0', JSON.stringify(this.#header.slices[0])], doing);
    const state = await this.#state();
    return { ...summarize(state), header: this.header, sliceAdded: state.sliceAdded };
  }

  /** Every key of the epoch (for usage and drops). */
  keysOf(header: EpochHeader): string[] {
    const filters = header.slices.reduce((sum, slice) => sum + filterGeometries(slice).length, 0);
    return [this.#keys.state, this.#keys.slices, ...Array.from({ length: filters }, (_, index) => this.#keys.filter(index))];
  }

  async #state(): Promise<EpochState> {
    await this.#reloadSlices();
    for (let attempt = 0; attempt < 50; attempt++) {
      const filters = this.#slices.reduce((sum, slice) => sum + filterGeometries(slice).length, 0);
      const reply = list(await this.#ctx.fcall('ss_state', [this.#keys.state, this.#keys.slices], [this.#keys.filterBase, String(filters)], `reading ${this.#where}`));
      const hash = pairs(reply[0]);
      const slices = list(reply[1]).map((value) => JSON.parse(text(value)) as SliceSpec);
      if (slices.length > this.#slices.length) {
        this.#adoptSlices(slices);
        continue;
      }
      const current = slices.length === 0 ? this.#slices : slices;
      return {
        slices: current,
        submitted: Number(hash.get('submitted') ?? 0),
        added: Number(hash.get('added') ?? 0),
        sliceAdded: current.map((_, j) => Number(hash.get(`a${j}`) ?? 0)),
        ones: this.counting ? await this.#nonZeroCounters(current) : list(reply[2]).map(Number),
      };
    }
    throw new SeenStoreError('STORE_BUSY', `reading ${this.#where}: the epoch's slices kept changing`);
  }

  /** Counting epochs: the counters that are not zero, per filter (their "set bits"). */
  async #nonZeroCounters(slices: readonly SliceSpec[]): Promise<number[]> {
    const filters = slices.reduce((sum, slice) => sum + filterGeometries(slice).length, 0);
    return Promise.all(
      Array.from({ length: filters }, async (_, index) => {
        const stored = await this.#ctx.call(this.#keys.filter(index), ['GET', this.#keys.filter(index)], `reading ${this.#where}`);
        let nonZero = 0;
        if (Buffer.isBuffer(stored)) for (const byte of stored) if (byte !== 0) nonZero++;
        return nonZero;
      }),
    );
  }

  /** Plans slices for growth inside the next add, enough for `count` new URLs past the newest's room. */
  #planGrowth(count: number): void {
    const all = [...this.#slices, ...this.#planned];
    let room = this.#slices[this.#slices.length - 1]!.capacityUrls - this.#newestAdded;
    for (const slice of this.#planned) room += slice.capacityUrls;
    if (room >= count || all.length >= MAX_SLICES) return;
    const header = this.#header;
    while (room < count && all.length < MAX_SLICES) {
      const spec = nextSliceSpec(header, all.length);
      checkRedisSlice(header, spec);
      all.push(spec);
      this.#planned.push(spec);
      room += spec.capacityUrls;
    }
    this.#plan = undefined;
  }

  /** Hashes and positions of `keys` for `slices`, into `buffer` (grown when too small; reused from batch to batch). */
  #positionsOf(slices: readonly SliceSpec[], keys: Keys, count: number, buffer: { bytes: Buffer }): { positions: Buffer; perKey: number } {
    const { hasher, positions } = this.#positionPlan(slices);
    const stride = hasher.stride;
    if (this.#words.length < count * stride) this.#words = new Uint32Array(count * stride);
    const bytes = count * positions.perKey * 4;
    if (buffer.bytes.length < bytes) buffer.bytes = Buffer.alloc(bytes);
    hasher.hash(count === keyCount(keys) ? keys : sliceKeys(keys, 0, count), this.#words);
    positions.writeU32(this.#words, stride, count, buffer.bytes, redisBit);
    return { positions: buffer.bytes, perKey: positions.perKey };
  }

  #positionPlan(slices: readonly SliceSpec[]): { readonly hasher: EpochHasher; readonly positions: PositionPlan } {
    const key = slices.map((slice) => slice.seeds.join()).join('|');
    if (this.#plan?.key !== key) {
      this.#plan = { key, hasher: new EpochHasher(this.#ctx.hash, slices), positions: new PositionPlan(slices, this.#header.hashScheme as HashSchemeId) };
    }
    return this.#plan;
  }

  async #init(): Promise<void> {
    const first = this.#header.slices[0]!;
    const sizes = filterGeometries(first).map((geometry) => String(geometry.mBits / 8));
    await this.#ctx.fcall('ss_init', [this.#keys.state, this.#keys.slices], [JSON.stringify(first), this.#header.state === 'open' ? '1' : '0', this.#keys.filterBase, ...sizes], `creating ${this.#where}`);
  }

  async #reloadSlices(): Promise<void> {
    const reply = list(await this.#ctx.call(this.#keys.slices, ['LRANGE', this.#keys.slices, '0', '-1'], `reading ${this.#where}`));
    if (reply.length > 0) this.#adoptSlices(reply.map((value) => JSON.parse(text(value)) as SliceSpec));
  }

  #adoptSlices(slices: SliceSpec[]): void {
    if (slices.length === this.#slices.length) return;
    this.#slices = slices;
    this.#planned = [];
    this.#newestAdded = 0;
    this.#plan = undefined;
  }

  /**
   * The epoch refused an add: sealed. Either a rotation opened the next epoch (EPOCH_SEALED: the
   * engine retries there), or a rotation is between sealing and publishing the next epoch: wait
   * for it, boundedly (an interrupted rotation is finished by the next `epoch rotate`).
   */
  async #sealedError(): Promise<SeenStoreError> {
    const { scope, epoch } = this.#header;
    const deadline = Date.now() + ROTATION_WAIT_MS;
    for (;;) {
      const record = await this.#ctx.call(this.#ctx.keys.scope(scope), ['GET', this.#ctx.keys.scope(scope)], `reading scope ${scope}`);
      const open = record === null ? undefined : (JSON.parse(text(record)) as { openEpoch: number }).openEpoch;
      if (open !== epoch) return new SeenStoreError('EPOCH_SEALED', `${this.#where} is no longer open${open === undefined ? '' : ` (the open epoch is ${open})`}`);
      if (Date.now() >= deadline) {
        return new SeenStoreError('STORE_UNAVAILABLE', `${this.#where} was sealed by a rotation that has not opened the next epoch for ${ROTATION_WAIT_MS / 1000} s (interrupted?); \`seenstore epoch rotate\` finishes it`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  #notCounting(doing: string): SeenStoreError {
    return new SeenStoreError('USAGE', `${this.#where} is not counting: only counting epochs can ${doing}`);
  }
}
