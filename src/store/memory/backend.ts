import { SeenStoreError, assert } from '../../errors.js';
import type { Keys, XxHash } from '../../hash/xxhash.js';
import type {
  Backend,
  DeletedScope,
  Deliveries,
  DeliveryWrite,
  EpochBits,
  EpochContents,
  EpochSummary,
  EpochUsage,
  Frontier,
  ImportRequest,
  QueueItems,
  Rotation,
  RotateRequest,
} from '../backend.js';
import type { OpenOptions } from '../driver.js';
import { safePoint } from '../interruption.js';
import { sealHeader, type EpochHeader, type ScopeRecord } from '../records.js';
import { EpochFilters } from './bits.js';
import { memoryDriver, type MemoryOptions } from './driver.js';
import { MemoryFrontier } from './frontier.js';
import { MemoryDeliveries } from './deliveries.js';
import { LocalNodes } from '../nodes.js';

/** A scope's state: its record, its epochs' filters by number, and its frontier. */
interface ScopeState {
  record: ScopeRecord;
  readonly epochs: Map<number, EpochFilters>;
}

/** What one `memory://NAME` holds, for as long as the process lives. */
interface MemoryStore {
  readonly scopes: Map<string, ScopeState>;
  readonly frontiers: Map<string, MemoryFrontier>;
  readonly deliveries: Map<string, MemoryDeliveries>;
  /** The serve nodes of this store: only processes' own, since no other process sees it. */
  readonly nodes: LocalNodes;
}

/** Every memory store of the process, by location: a second open of one name shares the first's state. */
const STORES = new Map<string, MemoryStore>();

/**
 * The in-memory backend: the smallest complete backend, and the one a new driver's author copies.
 * JavaScript runs one call at a time, so every method is atomic by running without an await
 * between its check and its change; a driver whose storage is shared must make each such step
 * one transaction (LMDB) or one server-side call (Redis).
 */
export class MemoryBackend implements Backend {
  readonly driver = memoryDriver;
  readonly location: string;
  readonly readOnly: boolean;
  readonly #hash: XxHash;
  readonly #now: () => number;
  readonly #store: MemoryStore;

  private constructor(location: string, common: OpenOptions, options: MemoryOptions, store: MemoryStore) {
    this.location = location;
    this.readOnly = common.readOnly;
    this.#hash = common.hash;
    this.#now = options.clock;
    this.#store = store;
  }

  get nodes(): LocalNodes {
    return this.#store.nodes;
  }

  static async open(location: string, common: OpenOptions, options: MemoryOptions): Promise<MemoryBackend> {
    let store = STORES.get(location);
    if (store === undefined) {
      if (!common.create || common.readOnly) throw new SeenStoreError('NOT_FOUND', `no store at ${location}`);
      store = { scopes: new Map(), frontiers: new Map(), deliveries: new Map(), nodes: new LocalNodes(options.clock) };
      STORES.set(location, store);
    }
    return new MemoryBackend(location, common, options, store);
  }

