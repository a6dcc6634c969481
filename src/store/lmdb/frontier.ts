import { DEFAULT_FRONTIER_SETTINGS, type FrontierSettings, type QueueStats, type TakeRequest, type UrlStatus } from '../backend.js';
import { SeenStoreError } from '../../errors.js';
import type { Frontier, FrontierStats, LeasedUrl, QueueItems } from '../backend.js';
import { faultPoint } from '../faults.js';
import type { StoreEnv } from './env.js';
import { frontierEntryKey, frontierKeyId, frontierRange, frontierStateKey } from './keys.js';
import { parseFrontierId } from '../frontier-id.js';

/** A scope's frontier state record (docs/format.md). */
interface FrontierState {
  readonly v: 1;
  /** Id of the next URL queued. */
  readonly nextId: number;
  /** URLs finished since the frontier began. */
  readonly done: number;
}

/** One queued URL (docs/format.md). `leaseUntilMs` 0: waiting. */
interface FrontierEntry {
  readonly v: 1;
  readonly url: string;
  readonly epoch: number;
  readonly atMs: number;
  readonly leaseUntilMs: number;
  readonly attempts: number;
  /** Who holds the lease (take's owner), when one was given. */
  readonly owner?: string;
  readonly data?: unknown;
}

/** URLs per batch that forEachUrl hands over. */
const LIST_BATCH_URLS = 10_000;

/** Most entries one take looks at past the ones it hands out (leased ones at the head): bounds a take's transaction. */
const TAKE_SCAN_MAX = 1_000_000;

function readState(env: StoreEnv, scope: string): FrontierState {
  const db = env.frontierDb;
  const bytes = db?.getBinary(frontierStateKey(scope));
  if (bytes === undefined) return { v: 1, nextId: 1, done: 0 };
  const state = env.decodeMeta(bytes, `frontier state of ${scope}`) as Partial<FrontierState>;
  if (state.v !== 1 || !Number.isSafeInteger(state.nextId) || !Number.isSafeInteger(state.done)) {
    throw new SeenStoreError(state.v !== undefined && state.v > 1 ? 'FORMAT_UNSUPPORTED' : 'STORE_CORRUPT', `frontier state of ${scope}: malformed or of an unknown version`);
  }
  return state as FrontierState;
}

function readEntry(env: StoreEnv, scope: string, id: number, bytes: Uint8Array): FrontierEntry {
  const entry = env.decodeMeta(bytes, `frontier entry ${scope}/${id}`) as Partial<FrontierEntry>;
  if (entry.v !== 1 || typeof entry.url !== 'string' || !Number.isSafeInteger(entry.epoch) || typeof entry.leaseUntilMs !== 'number' || !Number.isSafeInteger(entry.attempts)) {
    throw new SeenStoreError(entry.v !== undefined && entry.v > 1 ? 'FORMAT_UNSUPPORTED' : 'STORE_CORRUPT', `frontier entry ${scope}/${id}: malformed or of an unknown version`);
  }
  return entry as FrontierEntry;
}

/**
 * Queues the URLs whose answer is true (inside the add's write transaction, after deciding): the
 * entries commit with the batch's journal record, or neither does.
 */
export function queueNew(env: StoreEnv, scope: string, epoch: number, items: QueueItems, answers: readonly boolean[], atMs: number): void {
  const { urls, data } = items;
  const db = env.frontierDb;
  if (db === undefined) throw new SeenStoreError('INTERNAL', 'invariant broken: the frontier database exists before an enqueue writes');
  const state = readState(env, scope);
  let id = state.nextId;
  for (let i = 0; i < urls.length; i++) {
    if (!answers[i]) continue;
    const entry: FrontierEntry = { v: 1, url: urls[i]!, epoch, atMs, leaseUntilMs: 0, attempts: 0, ...(data?.[i] === undefined ? {} : { data: data[i] }) };
    db.putSync(frontierEntryKey(scope, id), env.encodeRecord(entry));
    id++;
  }
  if (id !== state.nextId) db.putSync(frontierStateKey(scope), env.encodeRecord({ ...state, nextId: id }));
}

/** The LMDB backend's frontier of one scope: entries in the frontier database, every change one write transaction. */
export class LmdbFrontier implements Frontier {
  readonly #env: StoreEnv;
  readonly #scope: string;
  readonly #clock: () => number;

  constructor(env: StoreEnv, scope: string, clock: () => number) {
    this.#env = env;
    this.#scope = scope;
    this.#clock = clock;
  }

