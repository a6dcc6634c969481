import { KERNEL_WASM_PRIVATE, KERNEL_WASM_SHARED } from './kernel-wasm.js';

const WASM_PAGE_BYTES = 65_536;
/** wasm32 addresses 4 GiB: filters larger than what is left of it keep their bits in JavaScript. */
const KERNEL_MEMORY_PAGES_MAX = 65_536;
/** Filters and tables are placed on 64-byte lines (a blocked filter's block is one). */
const LINE_BYTES = 64;

interface KernelExports {
  readonly hashRanges: (
    ranges: number,
    count: number,
    seeds: number,
    seedCount: number,
    out: number,
    strideBytes: number,
    controls: number,
  ) => number;
  readonly controlAt: (from: number, to: number) => number;
  readonly decide: (
    plan: number,
    words: number,
    strideBytes: number,
    from: number,
    to: number,
    room: number,
    flags: number,
  ) => number;
  readonly fresh: () => number;
}

const compiled: { shared?: WebAssembly.Module; private?: WebAssembly.Module } = {};

/**
 * One instance of the hot-path kernel (kernel.wat) with its own memory: the bits of the filters
 * placed in it (allocate), and above them a scratch area that each call reuses (scratch). With
 * `shared`, the memory is a SharedArrayBuffer, so views of it (a filter's bytes) stay valid when it
 * grows; a private memory (hashing only) detaches its views on growth, but JavaScript copies keys
 * into it faster (measured: ~21 vs ~6 ns of overhead per 128-byte key). Take scratch views again
 * after any call that may grow the memory. One thread uses an instance.
 */
export class Kernel {
  readonly #memory: WebAssembly.Memory;
  readonly #exports: KernelExports;
  /** End of the permanent allocations; the scratch area starts here. */
  #top = 0;
  /** End of what any scratch area reached: above it the memory is as grow() made it, zeroed. */
  #scratchEnd = 0;
  #bytes: Uint8Array;

  constructor(shared: boolean, initialBytes = WASM_PAGE_BYTES) {
    const module = shared
      ? (compiled.shared ??= new WebAssembly.Module(KERNEL_WASM_SHARED as Uint8Array<ArrayBuffer>))
      : (compiled.private ??= new WebAssembly.Module(KERNEL_WASM_PRIVATE as Uint8Array<ArrayBuffer>));
    this.#memory = new WebAssembly.Memory({
      initial: Math.ceil(initialBytes / WASM_PAGE_BYTES),
      maximum: KERNEL_MEMORY_PAGES_MAX,
      shared,
    });
    this.#exports = new WebAssembly.Instance(module, { env: { mem: this.#memory } })
      .exports as unknown as KernelExports;
    this.#bytes = new Uint8Array(this.#memory.buffer);
  }

  /** The memory as it is now (a new buffer after growth). */
  get buffer(): ArrayBuffer | SharedArrayBuffer {
    return this.#memory.buffer;
  }

  /** The whole memory as bytes (renewed after growth). */
  get bytes(): Uint8Array {
    return this.#bytes;
  }

  /**
   * Reserves `byteLength` zeroed bytes for good (a filter's bits, its dirty flags), on a 64-byte
   * line; returns their address, or -1 when the memory cannot hold them.
   */
  allocate(byteLength: number): number {
    const at = Math.ceil(this.#top / LINE_BYTES) * LINE_BYTES;
    if (!this.#fits(at + byteLength)) return -1;
    this.#top = at + byteLength;
    // The scratch area may have held a call's data here; above it the pages are untouched zeroes,
    // and writing them would make a lazily loaded filter resident whole (its pages in RSS).
    const written = Math.min(this.#top, this.#scratchEnd);
    if (written > at) this.#bytes.fill(0, at, written);
    return at;
  }

  /** Whether `bytes` more could still be allocated. */
  canAllocate(byteLength: number): boolean {
    return (
      Math.ceil(this.#top / LINE_BYTES) * LINE_BYTES + byteLength <=
      KERNEL_MEMORY_PAGES_MAX * WASM_PAGE_BYTES - WASM_PAGE_BYTES
    );
  }

  /**
   * The scratch area, at least `byteLength` bytes, on a 64-byte line: its address. Its contents are
   * the caller's until the next call that allocates. Throws RangeError past 4 GiB.
   */
  scratch(byteLength: number): number {
    const at = Math.ceil(this.#top / LINE_BYTES) * LINE_BYTES;
    if (!this.#fits(at + byteLength)) throw new RangeError(`the kernel's memory cannot hold ${byteLength} more bytes`);
    this.#scratchEnd = Math.max(this.#scratchEnd, at + byteLength);
    return at;
  }

  /**
   * Hashes keys (kernel.wat hashRanges); returns -1, or with `controls` the index of the first key
   * that holds a control byte (0x00-0x1F, 0x7F), where hashing stopped.
   */
  hashRanges(
    ranges: number,
    count: number,
    seeds: number,
    seedCount: number,
    out: number,
    strideBytes: number,
    controls: boolean,
  ): number {
    return this.#exports.hashRanges(ranges, count, seeds, seedCount, out, strideBytes, controls ? 1 : 0);
  }

  /** Address of the first control byte in [from, to) that does not end a line (kernel.wat controlAt); `to` when there is none. */
  controlAt(from: number, to: number): number {
    return this.#exports.controlAt(from, to);
  }

  /** Decides URLs from..to - 1 (kernel.wat decide); returns how many were decided; `fresh` tells how many of them were new. */
  decide(
    plan: number,
    words: number,
    strideBytes: number,
    from: number,
    to: number,
    room: number,
    flags: number,
  ): number {
    return this.#exports.decide(plan, words, strideBytes, from, to, Math.min(room, 0x7fff_ffff), flags);
  }

  /** New URLs of the last decide(). */
  get fresh(): number {
    return this.#exports.fresh();
  }

  /** Grows the memory to hold `end` bytes (false when wasm32 cannot); renews the byte view. */
  #fits(end: number): boolean {
    const have = this.#memory.buffer.byteLength;
    if (end <= have) return true;
    const pages = Math.ceil((end - have) / WASM_PAGE_BYTES);
    if (have / WASM_PAGE_BYTES + pages > KERNEL_MEMORY_PAGES_MAX) return false;
    this.#memory.grow(pages);
    this.#bytes = new Uint8Array(this.#memory.buffer);
    return true;
  }
}
