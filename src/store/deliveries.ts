/** The seam's undelivered batches (docs/reliability.md "Delivery"): what a delivering run keeps. */
/** Which batch of which owner: an owner is one delivering run of a command (epochs/delivery.ts). */
export interface UndeliveredKey {
  /** `PID.START.N`: the process, when it started, and the run within it (store/owners.ts). */
  readonly owner: string;
  readonly seq: number;
}

/** A batch of recorded URLs not yet handed to their reader: lines, each ending in a newline. */
export interface UndeliveredBatch extends UndeliveredKey {
  readonly lines: Uint8Array;
}

/** What an add keeps as undelivered (EpochBits.addIfAbsent's `deliver`). */
export interface DeliveryWrite extends UndeliveredKey {
  /** The new URLs' lines, given the answers: called once inside the atomic step, after the decision. */
  readonly lines: (answers: readonly boolean[]) => Uint8Array;
  /** Batches of the same owner that were delivered since: deleted in the same step. */
  readonly delivered: readonly number[];
}

/**
 * A scope's undelivered batches (docs/reliability.md "Delivery"). A command that records URLs and
 * then prints them keeps each batch's new URLs here in the same atomic step that records them
 * (EpochBits.addIfAbsent's `deliver`), and releases them once they are written; what a run that
 * ended abnormally left is printed first by the next run, which claims it once the process that
 * left it is gone — never a running one's.
 */
export interface Deliveries {
  /**
   * Takes over every batch whose run is gone, as batches of `owner` numbered from `firstSeq` on,
   * in their order; of runs claiming at once, each batch goes to one. Resolves with them.
   */
  claim(owner: string, firstSeq: number): Promise<UndeliveredBatch[]>;
  /** Keeps `batch` as undelivered (a run that stops keeps the lines it wrote last). */
  keep(batch: UndeliveredBatch): Promise<void>;
  /**
   * Lets delivered batches go. False when some were gone already: another run claimed them, as
   * it may once a run's lease ran out (Redis: DELIVERY_LEASE_MS without a write).
   */
  release(keys: readonly UndeliveredKey[]): Promise<boolean>;
}
