import type { Deliveries, DeliveryWrite, UndeliveredBatch, UndeliveredKey } from '../backend.js';
import { ownerGone } from '../owners.js';

/** A scope's undelivered batches in memory, by `owner/seq` (a memory store lives in one process: its runs are gone only with it). */
export class MemoryDeliveries implements Deliveries {
  readonly #batches = new Map<string, UndeliveredBatch>();

  async claim(owner: string, firstSeq: number): Promise<UndeliveredBatch[]> {
    const gone = [...this.#batches.values()].filter((batch) => ownerGone(batch.owner));
    gone.sort((a, b) => (a.owner === b.owner ? a.seq - b.seq : a.owner < b.owner ? -1 : 1));
    return gone.map((batch, i) => {
      this.#batches.delete(idOf(batch));
      const claimed = { owner, seq: firstSeq + i, lines: batch.lines };
      this.#batches.set(idOf(claimed), claimed);
      return claimed;
    });
  }

  async keep(batch: UndeliveredBatch): Promise<void> {
    this.#batches.set(idOf(batch), { owner: batch.owner, seq: batch.seq, lines: batch.lines.slice() });
  }

  async release(keys: readonly UndeliveredKey[]): Promise<boolean> {
    let all = true;
    for (const key of keys) all = this.#batches.delete(idOf(key)) && all;
    return all;
  }

  /** An add's part (MemoryEpoch): keeps the batch's new URLs, lets the owner's delivered batches go. */
  keepAdded(deliver: DeliveryWrite, answers: readonly boolean[]): void {
    for (const seq of deliver.delivered) this.#batches.delete(idOf({ owner: deliver.owner, seq }));
    const lines = deliver.lines(answers);
    if (lines.length > 0)
      this.#batches.set(idOf(deliver), { owner: deliver.owner, seq: deliver.seq, lines: lines.slice() });
  }
}

function idOf(key: UndeliveredKey): string {
  return `${key.owner}/${key.seq}`;
}
