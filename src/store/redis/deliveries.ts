import { SeenStoreError } from '../../errors.js';
import type { Deliveries, DeliveryWrite, UndeliveredBatch, UndeliveredKey } from '../backend.js';
import { list, text, type RedisContext } from './context.js';
import type { Reply } from './connection.js';
import { decodeUndelivered, encodeUndelivered } from '../undelivered-record.js';

/**
 * How long a run's batches stay its own without a write of it (its lease, on the server's clock):
 * a run whose lease ran out counts as gone, and its batches are claimed by the next run.
 */
export const DELIVERY_LEASE_MS = 120_000;

/**
 * A scope's undelivered batches on Redis: one hash on the scope's slot (lua/delivery.lua). The
 * epoch's partitions decide a batch in several calls, so a batch cannot be kept in the same call
 * that records it; instead (`around`) every line of the batch is kept before it is recorded and
 * narrowed to its new URLs after: a run cut in between leaves the whole batch, some of it printed
 * before, for the next run (at least once; at most the batch twice).
 */
export class RedisDeliveries implements Deliveries {
  readonly #ctx: RedisContext;
  readonly #key: string;
  readonly #scope: string;

  constructor(ctx: RedisContext, key: string, scope: string) {
    this.#ctx = ctx;
    this.#key = key;
    this.#scope = scope;
  }

  async claim(owner: string, firstSeq: number): Promise<UndeliveredBatch[]> {
    for (let attempt = 0; ; attempt++) {
      const gone = await this.#orphaned();
      if (gone.length === 0) return [];
      const claimed = gone.map((batch, i) => ({ owner, seq: firstSeq + i, lines: batch.lines }));
      // All or nothing: a batch another run claimed meanwhile makes the call change nothing, and it is tried again.
      if (
        await this.#change(
          owner,
          gone.map(fieldOf),
          [],
          claimed.flatMap((batch) => [fieldOf(batch), encodeUndelivered(batch.lines)]),
        )
      )
        return claimed;
      if (attempt === 3)
        throw new SeenStoreError(
          'STORE_BUSY',
          `scope ${this.#scope}: other runs kept claiming the same undelivered batches`,
        );
    }
  }

  async keep(batch: UndeliveredBatch): Promise<void> {
    await this.#change(batch.owner, [], [], [fieldOf(batch), encodeUndelivered(batch.lines)]);
  }

  async release(keys: readonly UndeliveredKey[]): Promise<boolean> {
    if (keys.length === 0) return true;
    if (await this.#change('', keys.map(fieldOf), [], [])) return true;
    // Some were claimed (this run's lease lapsed): let the rest go.
    await this.#change('', [], keys.map(fieldOf), []);
    return false;
  }

  /** Batches whose owner's lease ran out (or who has none), by owner, then seq. */
  async #orphaned(): Promise<UndeliveredBatch[]> {
    const reply = list(
      await this.#ctx.fcall(
        'ss_dv_orphaned',
        [this.#key],
        [this.#ctx.clockArg()],
        `reading the undelivered batches of scope ${this.#scope}`,
      ),
    );
    const found: UndeliveredBatch[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const field = text(reply[i]);
      const match = /^b\/(.+)\/(\d+)$/.exec(field);
      if (match === null)
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `scope ${this.#scope}: undelivered batch field ${JSON.stringify(field)} is malformed`,
        );
      found.push({
        owner: match[1]!,
        seq: Number(match[2]),
        lines: decodeUndelivered(bytesOf(reply[i + 1]), `scope ${this.#scope}: undelivered batch ${field}`),
      });
    }
    return found.sort((a, b) => (a.owner === b.owner ? a.seq - b.seq : a.owner < b.owner ? -1 : 1));
  }

  /**
   * An add that keeps its batch (`deliver`): the whole batch kept (and the owner's delivered
   * batches dropped) before `add` records it, then narrowed to the URLs it found new.
   */
  async around(deliver: DeliveryWrite, count: number, answers: boolean[], add: () => Promise<number>): Promise<number> {
    const field = fieldOf(deliver);
    const whole = deliver.lines(new Array<boolean>(count).fill(true));
    await this.#change(
      deliver.owner,
      [],
      deliver.delivered.map((seq) => fieldOf({ owner: deliver.owner, seq })),
      [field, encodeUndelivered(whole)],
    );
    const added = await add();
    const lines = deliver.lines(answers);
    await this.#change(
      deliver.owner,
      [],
      lines.length === 0 ? [field] : [],
      lines.length === 0 ? [] : [field, encodeUndelivered(lines)],
    );
    return added;
  }

  async #change(
    owner: string,
    mustGo: readonly string[],
    mayGo: readonly string[],
    put: readonly (string | Buffer)[],
  ): Promise<boolean> {
    // The caller's clock last: ss_dv_change reads Redis's clock (`timed` in lua/library.lua).
    const args = [
      owner,
      String(DELIVERY_LEASE_MS),
      String(mustGo.length),
      ...mustGo,
      String(mayGo.length),
      ...mayGo,
      ...put,
      this.#ctx.clockArg(),
    ];
    const reply = await this.#ctx.fcallDurable(
      'ss_dv_change',
      [this.#key],
      args,
      `keeping the undelivered batches of scope ${this.#scope}`,
    );
    return reply === 1;
  }
}

function fieldOf(key: UndeliveredKey): string {
  return `b/${key.owner}/${key.seq}`;
}

function bytesOf(reply: Reply | undefined): Uint8Array | undefined {
  return Buffer.isBuffer(reply) ? reply : undefined;
}
