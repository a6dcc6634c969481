import { Kernel } from '../hash/kernel.js';
import { BLOCK_BITS, stepGrowth } from '../hash/scheme.js';
import type { BloomFilter, FilterGeometry } from './bloom.js';
import type { Decided, DecideTarget } from './decide.js';
import type { SharedFilterMemory } from './regions.js';

/** Plan layout of kernel.wat: slice table from byte 8, filter entries of 48 bytes from byte 256. */
const PLAN_SLICES_AT = 8;
const PLAN_FILTERS_AT = 256;
const PLAN_FILTER_BYTES = 48;
/** Filters a plan describes: every filter of every slice of an epoch (24 slices of a few filters). */
const PLAN_FILTERS_MAX = 1024;
const PLAN_BYTES = PLAN_FILTERS_AT + PLAN_FILTER_BYTES * PLAN_FILTERS_MAX;
const SLICES_MAX = (PLAN_FILTERS_AT - PLAN_SLICES_AT) / 8;

/**
 * The working copy of an epoch's Bloom bits where the kernel can reach them: filters are placed
 * in a kernel's memory (place), and the add-if-absent decision of a batch runs there in one call
 * (decide), as decideRange does it in JavaScript: the same bits, dirty regions, counts and answers.
 *
 * This is the seam for "bits elsewhere": a filter that is not placed here (too large for wasm32's
 * 4 GiB, in a bit thread's shared memory, or, later, read from chunks or a memory map) keeps
 * decideRange, and decide() answers undefined for any target that has one.
 */
export class KernelBits {
  readonly #kernel = new Kernel(true, PLAN_BYTES);
  readonly #plan = this.#kernel.allocate(PLAN_BYTES);
  /** The buffers of the kernel's memory that filters were placed in. */
  readonly #buffers = new Set<ArrayBufferLike>();
  /** The target the plan describes (rewritten when the slices change). */
  #planned: DecideTarget | undefined;
  #planResident = false;

  /** Memory for a filter of `geometry` in regions of `regionBytes`, or undefined when the kernel cannot hold it. */
  place(geometry: FilterGeometry, regionBytes: number): SharedFilterMemory | undefined {
    const byteLength = geometry.mBits / 8;
    const regions = Math.ceil(byteLength / regionBytes);
    if (!this.#kernel.canAllocate(byteLength + regions + 128)) return undefined;
    const bytesAt = this.#kernel.allocate(byteLength);
    const dirtyAt = this.#kernel.allocate(regions);
    const buffer = this.#kernel.buffer as SharedArrayBuffer;
    this.#buffers.add(buffer);
    return { bytes: buffer, dirty: buffer, bytesAt, dirtyAt };
  }

  /**
   * Decides URLs from `from` until `to`, or until `room` of them were new, as decideRange does,
   * with URL i's hashes in words[i * stride..] and its flag into flags[i]. Undefined (nothing
   * done) when a filter of `target` is not placed in this kernel.
   */
  decide(
    target: DecideTarget,
    words: Uint32Array,
    from: number,
    to: number,
    room: number,
    flags: Uint8Array,
  ): Decided | undefined {
    if (!this.#planFor(target)) return undefined;
    const count = to - from;
    const strideBytes = 4 * target.stride;
    const wordsAt = this.#kernel.scratch(strideBytes * count + count);
    const flagsAt = wordsAt + strideBytes * count;
    const buffer = this.#kernel.buffer;
    new Uint32Array(buffer, wordsAt, target.stride * count).set(
      words.subarray(from * target.stride, to * target.stride),
    );
    const consumed = this.#kernel.decide(this.#plan, wordsAt, strideBytes, 0, count, room, flagsAt);
    flags.set(new Uint8Array(buffer, flagsAt, consumed), from);
    this.#countSetBits(target);
    return { consumed, fresh: this.#kernel.fresh };
  }

  /** Writes the plan for `target` unless it describes it already; false when a filter is not placed here. */
  #planFor(target: DecideTarget): boolean {
    if (this.#planned === target) return this.#planResident;
    this.#planned = target;
    const slices = [...target.older, { filters: target.newest, at: target.newestAt }];
    const filterCount = slices.reduce((sum, slice) => sum + slice.filters.length, 0);
    this.#planResident =
      slices.length <= SLICES_MAX &&
      filterCount <= PLAN_FILTERS_MAX &&
      slices.every((slice) => slice.filters.every((filter) => this.#buffers.has(filter.bytes.buffer)));
    if (!this.#planResident) return false;
    const view = new DataView(this.#kernel.buffer, this.#plan, PLAN_BYTES);
    view.setInt32(0, slices.length, true);
    let f = 0;
    slices.forEach((slice, j) => {
      view.setInt32(PLAN_SLICES_AT + 8 * j, f, true);
      view.setInt32(PLAN_SLICES_AT + 8 * j + 4, slice.filters.length, true);
      slice.filters.forEach((filter, i) =>
        writeFilter(view, PLAN_FILTERS_AT + PLAN_FILTER_BYTES * f++, filter, 4 * (slice.at + 2 * i)),
      );
    });
    return true;
  }

  /** Hands the bits the kernel set in the newest slice's filters to their counts. */
  #countSetBits(target: DecideTarget): void {
    const view = new DataView(this.#kernel.buffer, this.#plan, PLAN_BYTES);
    const first = PLAN_FILTERS_AT + PLAN_FILTER_BYTES * view.getInt32(PLAN_SLICES_AT + 8 * target.older.length, true);
    target.newest.forEach((filter, i) => {
      const at = first + PLAN_FILTER_BYTES * i + 36;
      filter.countSetBits(view.getInt32(at, true));
      view.setInt32(at, 0, true);
    });
  }
}

/** One filter's entry of the plan (the layout is kernel.wat's). */
function writeFilter(view: DataView, at: number, filter: BloomFilter, wordAtBytes: number): void {
  const { mBits, k, layout } = filter.geometry;
  const memory = filter.sharedMemory!;
  view.setBigUint64(at, BigInt(mBits), true);
  view.setInt32(at + 8, k, true);
  view.setInt32(at + 12, layout === 'blocked' ? 1 : 0, true);
  view.setInt32(at + 16, stepGrowth(filter.scheme), true);
  view.setInt32(at + 20, memory.bytesAt!, true);
  view.setInt32(at + 24, memory.dirtyAt!, true);
  view.setInt32(at + 28, filter.regionBytes, true);
  view.setInt32(at + 32, wordAtBytes, true);
  view.setInt32(at + 36, 0, true);
  view.setInt32(at + 40, mBits / BLOCK_BITS, true);
}
