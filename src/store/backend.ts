import { SeenStoreError } from '../errors.js';
import type { Keys } from '../hash/xxhash.js';
import type { DriverManifest } from './driver.js';
import type { NodeRegistry } from './nodes.js';
import type { EpochHeader, ScopeRecord } from './records.js';
import type { QueueKeyMode } from '../url/queue-key.js';
import type { Deliveries, DeliveryWrite } from './deliveries.js';
import type { MigrationReport, StoreMaintenance } from './maintenance.js';

/**
 * The storage seam: what the epoch engine (src/epochs) needs from wherever the bits live. Above it
 * nothing knows a backend by name: it reads the driver's capabilities (store/driver.ts); below it
 * each backend keeps its own durability tactics.
 *
 * Rules of the seam (docs/architecture.md):
 * - Every method that may touch storage may be remote, so it returns a promise.
 * - A decision that must be atomic (add-if-absent with slice growth and the "still open?" check,
 *   a rotation, the creation of a scope, an import, a merge) is one call; what the engine must
 *   decide inside it is passed as data, or as a pure function of the backend's caught-up state
 *   (`RotateRequest.next`, the `check` of `EpochBits.merge`) that does no I/O of its own.
 * - The backend receives validated, normalised keys, never raw input; it hashes them with the
 *   one epoch hasher (filters/epoch-hasher.ts) for the epoch's seeds, because an add that grows
 *   the epoch must hash again for the new slice inside its atomic step.
 * - Errors are SeenStoreErrors with the documented codes; a capability a backend lacks is
 *   UNSUPPORTED (see `Capabilities`).
 * - What the engine validated (counting epochs for count/delete, payloads per id, scope names,
 *   URL keys) a backend may assert (INTERNAL), never check again as a user error.
 * - An optional method (`?`) has a default in the engine (epochs/seam-defaults.ts), served by the
 *   backend's other methods; a backend with a cheaper way keeps its own.
 */
export interface Backend {
  /** The driver that opened it: its name and capabilities. */
  readonly driver: DriverManifest;
  /** Where the store is, fit for messages (no password). */
  readonly location: string;
  readonly readOnly: boolean;
  /** Operations on the whole open store: set exactly when `driver.capabilities.maintenance`. */
  readonly maintenance?: StoreMaintenance;
  /** The serve nodes sharing the store (URLFrontier's ListNodes), kept where the store's data is. */
  readonly nodes: NodeRegistry;

  /** Names of the scopes that exist. */
  scopeNames(): Promise<string[]>;
  /** The scope record, or undefined when the scope does not exist (yet). */
  scopeRecord(scope: string): Promise<ScopeRecord | undefined>;
  /**
   * Epoch `n`'s header as stored now; NOT_FOUND when it does not exist (never created, or pruned).
   * Default: `epoch(scope, n)`'s header — a driver whose `epoch` loads bits reads the header alone.
   */
  epochHeader?(scope: string, n: number): Promise<EpochHeader>;
  /** Numbers of the scope's epochs that exist, ascending. */
  epochNumbers(scope: string): Promise<number[]>;

