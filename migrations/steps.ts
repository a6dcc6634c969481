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
  /** Every record of the frontier database (none when the store has none): its key and decoded value. */
  frontierRecords(): Iterable<{ readonly key: unknown; readonly value: unknown }>;
  removeFrontier(key: unknown): void;
  /**
   * Writes a scope's frontier in the layout of format 6 (src/store/lmdb/frontier-txn.ts): its
   * counters, and each entry under its own id with its queue, due time and lease.
   */
  putFrontier(scope: string, counters: { readonly nextId: number; readonly done: number }, entries: readonly FrontierEntryV6[]): void;
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
}

export interface MigrationStep {
  readonly from: number;
  readonly to: number;
  /** What the step changes, for `seenstore migrate` and docs/format.md. */
  readonly summary: string;
  /** Rewrites the records; returns how many it changed. */
  apply(txn: MigrationTxn): number;
}
