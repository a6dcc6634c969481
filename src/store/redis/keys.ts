import type { ScopeKeys } from './functions.js';

/**
 * Every key of the Redis backend (docs/redis.md "Keys"): the only place one is built. A scope's
 * metadata shares the hash tag `{PREFIX/SCOPE}` (one slot: its atomic steps are one call); the
 * data of partition p of any of its epochs shares `{PREFIX/SCOPE/p}`, so a partitioned epoch
 * spreads over P slots (and the cluster's masters), and the inbox of partition p sits in the same
 * slot as the bits its enqueues test. The frontier's queues are partitioned by queue key: partition
 * i in `{PREFIX/SCOPE/qI}`. Each epoch's key names carry its UID, fresh per epoch (an imported or
 * re-created epoch never meets the keys of an earlier one).
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

  /** Sorted set: serve node address -> when its entry ends, ms by Redis's clock (lua/nodes.lua; its own slot). */
  nodes(): string {
    return `{${this.#prefix}}:nodes`;
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

  /** The number of the scope's inboxes (the most partitions of any of its epochs). */
  queues(scope: string): string {
    return `{${this.#prefix}/${scope}}:queues`;
  }

  /** Hash: the frontier's settings (docs/redis.md "Frontier"). */
  frontier(scope: string): string {
    return `{${this.#prefix}/${scope}}:frontier`;
  }

  /** Hash: the scope's undelivered batches and their owners' leases (lua/delivery.lua). */
  undelivered(scope: string): string {
    return `{${this.#prefix}/${scope}}:undelivered`;
  }

  /** Hash: owner -> the time of its last take in ms (host affinity's live owners). */
  owners(scope: string): string {
    return `{${this.#prefix}/${scope}}:owners`;
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
      inbox: this.inbox(scope, partition),
      oldStream: this.oldStream(scope, partition),
    };
  }

  /** Stream: the inbox of the epochs' partition p (lua/inbox.lua): its adds' new URLs, until moved into their queues. */
  inbox(scope: string, p: number): string {
    return `{${this.#prefix}/${scope}/${p}}:in`;
  }

  /** Stream: partition p's frontier of key layout 1 (before queues): refused, never read. */
  oldStream(scope: string, p: number): string {
    return `{${this.#prefix}/${scope}/${p}}:q`;
  }

  /** Every key of partition i of the frontier's queues, in the order the queue functions declare them (lua/queue-store.lua). */
  queuePartition(scope: string, i: number): QueuePartitionKeys {
    const tag = `{${this.#prefix}/${scope}/q${i}}`;
    return {
      state: QUEUE_STATE_KEYS.map((name) => `${tag}:${name}`),
      layout2: LAYOUT_2_KEYS.map((name) => `${tag}:${name}`),
      answer: (id: string) => `${tag}:a:${id}`,
    };
  }
}

/** The keys of a partition of the frontier's queues in key layout 3 (fkeys in lua/queue-store.lua), in order. */
export const QUEUE_STATE_KEYS = [
  'seq',
  'pg',
  'ux',
  'qr',
  'qn',
  'fo',
  's',
  'leases',
  'ready',
  'names',
  'marks',
  'counts',
  'cfg',
] as const;
/** The keys of key layout 2 that layout 3 does not keep (lua/queue-migrate.lua), in order. */
export const LAYOUT_2_KEYS = ['ent', 'url', 'qs', 'w', 'l'] as const;

/** A partition of the frontier's queues: its keys, all in one slot. */
export interface QueuePartitionKeys {
  /** The keys every queue function declares first, in order (fkeys in lua/queue-store.lua). */
  readonly state: readonly string[];
  /** Those of key layout 2 that layout 3 replaced: what a migration moves (lua/queue-migrate.lua). */
  readonly layout2: readonly string[];
  /** A call's answer, kept for a retry of the same call. */
  answer(id: string): string;
}

/** The keys of one partition of an epoch (an unpartitioned epoch is its partition 0). */
export interface EpochKeys {
  readonly state: string;
  readonly slices: string;
  filter(index: number): string;
  batch(id: string): string;
  merging(id: string, index: number): string;
  /** The inbox an add in this partition enqueues to (same slot). */
  readonly inbox: string;
  /** The frontier stream of key layout 1 in this slot: an enqueue is refused while it exists. */
  readonly oldStream: string;
}

/** The keys of a scope's metadata, as the scope functions declare them. */
export function scopeKeys(keys: RedisKeys, scope: string): ScopeKeys {
  return { scope: keys.scope(scope), epochs: keys.epochs(scope), queues: keys.queues(scope) };
}