  /**
   * Creates the scope with `first` as its open epoch 1, unless it exists: of racing creators
   * (processes, machines), the first to commit wins and every caller gets the winner's record.
   * Durable when it resolves (as are rotate, importEpoch and dropEpoch).
   */
  createScope(scope: string, first: EpochHeader): Promise<ScopeRecord>;
  /**
   * Seals the open epoch and opens the one `request.next` plans, atomically: adds racing the
   * rotation land in exactly one epoch, and the sealed epoch's final counts include all of them.
   * Resolves null when `request.ifEpoch` is given and is not the open epoch.
   */
  rotate(scope: string, request: RotateRequest): Promise<Rotation | null>;
  /**
   * Creates a scope from an exported epoch: the data goes in first, then one atomic step makes the
   * scope appear with the imported epoch (and `next`, when given, as its open epoch). The scope
   * must not exist (USAGE). Interrupted or failed, it leaves no scope.
   */
  importEpoch(request: ImportRequest): Promise<ScopeRecord>;
  /**
   * Drops a sealed epoch: gone for every reader at once, then its data deleted. A drop that a
   * crash interrupted is finished by `finishDrops`. Resolves with the bytes it gave back.
   */
  dropEpoch(header: EpochHeader): Promise<number>;
  /**
   * Deletes a scope with its epochs, its frontier and its settings: gone for every reader at once,
   * then its data deleted. Resolves undefined when the scope does not exist.
   */
  deleteScope(scope: string): Promise<DeletedScope | undefined>;
  /**
   * Finishes drops (and failed imports) that a crash interrupted; their epochs, with what was
   * recorded of them. Default: none (a driver whose drop is one step leaves none half done).
   */
  finishDrops?(scope: string): Promise<EpochHeader[]>;
  /** What an epoch occupies in the backend, without loading its filters. */
  usage(header: EpochHeader): Promise<EpochUsage>;

  /** The bits of epoch `n` (NOT_FOUND when it does not exist). */
  epoch(scope: string, n: number): Promise<EpochBits>;

  /** The scope's frontier: its queue of discovered, not yet finished URLs. */
  frontier(scope: string): Promise<Frontier>;
  /** The scope's undelivered batches: recorded URLs a command has not yet handed to its reader. */
  deliveries(scope: string): Promise<Deliveries>;

  /**
   * Brings what the store keeps in an earlier layout to this version's while the store stays in
   * use (a shared server's store: the Redis frontier's key layout, docs/redis.md "Frontier").
   * Absent where migrations run on a closed store (`Driver.offline`).
   */
  migrate?(): Promise<MigrationReport>;

  /** Writes what must be written (checkpoints) and releases everything. Idempotent. Default: nothing to do (a store in this process's memory). */
  close?(): Promise<void>;
}

/**
 * One epoch's bits. Reads see every add that any process (or machine) had acknowledged when
 * the read began.
 */
export interface EpochBits {
  /** The header as of the last call: slices grow while the epoch is open, and a rotation seals it. */
  readonly header: EpochHeader;
  /** True for a counting epoch (one-byte counters: `count` and `delete` work). */
  readonly counting: boolean;

  /**
   * The atomic add-if-absent of a batch of keys (at most MAX_BATCH_URLS), in order: answers[i]
   * (when given) is true for the keys that were new; duplicates within the batch are new once.
   * Grows the epoch when its newest slice is full. EPOCH_SEALED, with nothing added, when the
   * epoch is no longer the scope's open epoch — or {@link PartlyDecided} when a backend whose
   * epoch is partitioned had decided some keys before a rotation sealed the rest (each key
   * lands in exactly one epoch). Resolves when the batch is durable, with the number
   * of new keys. With `enqueue` (one URL per key, and `answers` given), the URLs of the new keys
   * join the scope's frontier in the same atomic step: a URL is queued exactly when it is new.
   * With `deliver` (and `answers` given), the batch's new URLs are kept as undelivered, and the
   * owner's batches it names as delivered deleted, in the same atomic step (Deliveries).
   */
  addIfAbsent(
    keys: Keys,
    answers: boolean[] | undefined,
    enqueue?: QueueItems,
    deliver?: DeliveryWrite,
  ): Promise<number>;
  /** Membership of each key: out[i] = 1 when the epoch (probably) holds key i, else 0. */
  has(keys: readonly string[], out: Uint8Array): Promise<void>;
  /** Counting epochs: out[i] += the count of key i (recurring minimum), 0 when absent. */
  count(keys: readonly string[], out: number[]): Promise<void>;
  /** Counting epochs: one occurrence of each key out of the open epoch; resolves durable, with how many. */
  delete(keys: readonly string[]): Promise<number>;

