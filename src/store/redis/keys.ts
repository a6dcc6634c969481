/**
 * Every key of the Redis backend (docs/redis.md "Keys"): the only place one is built. A scope's
 * metadata shares the hash tag `{PREFIX/SCOPE}` (one slot: its atomic steps are one call). The
 * data of a scope's epochs lives in partitions: partition p's keys share the tag `{PREFIX/SCOPE/p}`,
 * and so does partition p's frontier stream, so that an add and the enqueue of what it found new are
 * one call on one slot. Each epoch's keys carry its UID, fresh per epoch (an imported or re-created
 * epoch never meets the keys of an earlier one). Until the partitioned layout lands every epoch is
 * partition 0.
 */
export class RedisKeys {
  readonly #prefix: string;

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** The set of scope names (its own slot). */
  scopes(): string {
    return `{${this.#prefix}}:scopes`;
  }

  scope(scope: string): string {
    return `{${this.#prefix}/${scope}}:scope`;
  }

  /** Hash: epoch number -> JSON entry { uid, header }. */
  epochs(scope: string): string {
    return `{${this.#prefix}/${scope}}:epochs`;
  }

  /** Hash: epoch number -> JSON entry of an epoch being dropped (gone for readers, data not yet deleted). */
  drops(scope: string): string {
    return `{${this.#prefix}/${scope}}:drops`;
  }

  /** String: how many partition streams the scope's frontier may have (absent: 1); set where epochs are created. */
  queues(scope: string): string {
    return `{${this.#prefix}/${scope}}:queues`;
  }

  epoch(scope: string, uid: string): EpochKeys {
    const base = `${this.#partitionTag(scope, 0)}:${uid}`;
    return {
      state: `${base}:state`,
      slices: `${base}:slices`,
      filterBase: `${base}:f:`,
      filter: (index: number) => `${base}:f:${index}`,
      batch: (id: string) => `${base}:b:${id}`,
      merging: (id: string, index: number) => `${base}:m:${id}:${index}`,
      queue: this.queue(scope, 0),
    };
  }

  /** Stream: partition p's frontier (consumer group `ss`). */
  queue(scope: string, p: number): string {
    return `${this.#partitionTag(scope, p)}:q`;
  }

  /** Every key of partition p's frontier; all in the slot of its stream. */
  queueKeys(scope: string, p: number): QueueKeys {
    const tag = this.#partitionTag(scope, p);
    return {
      stream: this.queue(scope, p),
      leases: `${tag}:l`,
      done: `${tag}:qdone`,
      answer: (id: string) => `${tag}:qa:${id}`,
    };
  }

  #partitionTag(scope: string, p: number): string {
    return `{${this.#prefix}/${scope}/${p}}`;
  }
}

/** A partition's frontier keys (docs/redis.md "Keys"). */
export interface QueueKeys {
  /** Stream of queued entries, consumer group `ss`. */
  readonly stream: string;
  /** Sorted set: id of each delivered entry (padded, functions.ts) scored by its lease's end in ms; 0: given back. */
  readonly leases: string;
  /** String: entries finished since the frontier began. */
  readonly done: string;
  /** A frontier call's answer, kept for a retry of the same call. */
  answer(id: string): string;
}

export interface EpochKeys {
  readonly state: string;
  readonly slices: string;
  /** Filter i's key is filterBase + i (the functions build it so). */
  readonly filterBase: string;
  filter(index: number): string;
  batch(id: string): string;
  merging(id: string, index: number): string;
  /** The frontier stream an add of this epoch enqueues to (same slot). */
  readonly queue: string;
}
