import { SeenStoreError } from '../../errors.js';
import { EpochHasher } from '../../filters/epoch-hasher.js';
import { PositionPlan } from '../../filters/positions.js';
import type { HashSchemeId } from '../../hash/scheme.js';
import { checkEpochSupported, readSliceSpec, type EpochHeader, type SliceSpec } from '../records.js';
import { nextSliceSpec } from '../slice-plan.js';
import type { Reply } from './connection.js';
import { list, text, type RedisContext } from './context.js';
import { checkRedisSlice } from './epoch-state.js';
import { planSlice } from './functions.js';
import { partitionCapacity, partitionGeometry, type Grouping, type Partition } from './partition.js';

/** Most slices an epoch grows to (as on LMDB: slice j holds capacity × factor^j URLs). */
export const MAX_SLICES = 24;

/** How the handle hashes and positions keys for the slices it knows (rebuilt when the plan grows), and the geometry argument per slice count. */
export interface Planning {
  readonly key: number;
  readonly slices: readonly SliceSpec[];
  readonly hasher: EpochHasher;
  readonly positions: PositionPlan;
  readonly geometry: Map<number, string>;
}

/**
 * The slices of one open Redis epoch as a handle knows them: the header's, then the epoch's growth
 * plan (a list on the scope's slot that every partition grows into, the first planner of a slice
 * winning), each checked as it is read; and how keys are positioned for them. The plan only grows.
 */
export class GrowthPlan {
  readonly #ctx: RedisContext;
  readonly #header: EpochHeader;
  readonly #key: string;
  readonly #where: string;
  #slices: SliceSpec[];
  #planning: Planning | undefined;

  constructor(ctx: RedisContext, header: EpochHeader, planKey: string, slices: SliceSpec[]) {
    this.#ctx = ctx;
    this.#header = header;
    this.#key = planKey;
    this.#where = `epoch ${header.scope}/${header.epoch}`;
    this.#slices = slices;
  }

  /** Every slice any partition may have. */
  get slices(): readonly SliceSpec[] {
    return this.#slices;
  }

  get #partitions(): number {
    return this.#header.partitions?.count ?? 1;
  }

  /** How keys are hashed and positioned for the slices known now (the same object until the plan grows). */
  planning(): Planning {
    if (this.#planning?.key !== this.#slices.length) {
      const partitions = this.#header.partitions;
      this.#planning = {
        key: this.#slices.length,
        slices: this.#slices,
        hasher: new EpochHasher(this.#ctx.hash, this.#header.normalize, this.#slices, partitions),
        positions: new PositionPlan(this.#slices, this.#header.hashScheme as HashSchemeId, partitions?.count ?? 1),
        geometry: new Map(),
      };
    }
    return this.#planning;
  }

  /** What the functions need of the layout `planning` positions for, for a partition that has `have` slices (cached). */
  geometryFor(planning: Planning, have: number): string {
    let geometry = planning.geometry.get(have);
    if (geometry === undefined) {
      geometry = partitionGeometry(planning.slices, this.#partitions, have, MAX_SLICES);
      planning.geometry.set(have, geometry);
    }
    return geometry;
  }

  /**
   * Before a batch: makes the plan hold enough slices for every pending partition's keys past its
   * newest slice's room, so that a full partition rarely has to refuse a batch `short`.
   */
  async makeRoom(partitions: readonly Partition[], grouping: Grouping, pending: ReadonlySet<number>): Promise<void> {
    const count = partitions.length;
    for (const p of pending) {
      const part = partitions[p]!;
      const need = grouping.starts[p + 1]! - grouping.starts[p]!;
      const roomIn = (j: number): number => partitionCapacity(this.#slices[j]!, count);
      let room = roomIn(part.have - 1) - part.newestAdded;
      for (let j = part.have; j < this.#slices.length; j++) room += roomIn(j);
      while (room < need && this.#slices.length < MAX_SLICES) {
        await this.#extend();
        room += roomIn(this.#slices.length - 1);
      }
    }
  }

  /** Reads the plan again (another handle may have grown it). */
  async reload(): Promise<void> {
    this.#adopt(list(await this.#ctx.call(this.#key, ['LRANGE', this.#key, '0', '-1'], `reading ${this.#where}`)));
  }

  /** A partition answered `stale`: it has `have` slices; a slice this handle does not know means the plan grew. */
  async stale(part: Partition, have: number): Promise<void> {
    part.have = Math.max(1, have);
    part.newestAdded = 0;
    if (have > this.#slices.length) await this.reload();
    if (have > this.#slices.length)
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `${this.#where}: partition ${part.index} has ${have} slices, its plan ${this.#slices.length}`,
      );
  }

  /** Plans the epoch's next slice (fresh seeds), unless another handle planned it first: adopts the plan either way. */
  async #extend(): Promise<void> {
    const base = this.#header.slices.length;
    const spec = nextSliceSpec(this.#header, this.#slices.length);
    checkRedisSlice(this.#header, spec);
    this.#adopt(
      list(
        await planSlice(
          this.#ctx,
          this.#key,
          this.#slices.length - base,
          JSON.stringify(spec),
          `planning growth of ${this.#where}`,
        ),
      ),
    );
  }

  /** Takes the plan as Redis holds it (slice specs as JSON), each checked as it is read. */
  #adopt(plan: readonly Reply[]): void {
    const planned = plan.map((value, j) =>
      plannedSlice(this.#header, text(value), `${this.#where}, planned slice ${j}`),
    );
    const slices = [...this.#header.slices, ...planned];
    if (slices.length <= this.#slices.length) return;
    this.#slices = slices;
    this.#planning = undefined;
  }
}

/**
 * A slice of an open epoch's growth plan as Redis holds it (JSON), checked as LMDB checks the
 * slices of a header: well formed, of a layout this version knows and fitting the epoch's
 * partitions (STORE_CORRUPT, or FORMAT_UNSUPPORTED), and within Redis's limits.
 */
export function plannedSlice(header: EpochHeader, json: string, where: string): SliceSpec {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new SeenStoreError('STORE_CORRUPT', `${where}: not JSON (${(error as Error).message})`, { cause: error });
  }
  const slice = readSliceSpec(value, where);
  checkEpochSupported({ ...header, slices: [...header.slices, slice] });
  checkRedisSlice(header, slice);
  return slice;
}

/** STORE_BUSY: a step that plans by the epoch's slices found them grown under it on every one of its bounded attempts. */
export function slicesKeptChanging(doing: string): SeenStoreError {
  return new SeenStoreError('STORE_BUSY', `${doing}: the epoch's slices kept changing`);
}
