import { SeenStoreError } from '../../errors.js';
import type { ImportRequest } from '../backend.js';
import type { ScopeRecord } from '../records.js';
import { freshId, text, type RedisContext } from './context.js';
import { writeBytes, type EpochEntry } from './epoch.js';
import { createImportedScope } from './functions.js';
import { scopeKeys } from './keys.js';
import { partitionsOf } from './partition.js';

/**
 * Writes an imported epoch (and the next, when the request has one) as a new scope, which the
 * backend checked is not there: every partition's share first, then the scope record and the
 * epochs' entries in one call that refuses a scope made meanwhile. A failed or interrupted
 * import deletes the keys it wrote.
 */
export async function importScope(ctx: RedisContext, request: ImportRequest): Promise<ScopeRecord> {
  const { scope, epoch: header, counts, filters, next, signal } = request;
  const keys = ctx.keys;
  const doing = `importing into scope ${scope}`;
  const entry: EpochEntry = { uid: freshId(), header };
  const count = partitionsOf(header);
  const parts = Array.from({ length: count }, (_, p) => keys.epoch(scope, entry.uid, p));
  const written: string[][] = parts.map((epochKeys) => [epochKeys.state, epochKeys.slices]);
  const interrupted = (): void => {
    if (signal?.aborted === true) throw new SeenStoreError('INTERRUPTED', `${doing}: interrupted; nothing imported`);
  };
  try {
    // Each partition holds its share of every filter, every slice, and of the counts (URLs
    // spread evenly over partitions; the totals are exact). docs/redis.md "Partitions".
    for (const [p, epochKeys] of parts.entries()) {
      interrupted();
      const share = (total: number): string => String(Math.floor(total / count) + (p < total % count ? 1 : 0));
      const sliceAdded = header.slices.flatMap((_, j) => [`a${j}`, share(counts.sliceAdded[j] ?? 0)]);
      await ctx.call(
        epochKeys.state,
        [
          'HSET',
          epochKeys.state,
          'open',
          next === undefined ? '1' : '0',
          'submitted',
          share(counts.submitted),
          'added',
          share(counts.added),
          ...sliceAdded,
        ],
        doing,
      );
      await ctx.call(
        epochKeys.slices,
        ['RPUSH', epochKeys.slices, ...header.slices.map((slice) => JSON.stringify(slice))],
        doing,
      );
      for (const [index, bytes] of filters.entries()) {
        interrupted();
        const size = bytes.length / count;
        written[p]!.push(epochKeys.filter(index));
        await writeBytes(ctx, epochKeys.filter(index), bytes.subarray(p * size, (p + 1) * size), doing);
      }
    }
    interrupted();
    const record: ScopeRecord = {
      v: 1,
      name: scope,
      openEpoch: next?.epoch ?? header.epoch,
      createdAtMs: ctx.now(),
    };
    const entries: [number, string][] = [[header.epoch, JSON.stringify(entry)]];
    if (next !== undefined)
      entries.push([next.epoch, JSON.stringify({ uid: freshId(), header: next } satisfies EpochEntry)]);
    const queues = Math.max(count, next === undefined ? 1 : partitionsOf(next));
    await ctx.call(keys.scopes(), ['SADD', keys.scopes(), scope], doing);
    const outcome = text(
      await createImportedScope(ctx, scopeKeys(keys, scope), JSON.stringify(record), queues, entries, doing),
    );
    if (outcome === 'exists') throw SeenStoreError.scopeExists(scope);
    await ctx.replicated(keys.scope(scope), doing);
    for (const epochKeys of parts) await ctx.replicated(epochKeys.state, doing);
    return record;
  } catch (error) {
    await Promise.all(
      written.map((group) =>
        ctx.call(group[0]!, ['DEL', ...group], `removing a failed import of ${scope}`).catch(() => undefined),
      ),
    );
    throw error;
  }
}
