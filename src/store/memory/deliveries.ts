import type { Deliveries, DeliveryWrite, UndeliveredBatch, UndeliveredKey } from '../backend.js';
import { ownerGone } from '../owners.js';

/** A scope's undelivered batches in memory, by `owner/seq` (a memory store lives in one process: every owner is alive). */
export class MemoryDeliveries implements Deliveries {
  readonly #batches = new Map<string, UndeliveredBatch>();

  async orphaned(): Promise<UndeliveredBatch[]> {
    const found = [...this.#batches.values()].filter((batch) => ownerGone(batch.owner));
    return found.sort((a, b) => (a.owner === b.owner ? a.seq - b.seq : a.owner < b.owner ? -1 : 1));
  }

  async change(remove: readonly UndeliveredKey[], put: readonly UndeliveredBatch[]): Promise<boolean> {
    if (!remove.every((key) => this.#batches.has(idOf(key)))) return false;
    for (const key of remove) this.#batches.delete(idOf(key));
    for (const batch of put) this.#batches.set(idOf(batch), { owner: batch.owner, seq: batch.seq, lines: batch.lines.slice() });
    return true;
  }

  /** An add's part (MemoryEpoch): keeps the batch's new URLs, deletes the owner's delivered batches. */
  keep(deliver: DeliveryWrite, answers: readonly boolean[]): void {
    for (const seq of deliver.delivered) this.#batches.delete(idOf({ owner: deliver.owner, seq }));
    const lines = deliver.lines(answers);
    if (lines.length > 0) this.#batches.set(idOf(deliver), { owner: deliver.owner, seq: deliver.seq, lines: lines.slice() });
  }
}

function idOf(key: UndeliveredKey): string {
  return `${key.owner}/${key.seq}`;
}