  async take({ count, leaseMs, owner }: TakeRequest): Promise<LeasedUrl[]> {
    const env = this.#env;
    const db = env.ensureFrontierDb();
    const taken = env.write(() => {
      const now = this.#clock();
      const out: LeasedUrl[] = [];
      let looked = 0;
      for (const { key, value } of db.getRange(frontierRange(this.#scope))) {
        if (out.length >= count || looked++ >= count + TAKE_SCAN_MAX) break;
        const id = frontierKeyId(key);
        const entry = readEntry(env, this.#scope, id, value);
        if (entry.leaseUntilMs > now) continue;
        const { owner: _previous, ...free } = entry;
        const leased: FrontierEntry = { ...free, leaseUntilMs: now + leaseMs, attempts: entry.attempts + 1, ...(owner === undefined ? {} : { owner }) };
        db.putSync(key, env.encodeRecord(leased));
        out.push({
          id: String(id),
          url: entry.url,
          queue: '',
          epoch: entry.epoch,
          attempts: leased.attempts,
          leaseUntilMs: leased.leaseUntilMs,
          ...(entry.data === undefined ? {} : { data: entry.data }),
        });
      }
      faultPoint('frontier:take-before-commit');
      return out;
    });
    await env.flushed();
    faultPoint('frontier:take-after-commit');
    return taken;
  }

  async done(ids: readonly string[]): Promise<number> {
    return this.#change(ids, 'done', (db, key) => {
      db.removeSync(key);
      return true;
    });
  }

  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    if (data !== undefined && data.length !== ids.length) throw new SeenStoreError('USAGE', `release: ${data.length} payloads for ${ids.length} ids`);
    return this.#change(ids, 'release', (db, key, entry, i) => {
      if (entry.leaseUntilMs === 0) return false;
      db.putSync(key, this.#env.encodeRecord(unleased(entry, data?.[i])));
      return true;
    });
  }

  async reclaim(owner: string): Promise<number> {
    const env = this.#env;
    const db = env.frontierDb;
    if (db === undefined) return 0;
    const released = env.write(() => {
      const now = this.#clock();
      let n = 0;
      for (const { key, value } of db.getRange(frontierRange(this.#scope))) {
        const entry = readEntry(env, this.#scope, frontierKeyId(key), value);
        if (entry.owner !== owner || entry.leaseUntilMs <= now) continue;
        db.putSync(key, env.encodeRecord(unleased(entry, undefined)));
        n++;
      }
      return n;
    });
    await env.flushed();
    return released;
  }

  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    const env = this.#env;
    env.refresh();
    const db = env.frontierDb;
    if (db === undefined) return;
    let batch: string[] = [];
    for (const { key, value } of db.getRange(frontierRange(this.#scope))) {
      batch.push(readEntry(env, this.#scope, frontierKeyId(key), value).url);
      if (batch.length < LIST_BATCH_URLS) continue;
      onBatch(batch);
      batch = [];
    }
    if (batch.length > 0) onBatch(batch);
  }

  // Issue 28 seam in progress: the v2 frontier operations below are not built on this backend yet.
  async schedule(): Promise<number> { throw unsupportedFrontier('schedule'); }
  async urlStatus(): Promise<UrlStatus | undefined> { throw unsupportedFrontier('urlStatus'); }
  async settings(): Promise<FrontierSettings> { return DEFAULT_FRONTIER_SETTINGS; }
  async configure(): Promise<FrontierSettings> { throw unsupportedFrontier('configure'); }
  async setQueue(): Promise<void> { throw unsupportedFrontier('setQueue'); }
  async queues(): Promise<QueueStats[]> { throw unsupportedFrontier('queues'); }
  async queue(): Promise<QueueStats | undefined> { throw unsupportedFrontier('queue'); }
  async deleteQueue(): Promise<number> { throw unsupportedFrontier('deleteQueue'); }
  async clear(): Promise<number> { throw unsupportedFrontier('clear'); }
  async owners(): Promise<string[]> { return []; }

  async stats(): Promise<FrontierStats> {
    const env = this.#env;
    env.refresh();
    const db = env.frontierDb;
    if (db === undefined) return { pending: 0, leased: 0, done: 0, queues: 0 };
    const now = this.#clock();
    let pending = 0;
    let leased = 0;
    for (const { key, value } of db.getRange(frontierRange(this.#scope))) {
      if (readEntry(env, this.#scope, frontierKeyId(key), value).leaseUntilMs > now) leased++;
      else pending++;
    }
    return { pending, leased, done: readState(env, this.#scope).done, queues: pending + leased > 0 ? 1 : 0 };
  }

  /** Applies `change` to each entry named by `ids` that exists, in one write transaction; counts finished ones. */
  async #change(
    ids: readonly string[],
    doing: 'done' | 'release',
    change: (db: NonNullable<StoreEnv['frontierDb']>, key: (string | number)[], entry: FrontierEntry, index: number) => boolean,
  ): Promise<number> {
    const numbers = ids.map((id) => parseFrontierId(id));
    const env = this.#env;
    const db = env.ensureFrontierDb();
    const changed = env.write(() => {
      let n = 0;
      numbers.forEach((id, index) => {
        const key = frontierEntryKey(this.#scope, id);
        const bytes = db.getBinary(key);
        if (bytes !== undefined && change(db, key, readEntry(env, this.#scope, id, bytes), index)) n++;
      });
      if (doing === 'done' && n > 0) {
        const state = readState(env, this.#scope);
        db.putSync(frontierStateKey(this.#scope), env.encodeRecord({ ...state, done: state.done + n }));
      }
      faultPoint('frontier:change-before-commit');
      return n;
    });
    await env.flushed();
    return changed;
  }
}

/** Every frontier record that does not read back (for verify): each with its place and the error. */
export function verifyFrontier(env: StoreEnv): { where: string; error: unknown }[] {
  const db = env.frontierDb;
  if (db === undefined) return [];
  const found: { where: string; error: unknown }[] = [];
  for (const { key, value } of db.getRange({})) {
    const [scope, id] = key as unknown as [string, number];
    const where = `frontier ${JSON.stringify(key)}`;
    try {
      if (typeof scope !== 'string' || !Number.isSafeInteger(id) || id < 0) throw new SeenStoreError('STORE_CORRUPT', 'not a frontier key');
      if (id === 0) readState(env, scope);
      else readEntry(env, scope, id, value);
    } catch (error) {
      found.push({ where, error });
    }
  }
  return found;
}

/** The entry waiting again, its lease and owner gone; `data` replaces its payload when given. */
function unleased(entry: FrontierEntry, data: unknown): FrontierEntry {
  const { owner: _owner, ...rest } = entry;
  return { ...rest, leaseUntilMs: 0, ...(data === undefined ? {} : { data }) };
}

function unsupportedFrontier(what: string): SeenStoreError {
  return new SeenStoreError('UNSUPPORTED', `frontier ${what}: not built on this backend yet (issue 28 in progress)`);
}
