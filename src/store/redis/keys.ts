/**
 * Every key of the Redis backend (docs/redis.md "Keys"): the only place one is built. A scope's
 * metadata shares the hash tag `{PREFIX/SCOPE}` (one slot: its atomic steps are one call); the
 * data of partition p of any of its epochs shares `{PREFIX/SCOPE/p}`, so a partitioned epoch
 * spreads over P slots (and the cluster's masters), and the frontier stream of partition p can sit
 * in the same slot as the bits its enqueues test. Each epoch's key names carry its UID, fresh per
 * epoch (an imported or re-created epoch never meets the keys of an earlier one).
 */
export class RedisKeys {
  readonly #prefix: string;

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** The store's key-layout version (docs/redis.md "Store format"). */
  format(): string {
    return `{${this.#prefix}}:format`;
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

  /** List: the specs (JSON) of the slices an open epoch grew into past its header's, in order (its growth plan). */
  plan(scope: string, uid: string): string {
    return `{${this.#prefix}/${scope}}:plan:${uid}`;
  }

  /** The number of partition streams the scope's frontier may have (the most partitions of any of its epochs). */
  queues(scope: string): string {
    return `{${this.#prefix}/${scope}}:queues`;
  }

  /** Partition p of an epoch: a self-contained scalable filter in the slot of `{PREFIX/SCOPE/p}`. */
  epoch(scope: string, uid: string, partition: number): EpochKeys {
    const tag = `{${this.#prefix}/${scope}/${partition}}`;
    const base = `${tag}:${uid}`;
    return {
      state: `${base}:state`,
      slices: `${base}:slices`,
      filter: (index: number) => `${base}:f:${index}`,
      batch: (id: string) => `${base}:b:${id}`,
      merging: (id: string, index: number) => `${base}:m:${id}:${index}`,
      queue: this.queue(scope, partition),
    };
  }

  /** Stream: partition p's frontier (consumer group `ss`), in the slot of the epochs' partition p. */
  queue(scope: string, p: number): string {
    return `{${this.#prefix}/${scope}/${p}}:q`;
  }

  /** Every key of partition p's frontier; all in the slot of its stream. */
  queueKeys(scope: string, p: number): QueueKeys {
    const tag = `{${this.#prefix}/${scope}/${p}}`;
    return {
      stream: this.queue(scope, p),
      leases: `${tag}:l`,
      done: `${tag}:qdone`,
      answer: (id: string) => `${tag}:qa:${id}`,
    };
  }
}

/** A partition's frontier keys (docs/redis.md "Keys"). */
export interface QueueKeys {
  /** Stream of queued entries, consumer group `ss`. */
  readonly stream: string;
  /** Sorted set: id of each delivered entry (padded, lua/frontier.lua) scored by its lease's end in ms; 0: given back. */
  readonly leases: string;
  /** String: entries finished since the frontier began. */
  readonly done: string;
  /** A frontier call's answer, kept for a retry of the same call. */
  answer(id: string): string;
}

/** The keys of one partition of an epoch (an unpartitioned epoch is its partition 0). */
export interface EpochKeys {
  readonly state: string;
  readonly slices: string;
  filter(index: number): string;
  batch(id: string): string;
  merging(id: string, index: number): string;
  /** The frontier stream an add in this partition enqueues to (same slot). */
  readonly queue: string;
}
