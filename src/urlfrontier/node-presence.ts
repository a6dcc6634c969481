import { SeenStoreError } from '../errors.js';
import type { Logger } from '../server/logger.js';
import type { NodeRegistry } from '../store/nodes.js';

/** How often a serve node refreshes its entry in the store's node registry. */
export const NODE_HEARTBEAT_MS = 2_000;
/**
 * How long an entry lives without a refresh: five heartbeats, so that a node whose heartbeats are
 * late (a busy event loop, a store call retried for a few seconds) stays listed, while a node
 * killed without leaving is gone from ListNodes within 10 s.
 */
export const NODE_TTL_MS = 5 * NODE_HEARTBEAT_MS;

/**
 * A serve node's entry in its store's node registry (URLFrontier's ListNodes): registered when
 * the service starts, refreshed every NODE_HEARTBEAT_MS, removed when it stops. A heartbeat that
 * fails (the store unavailable) is logged and tried again at the next beat; the node drops out of
 * the list only if none succeeds for NODE_TTL_MS.
 */
export class NodePresence {
  readonly #registry: NodeRegistry;
  readonly #logger: Logger;
  #address: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> = Promise.resolve();
  #failing = false;

  constructor(registry: NodeRegistry, logger: Logger) {
    this.#registry = registry;
    this.#logger = logger;
  }

  /** This node's address once joined. */
  get address(): string | undefined {
    return this.#address;
  }

  /** Registers `address` (resolves once the store holds it), then keeps it live. */
  async join(address: string): Promise<void> {
    if (this.#address !== undefined) throw new TypeError(`node ${this.#address} has joined already`);
    await this.#registry.heartbeat(address, NODE_TTL_MS);
    this.#address = address;
    this.#schedule();
  }

  /** The live nodes of the store: this one always among them while it serves. */
  async list(): Promise<string[]> {
    const live = await this.#registry.live();
    if (this.#address === undefined || live.includes(this.#address)) return live;
    return [...live, this.#address].sort();
  }

  /** Stops the heartbeat and removes the entry, so that ListNodes drops this node at once. */
  async leave(): Promise<void> {
    const address = this.#address;
    if (address === undefined) return;
    this.#address = undefined;
    clearTimeout(this.#timer);
    await this.#beating;
    await this.#registry.leave(address);
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      this.#beating = this.#beat();
    }, NODE_HEARTBEAT_MS);
    // The heartbeat alone never keeps serve's process alive.
    this.#timer.unref();
  }

  async #beat(): Promise<void> {
    const address = this.#address;
    if (address === undefined) return;
    try {
      await this.#registry.heartbeat(address, NODE_TTL_MS);
      if (this.#failing)
        this.#logger.log('urlfrontier', { event: 'heartbeat', node: address, message: 'registered again' });
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        this.#logger.log('warning', {
          event: 'heartbeat',
          node: address,
          message: `cannot refresh this node's entry (ListNodes drops it after ${NODE_TTL_MS} ms without one): ${(error as Error).message}`,
        });
      this.#failing = true;
    }
    if (this.#address === address) this.#schedule();
  }
}

/**
 * Checks an address a node advertises (`--advertise HOST:PORT`): a host name or IPv4 address, or
 * an IPv6 address in brackets, then a port of 1-65535. USAGE otherwise.
 */
export function checkAdvertisedAddress(address: string): string {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):(\d{1,5})$/.exec(address);
  const port = match === null ? 0 : Number(match[2]);
  if (port < 1 || port > 65_535) {
    throw new SeenStoreError(
      'USAGE',
      `--advertise takes HOST:PORT (an IPv6 address in brackets, a port of 1-65535), got ${JSON.stringify(address.slice(0, 80))}`,
    );
  }
  return address;
}

/** HOST:PORT of a bound address, an IPv6 address in brackets. */
export function addressOf(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
