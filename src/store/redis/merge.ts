import { SeenStoreError } from '../../errors.js';
import { filterGeometries } from '../../filters/keying.js';
import { estimateCardinality } from '../../filters/sizing.js';
import { freshId, list, text, type RedisContext } from './context.js';
import { writeBytes } from './epoch-state.js';
import { extendPartition, mergePartition } from './functions.js';
import { slicesKeptChanging, type GrowthPlan } from './growth-plan.js';
import { partitionFilterBytes, readKeys, type Partition } from './partition.js';

/** What a merge into one partition of a Redis epoch uses of the epoch. */
export interface Merging {
  readonly ctx: RedisContext;
  readonly growth: GrowthPlan;
  readonly partitions: readonly Partition[];
  readonly where: string;
  readonly scope: string;
  readonly epoch: number;
  /** Creates a partition that does not exist yet. */
  readonly init: (part: Partition) => Promise<void>;
}

/**
 * ORs a partition's part of `incoming` (every filter of every slice, whole) into it: the partition
 * first grows into the slices the incoming bits reach (ss_extend), then ORs its part of each filter
 * in one ss_merge. Resolves with the distinct URLs brought in, estimated from its fill.
 */
export async function mergeInto(
  m: Merging,
  part: Partition,
  incoming: readonly Uint8Array[],
  doing: string,
): Promise<number> {
  const count = m.partitions.length;
  const regions = incoming.map((bytes) => {
    const size = bytes.length / count;
    return bytes.subarray(part.index * size, (part.index + 1) * size);
  });
  const firstFilter = (j: number): number =>
    m.growth.slices.slice(0, j).reduce((sum, slice) => sum + filterGeometries(slice).length, 0);
  let reach = 0;
  for (let j = 0; j < m.growth.slices.length; j++) {
    const filters = filterGeometries(m.growth.slices[j]!).length;
    if (regions.slice(firstFilter(j), firstFilter(j) + filters).some((bytes) => bytes.some((b) => b !== 0)))
      reach = j + 1;
  }
  if (reach === 0) return 0;
  const id = freshId();
  for (let attempt = 0; attempt < 50; attempt++) {
    if (part.have < reach) {
      const grow = m.growth.slices
        .slice(part.have, reach)
        .map((slice, n) => [JSON.stringify(slice), firstFilter(part.have + n), partitionFilterBytes(slice, count)]);
      const reply = list(
        await extendPartition(m.ctx, readKeys(part, firstFilter(reach)), part.have, JSON.stringify(grow), doing),
      );
      const outcome = text(reply[0]);
      if (outcome === 'missing') await m.init(part);
      else if (outcome === 'stale') await m.growth.stale(part, Number(reply[1]));
      else part.have = reach;
      continue;
    }
    const filters = firstFilter(part.have);
    const temporary = regions.slice(0, filters).map((_, index) => part.keys.merging(id, index));
    for (const [index, bytes] of regions.slice(0, filters).entries()) {
      if (bytes.some((b) => b !== 0)) await writeBytes(m.ctx, temporary[index]!, bytes, doing);
    }
    const reply = list(await mergePartition(m.ctx, readKeys(part, filters), temporary, part.have, doing));
    const outcome = text(reply[0]);
    if (outcome === 'sealed' || outcome === 'stale') {
      await m.ctx.call(temporary[0]!, ['DEL', ...temporary], doing);
      if (outcome === 'sealed') throw SeenStoreError.sealed(m.scope, m.epoch);
      await m.growth.stale(part, Number(reply[1]));
      continue;
    }
    return countMerged(m, part, list(reply[1]).map(Number), list(reply[2]).map(Number), doing);
  }
  throw slicesKeptChanging(doing);
}

/** Adds the URLs a merge brought into a partition (estimated from each slice's first filter's fill) to its slices' counts. */
async function countMerged(
  m: Merging,
  part: Partition,
  before: readonly number[],
  after: readonly number[],
  doing: string,
): Promise<number> {
  let gained = 0;
  let first = 0;
  const increments: string[] = [];
  for (const [j, slice] of m.growth.slices.slice(0, part.have).entries()) {
    const geometry = filterGeometries(slice)[0]!;
    const mBits = geometry.mBits / m.partitions.length;
    const more = Math.max(
      0,
      Math.round(
        estimateCardinality(after[first]!, mBits, geometry.k) - estimateCardinality(before[first]!, mBits, geometry.k),
      ),
    );
    if (more > 0) increments.push(`a${j}`, String(more));
    gained += more;
    first += filterGeometries(slice).length;
  }
  for (let i = 0; i < increments.length; i += 2)
    await m.ctx.call(part.keys.state, ['HINCRBY', part.keys.state, increments[i]!, increments[i + 1]!], doing);
  await m.ctx.replicated(part.keys.state, doing);
  return gained;
}
