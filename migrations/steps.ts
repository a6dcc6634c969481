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
}

export interface MigrationStep {
  readonly from: number;
  readonly to: number;
  /** What the step changes, for `seenstore migrate` and docs/format.md. */
  readonly summary: string;
  /** Rewrites the records; returns how many it changed. */
  apply(txn: MigrationTxn): number;
}