  /** Counts and fill of the epoch now. */
  summary(): Promise<EpochSummary>;
  /** The whole epoch as an export file holds it: header, counts, and every filter's bytes. */
  contents(): Promise<EpochContents>;
  /**
   * ORs `filters` (one per filter of every slice, shaped like `contents().filters`) into the open
   * epoch, atomically. `check` runs inside the atomic step on the caught-up header and throws to
   * refuse. Resolves with the distinct URLs the merge brought in, estimated from the fill.
   */
  merge(filters: readonly Uint8Array[], check: (header: EpochHeader) => void): Promise<number>;

  /** Folds what the backend logged into the epoch's durable form now (`capabilities.checkpoints`). Default: 'clean' (no log to fold). */
  checkpoint?(): Promise<CheckpointOutcome>;
}

/** What a deleted scope held. */
export interface DeletedScope {
  readonly epochs: number;
  /** URLs its frontier held (waiting, scheduled or leased). */
  readonly queuedUrls: number;
}

export type CheckpointOutcome = 'written' | 'clean' | 'busy';

/**
 * EPOCH_SEALED for part of a batch: a rotation sealed the epoch while the batch was being decided
 * partition by partition. The keys with decided[i] = 1 were decided in this epoch (their answers
 * are set, `added` of them were new, durably); the others were not touched and belong to the next
 * epoch.
 */
export class PartlyDecided extends SeenStoreError {
  readonly decided: Uint8Array;
  readonly added: number;

  constructor(message: string, decided: Uint8Array, added: number) {
    super('EPOCH_SEALED', message);
    this.decided = decided;
    this.added = added;
  }
}

/**
 * A scope's frontier: URLs found new (EpochBits.addIfAbsent with `enqueue`) or scheduled for a
 * revisit wait here, each in the queue of its key (by default its host: src/url/queue-key.ts),
 * until a crawler takes them under a lease and reports them done. A lease that runs out (the
 * crawler died) makes its URLs takeable again: delivery is at least once, discovery exactly once.
 *
 * Every entry has a due time: when it was queued (discovered URLs), or the time it is scheduled
 * for (revisits). Entries due later than now wait and are not takeable. Within a queue, entries
 * are taken in due order (ties: the order they were queued).
 *
 * Politeness (docs/frontier.md "Queues and politeness"): a queue is *ready* when it has an entry
 * due, its delay since its last take has passed (its own delay, else the frontier's default),
 * it is not blocked (blockUntil), it has fewer than `maxInFlightPerQueue` entries leased (0: no
 * limit) and fewer than its crawl limit completed. `take` hands out only ready queues, the one
 * that became ready first first, and finds them through an index of ready times: its cost does
 * not grow with the number of queues. The gate is atomic: with several takers at once, no queue
 * is handed out twice within its delay.
 */
export interface Frontier {
  /**
   * Up to `count` due URLs of ready queues, at most `perQueue` of each queue (and at most
   * `maxQueues` queues), each leased for `leaseMs` from now; every queue handed out starts its
   * delay again. Leases that ran out are given back first. Atomic and durable.
   */
  take(request: TakeRequest): Promise<LeasedUrl[]>;
  /**
   * Finishes leased or waiting URLs by id: they leave the frontier and count as completed in their
   * queue (toward its crawl limit); unknown ids (finished already) are skipped. With
   * `refetchAtMs[i]` (> 0), URL i is instead rescheduled: it waits until then, its attempts start
   * again from 0, and it still counts as completed. `failed`: the URLs were given up on, counted
   * in the frontier's `failed` instead of its `done`. Resolves with how many ids were there.
   */
  done(ids: readonly string[], refetchAtMs?: readonly number[], failed?: boolean): Promise<number>;
  /**
   * Gives leased URLs back before their lease runs out (to be taken again); `data[i]`, when given,
   * replaces what is kept with URL i. Resolves with how many were leased.
   */
  release(ids: readonly string[], data?: readonly unknown[]): Promise<number>;
  /** Gives back at once every lease that `owner` took (a restarted crawler taking back its predecessor's). */
  reclaim(owner: string): Promise<number>;
  /**
   * Known URLs (URLFrontier's KnownURLItem): URL i waits in queue `items.queues[i]` until
   * `atMs[i]`, whether or not it was queued before (a queued or leased entry of the same URL is
   * moved to that time, its lease ended); `atMs[i]` of 0 finishes it instead, as `done` does (and
   * queues nothing when it was not queued). Atomic per call; durable when it resolves. Resolves
   * with how many URLs now wait.
   */
  schedule(items: QueueItems, atMs: readonly number[]): Promise<number>;
  /** The entry of one URL, if it is queued, scheduled or leased. */
  urlStatus(url: string): Promise<UrlStatus | undefined>;

