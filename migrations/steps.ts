/**
 * The contract of a migration step: one numbered file per step from store format N to N + 1,
 * listed in order in index.ts. A step only reads and rewrites records through MigrationTxn; the
 * runner (src/store/migrate.ts) runs every step a store needs in one LMDB write transaction, after
 * a snapshot, and sets the store header's format last, so a crash leaves the old format intact.
 */
export interface MigrationTxn {
  /** Every meta record of the store, decoded: its key and value. */
  metaRecords(): Iterable<{ readonly key: unknown; readonly value: unknown }>;
  putMeta(key: unknown, value: object): void;
  /** Every record of the frontier database of format 6 and before (none when the store has none): its key and decoded value (undefined: an index key's empty value). */
  frontierRecords(): Iterable<{ readonly key: unknown; readonly value: unknown }>;
  removeFrontier(key: unknown): void;
  /** Deletes the frontier database of format 6 and before (its records read and written anew). */
  dropOldFrontier(): void;
  /**
   * Writes a scope's frontier in the current layout (src/store/lmdb/frontier-txn.ts): its
   * counters and settings, its queues' politeness, each entry under its own id (its seq from
   * format 7 on) with its queue, due time and lease, and its takers.
   */
  putFrontier(
    scope: string,
    counters: FrontierCounters,
    entries: readonly FrontierEntryV6[],
    queues?: readonly FrontierQueueV6[],
    owners?: readonly FrontierOwnerV6[],
  ): void;
}

/** A frontier's counters and settings as format 6 keeps them (format 5: nextId and done only). */
export interface FrontierCounters {
  readonly nextId: number;
  readonly done: number;
  readonly failed?: number;
  readonly settings?: { readonly queueKey: string; readonly delayMs: number; readonly maxInFlightPerQueue: number };
  readonly queueKeyPinned?: boolean;
}

/** A queue's politeness and completed count as format 6 keeps them. */
export interface FrontierQueueV6 {
  readonly key: string;
  readonly completed: number;
  readonly blockedUntilMs: number;
  readonly delayMs?: number;
  readonly crawlLimit?: number;
  readonly lastTakeMs?: number;
}

export interface FrontierOwnerV6 {
  readonly owner: string;
  readonly lastTakeMs: number;
}

/** A queued URL as format 6 keeps it. */
export interface FrontierEntryV6 {
  readonly id: number;
  readonly url: string;
  readonly queue: string;
  readonly epoch: number;
  readonly dueMs: number;
  readonly leaseUntilMs: number;
  readonly attempts: number;
  readonly owner?: string;
  readonly data?: unknown;
  /** When it was first stored (format 6 entries written before it was kept have none: their due time stands for it). */
  readonly createdMs?: number;
}

export interface MigrationStep {
  readonly from: number;
  readonly to: number;
  /** What the step changes, for `seenstore migrate` and docs/format.md. */
  readonly summary: string;
  /** Rewrites the records; returns how many it changed. */
  apply(txn: MigrationTxn): number;
}
