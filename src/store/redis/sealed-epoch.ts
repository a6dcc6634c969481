import { SeenStoreError } from '../../errors.js';
import type { EpochHeader } from '../records.js';
import { text, type RedisContext } from './context.js';

/** How long an add waits for a rotation that sealed its epoch to publish the next one. */
const ROTATION_WAIT_MS = 10_000;

/**
 * The epoch refused an add: sealed. Either a rotation opened the next epoch (EPOCH_SEALED: the
 * engine retries there), or a rotation is between sealing and publishing the next epoch: wait
 * for it, boundedly (an interrupted rotation is finished by the next `epoch rotate`).
 */
export async function sealedError(ctx: RedisContext, header: EpochHeader, where: string): Promise<SeenStoreError> {
  const { scope, epoch } = header;
  const deadline = Date.now() + ROTATION_WAIT_MS;
  for (;;) {
    const record = await ctx.call(ctx.keys.scope(scope), ['GET', ctx.keys.scope(scope)], `reading scope ${scope}`);
    const open = record === null ? undefined : (JSON.parse(text(record)) as { openEpoch: number }).openEpoch;
    if (open !== epoch)
      return SeenStoreError.sealed(scope, epoch, open === undefined ? undefined : `the open epoch is ${open}`);
    if (Date.now() >= deadline) {
      return new SeenStoreError(
        'STORE_UNAVAILABLE',
        `${where} was sealed by a rotation that has not opened the next epoch for ${ROTATION_WAIT_MS / 1000} s (interrupted?); \`seenstore epoch rotate\` finishes it`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