  /** The frontier's settings (the defaults the first time). */
  settings(): Promise<FrontierSettings>;
  /**
   * The settings, with the queue key pinned, in one atomic step: from then on `configure` refuses
   * to change `queueKey`. What an enqueue reads before it computes its URLs' queues (and what a
   * caller that keeps the key reads), so that the key it computed with is the frontier's when
   * its URLs are queued, whoever configures meanwhile.
   */
  pinnedSettings(): Promise<FrontierSettings>;
  /** Changes settings; `queueKey` only while the frontier has never queued a URL nor pinned its key (else USAGE). */
  configure(change: Partial<FrontierSettings>): Promise<FrontierSettings>;
  /**
   * Changes one queue's politeness: its own delay (null: the default again), the time before which
   * it hands out nothing (Retry-After, robots Crawl-delay; 0 unblocks), and its crawl limit (null:
   * none). A queue that holds no URL keeps its settings (a block or a delay set before its URLs arrive).
   */
  setQueue(key: string, change: QueueChange): Promise<void>;
  /** Queues that hold URLs (waiting, scheduled or leased), in key order, from `after` (exclusive). */
  queues(options: { readonly after?: string; readonly limit: number }): Promise<QueueStats[]>;
  /** One queue's counts and settings; undefined when it holds no URL and has no settings. */
  queue(key: string): Promise<QueueStats | undefined>;
  /** Removes a queue: its URLs (waiting, scheduled and leased) and its settings. Resolves with how many URLs it held. */
  deleteQueue(key: string): Promise<number>;
  /**
   * Removes every queue; resolves with how many URLs they held. With `completed`, the count of
   * URLs finished since the frontier began starts again from 0 (URLFrontier's DeleteCrawl: a
   * deleted crawl shows nothing completed).
   */
  clear(options?: { readonly completed?: boolean }): Promise<number>;

  /** Owners that took at or after `sinceMs` (host affinity's live owners), recorded by take. */
  owners(sinceMs: number): Promise<string[]>;
  stats(): Promise<FrontierStats>;
  /**
   * Calls `onBatch` with the URLs of every waiting, scheduled and leased entry, in batches: a
   * read, nothing changes (a set-difference summary of the frontier, src/setdiff/).
   */
  forEachUrl(onBatch: (urls: string[]) => void): Promise<void>;
  /**
   * A page of the entries (waiting, scheduled and leased), of one queue or all, from `cursor` (a
   * previous page's; none: the first page): a read, nothing changes. At most `limit` entries;
   * no cursor back: the last page. Entries queued or removed meanwhile may or may not be seen.
   */
  entries(options: { readonly cursor?: string; readonly limit: number; readonly queue?: string }): Promise<EntryPage>;
  /** Removes the entries of `ids` that were created before `beforeMs`, in one atomic step, without counting them completed; resolves with how many. */
  purge(ids: readonly string[], beforeMs: number): Promise<number>;
}

/** One entry as `entries` lists it. */
export interface FrontierEntry {
  readonly id: string;
  readonly url: string;
  readonly queue: string;
  readonly state: 'waiting' | 'scheduled' | 'leased';
  /** When it is due (waiting and scheduled), or its lease ends (leased). */
  readonly atMs: number;
  /** When the URL was first stored in the frontier (entries written before this was kept: their due time). */
  readonly createdMs: number;
  readonly data?: unknown;
}