  async scopeNames(): Promise<string[]> {
    return [...this.#store.scopes.keys()].sort();
  }

  async scopeRecord(scope: string): Promise<ScopeRecord | undefined> {
    return this.#store.scopes.get(scope)?.record;
  }

  async epochNumbers(scope: string): Promise<number[]> {
    return [...(this.#store.scopes.get(scope)?.epochs.keys() ?? [])].sort((a, b) => a - b);
  }

  async createScope(scope: string, first: EpochHeader): Promise<ScopeRecord> {
    const existing = this.#store.scopes.get(scope);
    if (existing !== undefined) return existing.record;
    const record: ScopeRecord = { v: 1, name: scope, openEpoch: first.epoch, createdAtMs: this.#now() };
    this.#store.scopes.set(scope, { record, epochs: new Map([[first.epoch, new EpochFilters(this.#hash, first)]]) });
    return record;
  }

  async rotate(scope: string, request: RotateRequest): Promise<Rotation | null> {
    const state = this.#scope(scope);
    if (request.ifEpoch !== undefined && state.record.openEpoch !== request.ifEpoch) return null;
    if (state.record.openEpoch !== request.epoch) throw SeenStoreError.sealed(scope, request.epoch);
    const open = this.#filters(scope, request.epoch);
    const summary = open.summary();
    const opened = request.next(open.header, summary, state.epochs.get(request.epoch - 1)?.header);
    const sealed = sealHeader(open.header, summary, this.#now());
    open.header = sealed;
    state.epochs.set(opened.epoch, new EpochFilters(this.#hash, opened));
    state.record = { ...state.record, openEpoch: opened.epoch };
    return { sealed, opened };
  }

  async importEpoch(request: ImportRequest): Promise<ScopeRecord> {
    const { scope, epoch, next, signal } = request;
    if (this.#store.scopes.has(scope)) throw SeenStoreError.scopeExists(scope);
    const filters = new EpochFilters(this.#hash, epoch);
    filters.load(request.filters);
    filters.setCounts(request.counts, request.counts.sliceAdded);
    await safePoint(signal, `importing into ${scope}/${epoch.epoch}`);
    if (this.#store.scopes.has(scope)) throw SeenStoreError.scopeExists(scope);
    const epochs = new Map([[epoch.epoch, filters]]);
    if (next !== undefined) epochs.set(next.epoch, new EpochFilters(this.#hash, next));
    const record: ScopeRecord = { v: 1, name: scope, openEpoch: next?.epoch ?? epoch.epoch, createdAtMs: this.#now() };
    this.#store.scopes.set(scope, { record, epochs });
    return record;
  }

  async dropEpoch(header: EpochHeader): Promise<number> {
    const epochs = this.#scope(header.scope).epochs;
    const bytes = epochs.get(header.epoch)?.bytes ?? 0;
    epochs.delete(header.epoch);
    return bytes;
  }

  async deleteScope(scope: string): Promise<DeletedScope | undefined> {
    const state = this.#store.scopes.get(scope);
    if (state === undefined) return undefined;
    const held = await this.#store.frontiers.get(scope)?.stats();
    this.#store.scopes.delete(scope);
    this.#store.frontiers.delete(scope);
    return { epochs: state.epochs.size, queuedUrls: held === undefined ? 0 : held.pending + held.leased };
  }

  async usage(header: EpochHeader): Promise<EpochUsage> {
    return {
      bytesOnDisk: this.#store.scopes.get(header.scope)?.epochs.get(header.epoch)?.bytes ?? 0,
      pendingRecords: 0,
    };
  }

  async epoch(scope: string, n: number): Promise<EpochBits> {
    return new MemoryEpoch(
      this.#filters(scope, n),
      () => this.#expectOpen(scope, n),
      this.#frontier(scope),
      this.#deliveries(scope),
    );
  }

  async frontier(scope: string): Promise<Frontier> {
    return this.#frontier(scope);
  }

  async deliveries(scope: string): Promise<Deliveries> {
    return this.#deliveries(scope);
  }

  #deliveries(scope: string): MemoryDeliveries {
    let deliveries = this.#store.deliveries.get(scope);
    if (deliveries === undefined) {
      deliveries = new MemoryDeliveries();
      this.#store.deliveries.set(scope, deliveries);
    }
    return deliveries;
  }

  #scope(scope: string): ScopeState {
    const state = this.#store.scopes.get(scope);
    if (state === undefined) throw SeenStoreError.noScope(scope);
    return state;
  }

  #filters(scope: string, n: number): EpochFilters {
    const filters = this.#store.scopes.get(scope)?.epochs.get(n);
    if (filters === undefined) throw SeenStoreError.noEpoch(scope, n);
    return filters;
  }

  #frontier(scope: string): MemoryFrontier {
    let frontier = this.#store.frontiers.get(scope);
    if (frontier === undefined) {
      frontier = new MemoryFrontier(this.#now);
      this.#store.frontiers.set(scope, frontier);
    }
    return frontier;
  }

  #expectOpen(scope: string, n: number): void {
    if (this.#store.scopes.get(scope)?.record.openEpoch !== n) throw SeenStoreError.sealed(scope, n);
  }
}

/** One epoch behind the seam: its filters, the check that it is still open, and its scope's frontier. */
class MemoryEpoch implements EpochBits {
  readonly #filters: EpochFilters;
  readonly #expectOpen: () => void;
  readonly #frontier: MemoryFrontier;
  readonly #deliveries: MemoryDeliveries;

  constructor(filters: EpochFilters, expectOpen: () => void, frontier: MemoryFrontier, deliveries: MemoryDeliveries) {
    this.#filters = filters;
    this.#expectOpen = expectOpen;
    this.#frontier = frontier;
    this.#deliveries = deliveries;
  }

  get header(): EpochHeader {
    return this.#filters.header;
  }

  get counting(): boolean {
    return this.#filters.counting;
  }

  async addIfAbsent(
    keys: Keys,
    answers: boolean[] | undefined,
    enqueue?: QueueItems,
    deliver?: DeliveryWrite,
  ): Promise<number> {
    this.#expectOpen();
    const added = this.#filters.add(keys, answers);
    if (enqueue !== undefined) this.#frontier.enqueue(this.header.epoch, enqueue, answers!);
    if (deliver !== undefined) this.#deliveries.keepAdded(deliver, answers!);
    return added;
  }

  async has(keys: readonly string[], out: Uint8Array): Promise<void> {
    this.#filters.has(keys, out);
  }

  async count(keys: readonly string[], out: number[]): Promise<void> {
    this.#countingOnly('count');
    this.#filters.count(keys, out);
  }

  async delete(keys: readonly string[]): Promise<number> {
    this.#countingOnly('delete');
    this.#expectOpen();
    return this.#filters.delete(keys);
  }

  async summary(): Promise<EpochSummary> {
    return this.#filters.summary();
  }

  async contents(): Promise<EpochContents> {
    const filters = this.#filters;
    return {
      header: filters.header,
      summary: filters.summary(),
      sliceAdded: filters.sliceAdded,
      filters: filters.filterBytes(),
    };
  }

  async merge(incoming: readonly Uint8Array[], check: (header: EpochHeader) => void): Promise<number> {
    this.#expectOpen();
    check(this.header);
    return this.#filters.merge(incoming);
  }

  /** Scope.count and Scope.delete refuse an epoch that is not counting (USAGE) before they get here. */
  #countingOnly(doing: string): void {
    assert(this.counting, `${doing} reaches only counting epochs`);
  }
}
