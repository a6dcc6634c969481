import { SeenStoreError } from '../../errors.js';
import type { Frontier, FrontierStats, LeasedUrl, QueueItems } from '../backend.js';
import { parseFrontierId } from '../frontier-id.js';

/** One queued URL; `leaseUntilMs` 0: waiting. */
interface Entry {
  readonly url: string;
  readonly epoch: number;
  leaseUntilMs: number;
  attempts: number;
  owner: string | undefined;
  data: unknown;
}

/** A scope's frontier in memory: entries by id, in the order they were queued (a Map keeps it). */
export class MemoryFrontier implements Frontier {
  readonly #entries = new Map<number, Entry>();
  readonly #now: () => number;
  #nextId = 1;
  #done = 0;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Queues the URLs whose answer is true, in the add's step. */
  queue(epoch: number, items: QueueItems, answers: readonly boolean[]): void {
    items.urls.forEach((url, i) => {
      if (answers[i]) this.#entries.set(this.#nextId++, { url, epoch, leaseUntilMs: 0, attempts: 0, owner: undefined, data: items.data?.[i] });
    });
  }

  async take(count: number, leaseMs: number, owner?: string): Promise<LeasedUrl[]> {
    const now = this.#now();
    const out: LeasedUrl[] = [];
    for (const [id, entry] of this.#entries) {
      if (out.length >= count) break;
      if (entry.leaseUntilMs > now) continue;
      entry.leaseUntilMs = now + leaseMs;
      entry.attempts++;
      entry.owner = owner;
      const { url, epoch, attempts, leaseUntilMs, data } = entry;
      out.push({ id: String(id), url, epoch, attempts, leaseUntilMs, ...(data === undefined ? {} : { data }) });
    }
    return out;
  }

  async done(ids: readonly string[]): Promise<number> {
    let n = 0;
    for (const id of ids.map(parseFrontierId)) if (this.#entries.delete(id)) n++;
    this.#done += n;
    return n;
  }

  async release(ids: readonly string[], data?: readonly unknown[]): Promise<number> {
    if (data !== undefined && data.length !== ids.length) throw new SeenStoreError('USAGE', `release: ${data.length} payloads for ${ids.length} ids`);
    let n = 0;
    ids.map(parseFrontierId).forEach((id, i) => {
      const entry = this.#entries.get(id);
      if (entry === undefined || entry.leaseUntilMs === 0) return;
      unlease(entry);
      if (data?.[i] !== undefined) entry.data = data[i];
      n++;
    });
    return n;
  }

  async reclaim(owner: string): Promise<number> {
    const now = this.#now();
    let n = 0;
    for (const entry of this.#entries.values()) {
      if (entry.owner !== owner || entry.leaseUntilMs <= now) continue;
      unlease(entry);
      n++;
    }
    return n;
  }

  async stats(): Promise<FrontierStats> {
    const now = this.#now();
    let leased = 0;
    for (const entry of this.#entries.values()) if (entry.leaseUntilMs > now) leased++;
    return { pending: this.#entries.size - leased, leased, done: this.#done };
  }

  async forEachUrl(onBatch: (urls: string[]) => void): Promise<void> {
    onBatch([...this.#entries.values()].map((entry) => entry.url));
  }
}

function unlease(entry: Entry): void {
  entry.leaseUntilMs = 0;
  entry.owner = undefined;
}