export interface EntryPage {
  readonly entries: FrontierEntry[];
  readonly cursor?: string;
}

export interface TakeRequest {
  /** Most URLs in all (1 to MAX_TAKE). */
  readonly count: number;
  readonly leaseMs: number;
  readonly owner?: string;
  /** Most URLs of one queue (>= 1). */
  readonly perQueue: number;
  /** Most queues handed out (0: no limit but `count`). */
  readonly maxQueues: number;
  /** Only this queue (URLFrontier's GetURLs `key`). */
  readonly queue?: string;
  /**
   * Only ready queues for which this is true (host affinity: the queues the owner owns on the
   * ring of live owners). Asked in the order the queues became ready; a backend may ask it of a
   * queue and then find the queue taken by a racing taker.
   */
  readonly owns?: (queue: string) => boolean;
}

/** A scope's frontier settings, kept with its frontier. */
export interface FrontierSettings {
  /** How URLs are grouped into queues; fixed once a URL was queued. */
  readonly queueKey: QueueKeyMode;
  /** Milliseconds between two takes of one queue, unless the queue has its own (>= 0). */
  readonly delayMs: number;
  /** Most URLs of one queue leased at once (0: no limit). */
  readonly maxInFlightPerQueue: number;
}

/** A new frontier's settings: one queue per host, a second between two takes of a host, no in-flight limit. */
export const DEFAULT_FRONTIER_SETTINGS: FrontierSettings = { queueKey: 'host', delayMs: 1_000, maxInFlightPerQueue: 0 };

/** What configure throws for a change of the queue key once URLs were queued or the key was pinned (Frontier.pinnedSettings). */
export function queueKeyFixedError(queueKey: QueueKeyMode): SeenStoreError {
  return new SeenStoreError(
    'USAGE',
    `the frontier's queue key is ${queueKey}: it cannot change once URLs were queued or an enqueue read it`,
  );
}

export interface QueueChange {
  readonly delayMs?: number | null;
  readonly blockedUntilMs?: number;
  readonly crawlLimit?: number | null;
}

export interface QueueStats {
  readonly key: string;
  /** Entries not leased: due now or later (scheduled) — URLFrontier's queue size. */
  readonly waiting: number;
  /** Entries leased, lease still running. */
  readonly leased: number;
  /** Entries finished (done, or known without a refetch time) since the queue began. */
  readonly completed: number;
  /** The queue's own delay, if it has one. */
  readonly delayMs?: number;
  /** 0 when not blocked. */
  readonly blockedUntilMs: number;
  readonly crawlLimit?: number;
  /** The earliest time take may hand it out (it may be in the past); undefined when nothing could be (empty, at its crawl limit, or at its in-flight limit). */
  readonly readyAtMs?: number;
}

export interface UrlStatus {
  readonly id: string;
  readonly queue: string;
  readonly state: 'waiting' | 'scheduled' | 'leased';
  /** When it is due (waiting and scheduled), or its lease ends (leased). */
  readonly atMs: number;
  readonly attempts: number;
  readonly epoch: number;
  /** When the URL was first stored in the frontier (FrontierEntry.createdMs). */
  readonly createdMs: number;
}

/** What an enqueue queues for each key: its URL, the queue it joins, and optionally a payload kept with it. */
export interface QueueItems {
  readonly urls: readonly string[];
  /** queues[i]: the queue key of URL i (FrontierSettings.queueKey of it, or a key the caller gave). */
  readonly queues: readonly string[];
  /** data[i] is kept with URL i and handed back by take (a crawler's request: label, depth, retries). */
  readonly data?: readonly unknown[];
}

