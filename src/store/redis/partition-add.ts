import { SeenStoreError } from '../../errors.js';
import type { EpochHeader } from '../records.js';
import { list, text, type RedisContext } from './context.js';
import { addBatch, initPartition, type QueueArgs } from './functions.js';
import type { GrowthPlan, Planning } from './growth-plan.js';
import { oldFrontierError } from './inbox.js';
import { batchKeys, partitionFilterBytes, readKeys, type Partition } from './partition.js';

/** Seconds a batch's answers stay for a retry of the same batch (deleted by the handle's next batch). */
export const BATCH_ANSWERS_TTL_S = 300;

/** What one partition's add uses of its epoch (RedisEpoch makes it once). */
export interface Adding {
  readonly ctx: RedisContext;
  /** The epoch's header as created: its scope, its state, its first slice. */
  readonly header: EpochHeader;
  readonly growth: GrowthPlan;
  readonly counting: boolean;
  /** How many partitions the epoch has. */
  readonly partitions: number;
  readonly where: string;
}

/** What one partition's call of a batch answered. */
export type Outcome =
  | { readonly kind: 'decided'; readonly flags: Buffer; readonly fresh: number }
  | { readonly kind: 'retry' }
  | { readonly kind: 'sealed' };

/**
 * One partition's ss_add (or ss_count_add) of its keys' positions, and with `queue` (its URLs'
 * items and the epoch) the enqueue of those it finds new, in the same call; a refusal that a retry
 * cures updates what the handle knows.
 */
export async function addToPartition(
  a: Adding,
  part: Partition,
  planning: Planning,
  positions: Buffer,
  n: number,
  batch: string,
  doing: string,
  queue?: QueueArgs,
): Promise<Outcome> {
  // The partition grew past the slices these positions are for (another batch learned it): position anew.
  if (part.have > planning.slices.length) return { kind: 'retry' };
  const keys = {
    ...batchKeys(part, batch, planning.positions.filters.length),
    inbox: part.keys.inbox,
    oldStream: part.keys.oldStream,
  };
  const args = {
    slicesAssumed: part.have,
    count: n,
    geometry: a.growth.geometryFor(planning, part.have),
    positions,
    answersTtlS: BATCH_ANSWERS_TTL_S,
    dropPrevious: part.previousBatch !== '',
  };
  const reply = list(await addBatch(a.ctx, a.counting, keys, args, queue, doing));
  const outcome = text(reply[0]);
  if (outcome === 'malformed')
    throw new SeenStoreError('INTERNAL', `invariant broken: ss_add could not read the queue items sent (${doing})`);
  if (outcome === 'old-frontier') throw oldFrontierError(a.header.scope);
  if (outcome === 'ok' || outcome === 'done') {
    if (outcome === 'ok') {
      part.have = Number(reply[2]);
      part.newestAdded = Number(reply[3]);
    }
    part.previousBatch = part.keys.batch(batch);
    const flags = reply[1] as Buffer;
    let fresh = 0;
    for (let t = 0; t < n; t++) if (flags[t] === 0x31) fresh++;
    return { kind: 'decided', flags, fresh };
  }
  if (outcome === 'missing') await createPartition(a, part);
  else if (outcome === 'stale') await a.growth.stale(part, Number(reply[1]));
  else if (outcome === 'short') part.newestAdded = Number(reply[1]);
  else if (outcome === 'sealed') return { kind: 'sealed' };
  else throw new SeenStoreError('IO_ERROR', `${doing}: unexpected answer ${outcome}`);
  return { kind: 'retry' };
}

/** Creates a partition's state and first slice's filters (at the partition's size), unless they exist. */
export async function createPartition(a: Adding, part: Partition): Promise<void> {
  const first = a.header.slices[0]!;
  const sizes = partitionFilterBytes(first, a.partitions);
  await initPartition(
    a.ctx,
    readKeys(part, sizes.length),
    JSON.stringify(first),
    a.header.state === 'open',
    sizes,
    `creating ${a.where}`,
  );
  part.have = 1;
  part.newestAdded = 0;
}
