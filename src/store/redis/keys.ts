/**
 * Every key of the Redis backend (docs/redis.md "Keys"): the only place one is built. A scope's
 * metadata shares the hash tag `{PREFIX/SCOPE}` (one slot: its atomic steps are one call); each
 * epoch's data shares `{PREFIX/SCOPE/UID}`, UID being fresh per epoch (an imported or re-created
 * epoch never meets the keys of an earlier one), so epochs spread over the cluster's slots.
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

  epoch(scope: string, uid: string): EpochKeys {
    const tag = `{${this.#prefix}/${scope}/${uid}}`;
    return {
      state: `${tag}:state`,
      slices: `${tag}:slices`,
      filterBase: `${tag}:f:`,
      filter: (index: number) => `${tag}:f:${index}`,
      batch: (id: string) => `${tag}:b:${id}`,
      merging: (id: string, index: number) => `${tag}:m:${id}:${index}`,
    };
  }
}

export interface EpochKeys {
  readonly state: string;
  readonly slices: string;
  /** Filter i's key is filterBase + i (the functions build it so). */
  readonly filterBase: string;
  filter(index: number): string;
  batch(id: string): string;
  merging(id: string, index: number): string;
}
