import type { FilterGeometry } from '../../filters/bloom.js';
import type { SharedFilterMemory } from '../../filters/regions.js';
import type { HashSchemeId } from '../../hash/scheme.js';

/** Slots of the control words the calling thread and the bit thread share (an Int32Array). */
export const CTL = {
  /** Batches started (the calling thread increments it; ABORTED ends the thread). */
  job: 0,
  /** URLs of the batch whose hashes are ready (ABORTED: the batch is abandoned). */
  progress: 1,
  /** The last batch the bit thread finished. */
  done: 2,
  /** STATUS_OK, or STATUS_FAILED (the message follows on the port). */
  status: 3,
  /** URLs in the batch. */
  count: 4,
  /** Of them, new. */
  fresh: 5,
  /** 1 when the calling thread computes the newest slice's positions (BitThreadBinding.positions). */
  ahead: 6,
  /** Bits the batch set, per filter of the newest slice (MAX_BIT_THREAD_FILTERS slots). */
  setBits: 8,
} as const;

/** Filters a slice may have for the bit thread to take its batches (the spatial strategy's are few). */
export const MAX_BIT_THREAD_FILTERS = 56;
export const CTL_SLOTS = CTL.setBits + MAX_BIT_THREAD_FILTERS;

export const ABORTED = -1;
export const STATUS_OK = 0;
export const STATUS_FAILED = 1;

/** What the bit thread works on, sent when it changes: the slices' filters (older first), the batch buffers. */
export interface BitThreadBinding {
  readonly slices: readonly {
    readonly at: number;
    readonly filters: readonly {
      readonly geometry: FilterGeometry;
      readonly regionBytes: number;
      readonly scheme: HashSchemeId;
      readonly memory: SharedFilterMemory;
    }[];
  }[];
  readonly stride: number;
  readonly words: SharedArrayBuffer;
  readonly flags: SharedArrayBuffer;
  /** Positions computed ahead (when CTL.ahead): URL i's in newest filter f at i * perUrl + offsets[f]. */
  readonly positions: SharedArrayBuffer;
  readonly perUrl: number;
  readonly offsets: readonly number[];
}

/**
 * Loads of a control word before blocking in Atomics.wait, while a batch is under way: waking a
 * blocked thread takes the OS tens of microseconds, which a chunk of 1,024 URLs (~70 µs of work)
 * cannot afford ten times per batch. About 20-50 µs of polling; never between batches.
 */
export const SPIN_LOADS = 20_000;

/** Waits until ctl[slot] differs from `value` (polling first, then blocking); returns the new value. */
export function awaitChange(ctl: Int32Array, slot: number, value: number, timeoutMs = Infinity): number {
  for (let spin = 0; spin < SPIN_LOADS; spin++) {
    const now = Atomics.load(ctl, slot);
    if (now !== value) return now;
  }
  Atomics.wait(ctl, slot, value, timeoutMs);
  return Atomics.load(ctl, slot);
}