export interface LeasedUrl {
  /** The frontier's id of the entry: what done and release take. */
  readonly id: string;
  readonly url: string;
  readonly queue: string;
  /** The epoch the URL was found new in (scheduled URLs: the open epoch when they were scheduled). */
  readonly epoch: number;
  /** Times it was taken, this one included (more than 1: an earlier taker's lease ran out). */
  readonly attempts: number;
  readonly leaseUntilMs: number;
  /** What was queued with the URL (or given by the last release), if anything. */
  readonly data?: unknown;
}

export interface FrontierStats {
  /** Waiting to be taken, due now or scheduled later (including those whose lease ran out). */
  readonly pending: number;
  /** Taken, lease still running. */
  readonly leased: number;
  /** Finished since the frontier began, failures not included. */
  readonly done: number;
  /** Finished as failures since the frontier began (`done` with `failed: true`): given up on, not fetched. */
  readonly failed: number;
  /** Queues that hold URLs. */
  readonly queues: number;
}

export interface RotateRequest {
  /** The epoch the caller found open; EPOCH_SEALED when it no longer is (another rotation won). */
  readonly epoch: number;
  /** Rotate only if this epoch is the open one, else resolve null (two schedulers rotate once). */
  readonly ifEpoch?: number;
  /**
   * The next epoch's header, planned from the epoch being sealed, its final summary and the epoch
   * before it (undefined when there is none). Pure; called inside the backend's atomic step.
   */
  readonly next: (sealing: EpochHeader, summary: EpochSummary, previous: EpochHeader | undefined) => EpochHeader;
}

export interface Rotation {
  readonly sealed: EpochHeader;
  readonly opened: EpochHeader;
}

export interface ImportRequest {
  readonly scope: string;
  /** The imported epoch's header as it will be stored (its scope, state and final counts set). */
  readonly epoch: EpochHeader;
  readonly counts: EpochCounts & { readonly sliceAdded: readonly number[] };
  /** One byte array per filter of every slice of `epoch`. */
  readonly filters: readonly Uint8Array[];
  /** A fresh open epoch after the imported one; absent when the imported epoch stays open. */
  readonly next?: EpochHeader;
  /** Stops the import at a safe point (INTERRUPTED); what it wrote is removed. */
  readonly signal?: AbortSignal;
}

export interface EpochCounts {
  /** URLs submitted to add / addIfAbsent. */
  readonly submitted: number;
  /** URLs that were new when added. */
  readonly added: number;
}

export interface SliceSummary {
  readonly capacityUrls: number;
  readonly fprTarget: number;
  readonly mBits: number;
  readonly k: number;
  readonly filters: number;
  readonly added: number;
  readonly fillRatio: number;
  readonly estimatedFpr: number;
}

export interface EpochSummary extends EpochCounts {
  readonly estimatedDistinct: number;
  /** Set bits over all bits of all slices. */
  readonly fillRatio: number;
  /** False-positive rate of a query now: the union over slices of each slice's rate from its fill. */
  readonly estimatedFpr: number;
  readonly slices: readonly SliceSummary[];
}

export interface EpochContents {
  readonly header: EpochHeader;
  readonly summary: EpochSummary;
  /** New URLs per slice (from adds, plus what merges brought in). */
  readonly sliceAdded: readonly number[];
  /** The bytes of every filter of every slice, in filter order. */
  readonly filters: readonly Uint8Array[];
}

export interface EpochUsage {
  /** Bytes the backend holds for the epoch's bits and log. */
  readonly bytesOnDisk: number;
  /** Records of the backend's write log not yet folded into the bits by a checkpoint; 0 for a backend without one. */
  readonly pendingRecords: number;
}

export type { Deliveries, DeliveryWrite, UndeliveredBatch, UndeliveredKey } from './deliveries.js';
export type {
  Damage,
  DiskUsage,
  MigrationReport,
  RestoreResult,
  SalvageReport,
  SalvageSkip,
  SnapshotInfo,
  StoreMaintenance,
  VerifyReport,
} from './maintenance.js';
