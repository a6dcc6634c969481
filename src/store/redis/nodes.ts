import { checkNodeEntry, type NodeRegistry } from '../nodes.js';
import { list, text, type RedisContext } from './context.js';
import { liveNodes, nodeHeartbeat } from './functions.js';

/**
 * The serve nodes of a Redis store: a sorted set under the store's prefix (`{PREFIX}:nodes`, one
 * slot) of address -> when the entry ends, by Redis's clock (lua/nodes.lua), so machines whose
 * clocks disagree still agree on who is live. Each call is retried through a failover as every
 * store call is (RedisContext.call).
 */
export class RedisNodes implements NodeRegistry {
  readonly #ctx: RedisContext;

  constructor(ctx: RedisContext) {
    this.#ctx = ctx;
  }

  async heartbeat(address: string, ttlMs: number): Promise<void> {
    checkNodeEntry(address, ttlMs);
    await nodeHeartbeat(this.#ctx, this.#ctx.keys.nodes(), address, ttlMs, `registering node ${address}`);
  }

  async leave(address: string): Promise<void> {
    const key = this.#ctx.keys.nodes();
    await this.#ctx.call(key, ['ZREM', key, address], `removing node ${address}`);
  }

  async live(): Promise<string[]> {
    return list(await liveNodes(this.#ctx, this.#ctx.keys.nodes(), 'listing nodes')).map((address) => text(address));
  }
}
