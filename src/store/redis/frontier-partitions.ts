import type { Reply } from './connection.js';
import { freshId, type RedisContext } from './context.js';
import type { Settings } from './frontier-settings.js';
import type { QueuePartitionKeys } from './keys.js';
import { queuePartitionOf } from './queue-partition.js';
import type { AnswerArgs } from './queue-functions.js';

/** Seconds a frontier call's answer stays for a retry of the same call (deleted by the handle's next call on that partition). */
export const FRONTIER_ANSWER_TTL_S = 300;
/** Most ids or URLs one call sends to one partition. */
export const ITEMS_PER_CALL = 10_000;

/**
 * A frontier handle's calls on its scope's queue partitions: their keys, the partition of a
 * queue, and writes answered once (the answer of each kept for a retry, the handle's previous one
 * on that partition deleted).
 */
export class FrontierPartitions {
  readonly ctx: RedisContext;
  readonly scope: string;
  /** Per partition, the answer key of this handle's last call there (deleted by the next). */
  readonly #previous = new Map<number, string>();
  readonly #words = new Uint32Array(2);

  constructor(ctx: RedisContext, scope: string) {
    this.ctx = ctx;
    this.scope = scope;
  }

  route(queue: string, s: Settings): number {
    return queuePartitionOf(this.ctx.hash, queue, s.partitions, this.#words);
  }

  keys(i: number): QueuePartitionKeys {
    return this.ctx.keys.queuePartition(this.scope, i);
  }

  doing(what: string): string {
    return `${what} the frontier of ${this.scope}`;
  }

  /** One write on partition i under a fresh call id, answered once (a retry after a lost reply gets the first answer). */
  async answered(i: number, call: (answer: AnswerArgs) => Promise<Reply>): Promise<Reply> {
    const own = this.keys(i).answer(freshId(12));
    const previous = this.#previous.get(i);
    const reply = await call({
      answer: own,
      previousAnswer: previous ?? own,
      dropPrevious: previous !== undefined,
      answerTtlS: FRONTIER_ANSWER_TTL_S,
    });
    this.#previous.set(i, own);
    return reply;
  }
}

/** The numbers 0 .. n - 1 (of n partitions or inboxes). */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
