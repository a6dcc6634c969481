import { SeenStoreError } from '../../errors.js';
import type {
  Backend,
  DeletedScope,
  Deliveries,
  EpochBits,
  EpochUsage,
  Frontier,
  ImportRequest,
  MigrationReport,
  Rotation,
  RotateRequest,
} from '../backend.js';
import type { OpenOptions } from '../driver.js';
import { redisDriver, type RedisOptions } from './driver.js';
import { RedisDeliveries } from './deliveries.js';
import {
  readEpochHeader,
  readScopeRecord,
  sealHeader,
  type EpochHeader,
  type ScopeRecord,
  type SliceSpec,
} from '../records.js';
import { connectRedis } from './connection.js';
import { redisDeadlines } from './deadline.js';
import { RedisContext, freshId, list, pairs, text } from './context.js';
import { RedisEpoch, checkRedisSlice, type EpochEntry } from './epoch.js';
import { RedisFrontier } from './frontier.js';
import { migrateFrontier } from './frontier-migrate.js';
import { deleteFrontierKeys } from './scope-delete.js';
import { createScopeRecord, dropEpochEntry, rotateScope } from './functions.js';
import { scopeKeys } from './keys.js';
import { checkDurability, checkFormat, loadLibrary, refuseMissingStore } from './open-checks.js';
import { partitionsOf } from './partition.js';
import { importScope } from './scope-import.js';
import { parseRedisLocation } from './location.js';
import { filterGeometries } from '../../filters/keying.js';
import { RedisNodes } from './nodes.js';

/**
 * The Redis backend (docs/redis.md): a Redis server or Redis Cluster holds the scopes. A scope's
 * metadata lives in its own slot; each epoch's bits in the slot of its own tag. Every atomic step
 * is one call of the seenstore function library on one slot; nothing is cached between calls that
 * another machine could change, except slice specs, which only grow and are checked by every call.
 */
export class RedisBackend implements Backend {
  readonly driver = redisDriver;
  readonly location: string;
  readonly readOnly: boolean;
  readonly nodes: RedisNodes;
  readonly #ctx: RedisContext;
  readonly #epochs = new Map<string, RedisEpoch>();
  readonly #frontiers = new Map<string, RedisFrontier>();
  #closed = false;

  private constructor(location: string, readOnly: boolean, ctx: RedisContext) {
    this.location = location;
    this.readOnly = readOnly;
    this.#ctx = ctx;
    this.nodes = new RedisNodes(ctx);
  }

  static async open(
    location: string,
    redacted: string,
    common: OpenOptions,
    options: RedisOptions,
  ): Promise<RedisBackend> {
    const parsed = parseRedisLocation(location);
    // The location's timeout-ms= wins over the option: it reaches every program the location is given to.
    const deadlines = redisDeadlines(parsed.timeoutMs ?? options.unavailableAfterMs);
    const conn = await connectRedis(parsed, deadlines, common.warn);
    const ctx = new RedisContext(
      conn,
      parsed.prefix,
      common.hash,
      options.waitReplicas,
      deadlines,
      common.warn,
      options.clock,
    );
    try {
      await loadLibrary(ctx);
      // Before checkFormat, whose first call on an empty prefix makes it a store.
      if (!common.create) await refuseMissingStore(ctx, redacted);
      await checkFormat(ctx, redacted);
      if (!common.readOnly) await checkDurability(ctx, redacted);
    } catch (error) {
      await conn.close();
      throw error instanceof SeenStoreError
        ? error
        : new SeenStoreError('STORE_UNAVAILABLE', `${redacted}: ${(error as Error).message}`, { cause: error });
    }
    return new RedisBackend(redacted, common.readOnly, ctx);
  }

