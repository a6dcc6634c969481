import { SeenStoreError } from '../errors.js';

/**
 * The serve nodes of a store (URLFrontier's ListNodes): each serving process names itself by the
 * address clients reach it at, and refreshes its entry (a heartbeat) before its time to live runs
 * out. An entry not refreshed within its time to live is gone for every reader: a node that died
 * leaves the list by itself. Every driver has one; it lives where the store's data does, so every
 * process that shares the store shares the list (docs/frontier.md "A fleet").
 */
export interface NodeRegistry {
  /** Registers `address`, or refreshes it, live until `ttlMs` from now (by the registry's clock). */
  heartbeat(address: string, ttlMs: number): Promise<void>;
  /** Removes `address` at once (a node that stops). Removing an address that is not there does nothing. */
  leave(address: string): Promise<void>;
  /** The addresses live now, sorted. */
  live(): Promise<string[]>;
}

/** Longest address a node may register (a host name of 253 characters, brackets, a port). */
export const NODE_ADDRESS_LENGTH_MAX = 270;
/** Longest time to live of an entry: a heartbeat is seconds apart, not days. */
export const NODE_TTL_MS_MAX = 24 * 3_600_000;

/** USAGE unless `address` is printable, non-empty and short, and `ttlMs` a positive whole number within NODE_TTL_MS_MAX. */
export function checkNodeEntry(address: string, ttlMs: number): void {
  if (address === '' || address.length > NODE_ADDRESS_LENGTH_MAX || !/^[\x21-\x7e]+$/.test(address)) {
    throw new SeenStoreError(
      'USAGE',
      `a node address is 1-${NODE_ADDRESS_LENGTH_MAX} printable ASCII characters without spaces, got ${JSON.stringify(address.slice(0, 80))}`,
    );
  }
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0 || ttlMs > NODE_TTL_MS_MAX) {
    throw new SeenStoreError('USAGE', `a node's time to live is 1 to ${NODE_TTL_MS_MAX} ms, got ${ttlMs}`);
  }
}

/**
 * The registry of a store that only one process sees (memory): a map of address to the time its
 * entry ends, by the store's clock.
 */
export class LocalNodes implements NodeRegistry {
  readonly #endsAtMs = new Map<string, number>();
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  async heartbeat(address: string, ttlMs: number): Promise<void> {
    checkNodeEntry(address, ttlMs);
    this.#endsAtMs.set(address, this.#clock() + ttlMs);
  }

  async leave(address: string): Promise<void> {
    this.#endsAtMs.delete(address);
  }

  async live(): Promise<string[]> {
    const nowMs = this.#clock();
    for (const [address, endsAtMs] of this.#endsAtMs) if (endsAtMs <= nowMs) this.#endsAtMs.delete(address);
    return [...this.#endsAtMs.keys()].sort();
  }
}