  async scopeNames(): Promise<string[]> {
    const keys = this.#ctx.keys;
    const names = list(await this.#ctx.call(keys.scopes(), ['SMEMBERS', keys.scopes()], 'listing scopes')).map((name) =>
      text(name),
    );
    const exists = await Promise.all(
      names.map(
        async (name) =>
          Number(await this.#ctx.call(keys.scope(name), ['EXISTS', keys.scope(name)], 'listing scopes')) === 1,
      ),
    );
    return names.filter((_, i) => exists[i]).sort();
  }

  async scopeRecord(scope: string): Promise<ScopeRecord | undefined> {
    const key = this.#ctx.keys.scope(scope);
    const value = await this.#ctx.call(key, ['GET', key], `reading scope ${scope}`);
    return value === null ? undefined : readScopeRecord(parse(text(value), `scope record ${scope}`));
  }

  async epochHeader(scope: string, n: number): Promise<EpochHeader> {
    const entry = await this.#entry(scope, n);
    if (entry.header.state !== 'open') return entry.header;
    const slices = await this.#grownSlices(scope, entry);
    return slices.length > entry.header.slices.length ? { ...entry.header, slices } : entry.header;
  }

  async epochNumbers(scope: string): Promise<number[]> {
    const key = this.#ctx.keys.epochs(scope);
    return list(await this.#ctx.call(key, ['HKEYS', key], `listing epochs of ${scope}`))
      .map((n) => Number(text(n)))
      .sort((a, b) => a - b);
  }

  async createScope(scope: string, first: EpochHeader): Promise<ScopeRecord> {
    for (const slice of first.slices) checkRedisSlice(first, slice);
    const keys = this.#ctx.keys;
    const record: ScopeRecord = { v: 1, name: scope, openEpoch: first.epoch, createdAtMs: this.#ctx.now() };
    const doing = `creating scope ${scope}`;
    await this.#ctx.call(keys.scopes(), ['SADD', keys.scopes(), scope], doing);
    const entry: EpochEntry = { uid: freshId(), header: first };
    const reply = list(
      await createScopeRecord(
        this.#ctx,
        scopeKeys(keys, scope),
        JSON.stringify(record),
        first.epoch,
        JSON.stringify(entry),
        partitionsOf(first),
        doing,
      ),
    );
    return readScopeRecord(parse(text(reply[1]), `scope record ${scope}`));
  }

  /**
   * Seals the open epoch first (its function refuses adds from then on, so the counts read after
   * it are final), plans the next epoch from them, then publishes both in one call on the scope's
   * slot, which checks that the sealed epoch is still the open one (compare-and-set). Two
   * rotators: both seal (idempotent), one publishes, the other gets EPOCH_SEALED (or null with
   * ifEpoch). A rotation interrupted between the two steps leaves the epoch sealed but open:
   * adds wait, then fail STORE_UNAVAILABLE, and the next rotation finishes it.
   */
  async rotate(scope: string, request: RotateRequest): Promise<Rotation | null> {
    const keys = this.#ctx.keys;
    const record = await this.scopeRecord(scope);
    if (record === undefined) throw SeenStoreError.noScope(scope);
    if (request.ifEpoch !== undefined && record.openEpoch !== request.ifEpoch) return null;
    if (record.openEpoch !== request.epoch) throw SeenStoreError.sealed(scope, request.epoch);
    const epoch = await this.#load(scope, request.epoch);
    const final = await epoch.seal();
    const current = final.header;
    const before = await this.#entry(scope, current.epoch - 1).then(
      (entry) => entry.header,
      () => undefined,
    );
    const opened = request.next(current, final, before);
    for (const slice of opened.slices) checkRedisSlice(opened, slice);
    const now = this.#ctx.now();
    const sealed = sealHeader(current, final, now);
    const next: EpochEntry = { uid: freshId(), header: opened };
    const doing = `rotating ${scope}/${current.epoch}`;
    const rotation = {
      sealing: current.epoch,
      sealedEntry: JSON.stringify({ uid: epoch.uid, header: sealed }),
      next: opened.epoch,
      nextEntry: JSON.stringify(next),
      record: JSON.stringify({ ...record, openEpoch: opened.epoch }),
      partitions: partitionsOf(opened),
    };
    const reply = list(await rotateScope(this.#ctx, scopeKeys(keys, scope), rotation, doing));
    const outcome = text(reply[0]);
    if (outcome === 'missing') throw SeenStoreError.noScope(scope);
    if (outcome === 'moved') {
      // A retry of this very call after a lost reply finds its own next epoch published.
      const published = await this.#entry(scope, opened.epoch).catch(() => undefined);
      if (published?.uid !== next.uid) {
        if (request.ifEpoch !== undefined) return null;
        throw SeenStoreError.sealed(scope, current.epoch, 'another rotation won');
      }
    }
    this.#epochs.delete(`${scope}/${current.epoch}`);
    return { sealed, opened };
  }

  async importEpoch(request: ImportRequest): Promise<ScopeRecord> {
    const { scope, epoch: header, next } = request;
    for (const slice of header.slices) checkRedisSlice(header, slice);
    if (next !== undefined) for (const slice of next.slices) checkRedisSlice(next, slice);
    if ((await this.scopeRecord(scope)) !== undefined) throw SeenStoreError.scopeExists(scope);
    return importScope(this.#ctx, request);
  }

  async dropEpoch(header: EpochHeader): Promise<number> {
    const keys = this.#ctx.keys;
    const doing = `dropping ${header.scope}/${header.epoch}`;
    const reply = await dropEpochEntry(
      this.#ctx,
      keys.epochs(header.scope),
      keys.drops(header.scope),
      header.epoch,
      doing,
    );
    if (reply === null) return 0;
    this.#epochs.delete(`${header.scope}/${header.epoch}`);
    return this.#deleteData(header.scope, parseEntry(text(reply), header.scope, header.epoch));
  }

  /**
   * Seals the open epoch (adds racing the delete fail EPOCH_SEALED from then on, and its grown
   * slices are final), moves every epoch to the drops (gone for readers), deletes the frontier,
   * then the scope record, and last the epochs' data. Interrupted, the scope may stay listed
   * without epochs: a second delete finishes it.
   */
  async deleteScope(scope: string): Promise<DeletedScope | undefined> {
    const keys = this.#ctx.keys;
    const doing = `deleting scope ${scope}`;
    const record = await this.scopeRecord(scope);
    if (record === undefined) {
      await this.finishDrops(scope);
      return undefined;
    }
    const sealed = await this.#load(scope, record.openEpoch).then(
      (epoch) => epoch.seal(),
      () => undefined,
    );
    const numbers = await this.epochNumbers(scope);
    for (const n of numbers) {
      const entry = await this.#entry(scope, n);
      const header = n === sealed?.header.epoch ? sealed.header : entry.header;
      await dropEpochEntry(this.#ctx, keys.epochs(scope), keys.drops(scope), n, doing);
      // The open epoch's entry holds its first header: the drop must delete the slices it grew into too.
      if (header !== entry.header)
        await this.#ctx.call(
          keys.drops(scope),
          ['HSET', keys.drops(scope), String(n), JSON.stringify({ ...entry, header })],
          doing,
        );
    }
    const queuedUrls = await deleteFrontierKeys(this.#ctx, scope, await this.frontier(scope));
    await this.#ctx.call(keys.scope(scope), ['DEL', keys.scope(scope), keys.epochs(scope)], doing);
    await this.#ctx.call(keys.scopes(), ['SREM', keys.scopes(), scope], doing);
    for (const id of [...this.#epochs.keys()]) if (id.slice(0, id.lastIndexOf('/')) === scope) this.#epochs.delete(id);
    this.#frontiers.delete(scope);
    await this.finishDrops(scope);
    return { epochs: numbers.length, queuedUrls };
  }

  async finishDrops(scope: string): Promise<EpochHeader[]> {
    const key = this.#ctx.keys.drops(scope);
    const drops = pairs(await this.#ctx.call(key, ['HGETALL', key], `reading drops of ${scope}`));
    const finished: EpochHeader[] = [];
    for (const [n, json] of drops) {
      const entry = parseEntry(json, scope, Number(n));
      await this.#deleteData(scope, entry);
      finished.push(entry.header);
    }
    return finished;
  }

  async usage(header: EpochHeader): Promise<EpochUsage> {
    const entry = await this.#entry(header.scope, header.epoch);
    const keys = this.#dataKeys(
      header.scope,
      entry.uid,
      header.epoch === entry.header.epoch ? await this.epochHeader(header.scope, header.epoch) : header,
    );
    return { bytesOnDisk: await this.#memory(keys), pendingRecords: 0 };
  }

  async epoch(scope: string, n: number): Promise<EpochBits> {
    return this.#load(scope, n);
  }

  async frontier(scope: string): Promise<Frontier> {
    let frontier = this.#frontiers.get(scope);
    if (frontier === undefined) {
      frontier = new RedisFrontier(this.#ctx, scope);
      this.#frontiers.set(scope, frontier);
    }
    return frontier;
  }

  /** Every scope's frontier of key layout 2 moved to layout 3 (frontier-migrate.ts); the other scopes are left as they are. */
  async migrate(): Promise<MigrationReport> {
    const steps: MigrationReport['steps'][number][] = [];
    for (const scope of await this.scopeNames()) {
      const moved = await migrateFrontier(this.#ctx, scope);
      if (moved !== undefined)
        steps.push({
          from: 2,
          to: 3,
          summary: `the frontier of scope ${scope}, Redis key layout 2 to 3`,
          changed: moved,
        });
    }
    return { from: steps.length > 0 ? 2 : 3, to: 3, steps, snapshot: null };
  }

  async deliveries(scope: string): Promise<Deliveries> {
    return new RedisDeliveries(this.#ctx, this.#ctx.keys.undelivered(scope), scope);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#epochs.clear();
    this.#frontiers.clear();
    await this.#ctx.conn.close();
  }

  async #load(scope: string, n: number): Promise<RedisEpoch> {
    const entry = await this.#entry(scope, n);
    const id = `${scope}/${n}`;
    const cached = this.#epochs.get(id);
    if (cached !== undefined && cached.uid === entry.uid) return cached;
    const slices = entry.header.state === 'open' ? await this.#grownSlices(scope, entry) : [...entry.header.slices];
    // One handle per epoch: a load that raced this one may have made it meanwhile (its batches' order lives in it).
    const made = this.#epochs.get(id);
    if (made !== undefined && made.uid === entry.uid) return made;
    const epoch = new RedisEpoch(this.#ctx, entry, slices);
    this.#epochs.set(id, epoch);
    return epoch;
  }

  async #entry(scope: string, n: number): Promise<EpochEntry> {
    const key = this.#ctx.keys.epochs(scope);
    const value = await this.#ctx.call(key, ['HGET', key, String(n)], `reading epoch ${scope}/${n}`);
    if (value === null) throw SeenStoreError.noEpoch(scope, n);
    return parseEntry(text(value), scope, n);
  }

  /** The slices of an open epoch: its header's and its plan's (the slices its partitions grow into). */
  async #grownSlices(scope: string, entry: EpochEntry): Promise<SliceSpec[]> {
    const key = this.#ctx.keys.plan(scope, entry.uid);
    const reply = list(
      await this.#ctx.call(key, ['LRANGE', key, '0', '-1'], `reading epoch ${scope}/${entry.header.epoch}`),
    );
    return [
      ...entry.header.slices,
      ...reply.map((value) => parse(text(value), `slice of ${scope}/${entry.header.epoch}`) as SliceSpec),
    ];
  }

  /** Every key of an epoch, grouped by slot: one group per partition, then the plan (in the scope's slot). */
  #dataKeys(scope: string, uid: string, header: EpochHeader): string[][] {
    const keys = this.#ctx.keys;
    const filters = header.slices.reduce((sum, slice) => sum + filterGeometries(slice).length, 0);
    const partitions = Array.from({ length: partitionsOf(header) }, (_, p) => {
      const epochKeys = keys.epoch(scope, uid, p);
      return [
        epochKeys.state,
        epochKeys.slices,
        ...Array.from({ length: filters }, (_, index) => epochKeys.filter(index)),
      ];
    });
    return [...partitions, [keys.plan(scope, uid)]];
  }

  async #memory(groups: readonly (readonly string[])[]): Promise<number> {
    const sizes = await Promise.all(
      groups
        .flat()
        .map(async (key) =>
          Number((await this.#ctx.call(key, ['MEMORY', 'USAGE', key, 'SAMPLES', '0'], 'measuring memory')) ?? 0),
        ),
    );
    return sizes.reduce((sum, bytes) => sum + bytes, 0);
  }

  /** Deletes a dropped epoch's keys (UNLINK, one call per slot: freed in the background), then its drop record. */
  async #deleteData(scope: string, entry: EpochEntry): Promise<number> {
    const doing = `deleting ${scope}/${entry.header.epoch}`;
    // A drop of an open epoch cannot happen (the engine drops sealed ones); its grown slices are in the sealed header.
    const groups = this.#dataKeys(scope, entry.uid, entry.header);
    const bytes = await this.#memory(groups);
    await Promise.all(groups.map((keys) => this.#ctx.call(keys[0]!, ['UNLINK', ...keys], doing)));
    const drops = this.#ctx.keys.drops(scope);
    await this.#ctx.call(drops, ['HDEL', drops, String(entry.header.epoch)], doing);
    return bytes;
  }
}

function parse(json: string, what: string): unknown {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new SeenStoreError('STORE_CORRUPT', `${what}: not JSON (${(error as Error).message})`, { cause: error });
  }
}

function parseEntry(json: string, scope: string, n: number): EpochEntry {
  const value = parse(json, `epoch entry ${scope}/${n}`) as Partial<EpochEntry>;
  if (typeof value?.uid !== 'string' || !/^[0-9a-f]{16}$/.test(value.uid))
    throw new SeenStoreError('STORE_CORRUPT', `epoch entry ${scope}/${n}: no epoch id`);
  return { uid: value.uid, header: readEpochHeader(value.header) };
}
