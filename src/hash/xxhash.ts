import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import xxhash from 'xxhash-wasm';
import type { XXHashAPI } from 'xxhash-wasm';
import { SeenStoreError } from '../errors.js';
import { BATCH_SHIM_WASM } from './batch-shim.js';

/** Keys encoded per call into wasm memory; larger batches are hashed in several rounds. */
const ROUND_BYTES_MAX = 4 * 2 ** 20;
const WASM_PAGE_BYTES = 65_536;

interface XxhashExports {
  readonly mem: WebAssembly.Memory;
  readonly xxh64: (ptr: number, length: number, seed: bigint) => bigint;
}

interface ShimExports {
  readonly hashBatch: (offsets: number, count: number, seed: bigint, out: number) => void;
  readonly hashRanges: (ranges: number, count: number, seed: bigint, out: number) => void;
}

/**
 * Keys that are already UTF-8, where they lie: key i is bytes[ranges[2i]] up to (not including)
 * bytes[ranges[2i + 1]]. Keys come in increasing order and do not overlap; bytes between them
 * (line separators) are ignored. The lines of an input block are keys in this form without a copy.
 */
export interface Utf8Keys {
  readonly bytes: Uint8Array;
  readonly ranges: Uint32Array;
  readonly count: number;
}

/** A batch of keys: strings, or UTF-8 bytes where they lie. */
export type Keys = readonly string[] | Utf8Keys;

export function keyCount(keys: Keys): number {
  return isUtf8Keys(keys) ? keys.count : keys.length;
}

export function isUtf8Keys(keys: Keys): keys is Utf8Keys {
  return !Array.isArray(keys);
}

/** Keys start..end of the batch (a view for UTF-8 keys, a copy of the array for strings). */
export function sliceKeys(keys: Keys, start: number, end: number): Keys {
  if (!isUtf8Keys(keys)) return start === 0 && end === keys.length ? keys : keys.slice(start, end);
  return { bytes: keys.bytes, ranges: keys.ranges.subarray(2 * start, 2 * end), count: end - start };
}

/** The keys at `indices`, in that order (UTF-8 keys keep their bytes; only the ranges are picked). */
export function pickKeys(keys: Keys, indices: readonly number[]): Keys {
  if (!isUtf8Keys(keys)) return indices.map((i) => keys[i]!);
  const ranges = new Uint32Array(2 * indices.length);
  indices.forEach((i, t) => {
    ranges[2 * t] = keys.ranges[2 * i]!;
    ranges[2 * t + 1] = keys.ranges[2 * i + 1]!;
  });
  return { bytes: keys.bytes, ranges, count: indices.length };
}

/** The keys as strings (decoding UTF-8 keys: for the strategies that derive keys from the URL text). */
export function keyStrings(keys: Keys): readonly string[] {
  if (!isUtf8Keys(keys)) return keys;
  const { bytes, ranges, count } = keys;
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  return Array.from({ length: count }, (_, i) => view.toString('utf8', ranges[2 * i], ranges[2 * i + 1]));
}

/**
 * xxHash through xxhash-wasm. URL hashes are xxh64(UTF-8 bytes of the key, seed). For batches, the
 * keys are UTF-8-encoded once into the wasm memory and every seed's hashes are computed by one call
 * of a small shim (batch-shim.wat) into xxhash-wasm's own xxh64 export: no BigInt and no
 * allocation per key. Record checksums are xxh32 with seed 0.
 */
export class XxHash {
  readonly #api: XXHashAPI;
  readonly #memory: WebAssembly.Memory;
  readonly #hashBatch: ShimExports['hashBatch'];
  readonly #hashRangesShim: ShimExports['hashRanges'];
  #bytes: Buffer;
  #offsets = new Uint32Array(1024);
  #encodedCount = 0;
  #encodedBytes = 0;
  readonly #scratch64 = new BigUint64Array(1);
  readonly #scratch32 = new Uint32Array(this.#scratch64.buffer);

  private constructor(api: XXHashAPI, core: XxhashExports, shim: ShimExports) {
    this.#api = api;
    this.#memory = core.mem;
    this.#hashBatch = shim.hashBatch;
    this.#hashRangesShim = shim.hashRanges;
    this.#bytes = Buffer.from(core.mem.buffer);
  }

  static async load(): Promise<XxHash> {
    // The same wasm binary that xxhash-wasm embeds, shipped in its package as a file.
    const entry = createRequire(import.meta.url).resolve('xxhash-wasm');
    const wasmPath = join(dirname(entry), '..', 'workerd', 'xxhash.wasm');
    const core = (await WebAssembly.instantiate(readFileSync(wasmPath))).instance.exports as unknown as XxhashExports;
    const shim = (await WebAssembly.instantiate(BATCH_SHIM_WASM, { xxhash: { mem: core.mem, xxh64: core.xxh64 } })).instance
      .exports as unknown as ShimExports;
    return new XxHash(await xxhash(), core, shim);
  }

  /**
   * Hashes `key` with `seed` and writes the low half to out[at] and the high half to out[at + 1]:
   * the little-endian u64 layout the journal stores. One key at a time: for tools and tests.
   */
  hashInto(key: string, seed: bigint, out: Uint32Array, at: number): void {
    this.#scratch64[0] = this.#api.h64(key, seed);
    out[at] = this.#scratch32[0]!;
    out[at + 1] = this.#scratch32[1]!;
  }

  /**
   * Hashes every key with every seed: the hash of key i with seeds[s] goes to
   * out[i * stride + at + 2 * s] (low half) and the next word (high half). A key that is not
   * well-formed UTF-16 (a lone surrogate, which UTF-8 cannot encode exactly) is refused with
   * INVALID_URL before anything is hashed.
   */
  hashKeys(keys: Keys, seeds: readonly bigint[], out: Uint32Array, stride: number, at: number): void {
    if (isUtf8Keys(keys)) {
      this.#hashRanges(keys, 0, keys.count, seeds, out, stride, at);
      return;
    }
    for (let start = 0; start < keys.length; ) {
      const count = this.#encode(keys, start);
      for (let s = 0; s < seeds.length; s++) this.#hashEncoded(seeds[s]!, count, out, start * stride + at + 2 * s, stride);
      start += count;
    }
  }

  /**
   * UTF-8-encodes keys from `start` into wasm memory, as many as fit in one round; returns how many.
   * The round's keys are joined and written by one native call (one string per round, none per
   * key); key boundaries come from the UTF-16 lengths when the round is ASCII, else from a walk over
   * the written bytes.
   */
  #encode(keys: readonly string[], start: number): number {
    if (this.#offsets.length < Math.min(keys.length - start, 65_536) + 1) this.#offsets = new Uint32Array(Math.min(keys.length - start, 65_536) + 1);
    const offsets = this.#offsets;
    let count = 0;
    let chars = 0;
    while (start + count < keys.length && count + 1 < offsets.length && (count === 0 || 3 * chars < ROUND_BYTES_MAX)) {
      chars += keys[start + count]!.length;
      count++;
    }
    this.#ensure(3 * chars);
    const position = encodeKeys(keys, start, count, this.#bytes, offsets);
    this.#encodedCount = count;
    this.#encodedBytes = position;
    return count;
  }

  /**
   * Hashes keys `from`..`to` of `keys` with every seed: key i's hash with seeds[s] goes to
   * out[(i - from) * stride + at + 2 * s] and the next word. Each round copies the bytes spanning
   * its keys into wasm memory at once (separators and all) and hashes them where they lie.
   */
  #hashRanges(keys: Utf8Keys, from: number, to: number, seeds: readonly bigint[], out: Uint32Array, stride: number, at: number): void {
    const { bytes, ranges } = keys;
    for (let start = from; start < to; ) {
      const base = ranges[2 * start]!;
      let end = start + 1;
      while (end < to && end - start < 65_536 && ranges[2 * end + 1]! - base <= ROUND_BYTES_MAX) end++;
      const span = ranges[2 * end - 1]! - base;
      const count = end - start;
      const rangesAt = (span + 7) & ~7;
      const hashesAt = rangesAt + 8 * count;
      this.#ensure(hashesAt + 8 * count);
      this.#bytes.set(bytes.subarray(base, base + span), 0);
      const local = new Uint32Array(this.#memory.buffer, rangesAt, 2 * count);
      for (let i = 0; i < 2 * count; i++) local[i] = ranges[2 * start + i]! - base;
      const hashes = new Uint32Array(this.#memory.buffer, hashesAt, 2 * count);
      for (let s = 0; s < seeds.length; s++) {
        this.#hashRangesShim(rangesAt, count, seeds[s]!, hashesAt);
        const first = (start - from) * stride + at + 2 * s;
        for (let i = 0; i < count; i++) {
          out[first + i * stride] = hashes[2 * i]!;
          out[first + i * stride + 1] = hashes[2 * i + 1]!;
        }
      }
      start = end;
    }
  }

  #hashEncoded(seed: bigint, count: number, out: Uint32Array, at: number, stride: number): void {
    const offsetsAt = (this.#encodedBytes + 7) & ~7;
    const hashesAt = offsetsAt + 8 * (((count + 1) * 4 + 7) >>> 3);
    this.#ensure(hashesAt + 8 * count);
    new Uint32Array(this.#memory.buffer, offsetsAt, count + 1).set(this.#offsets.subarray(0, count + 1));
    this.#hashBatch(offsetsAt, this.#encodedCount, seed, hashesAt);
    const hashes = new Uint32Array(this.#memory.buffer, hashesAt, 2 * count);
    for (let i = 0; i < count; i++) {
      out[at + i * stride] = hashes[2 * i]!;
      out[at + i * stride + 1] = hashes[2 * i + 1]!;
    }
  }

  /** Grows the wasm memory to hold `bytes`; the byte view is renewed after growth. */
  #ensure(bytes: number): void {
    if (bytes <= this.#bytes.length) return;
    const have = this.#memory.buffer.byteLength;
    this.#memory.grow(Math.ceil((bytes - have) / WASM_PAGE_BYTES));
    this.#bytes = Buffer.from(this.#memory.buffer);
  }

  /** The 64-bit hash as 16 lower-case hex digits (for test vectors and docs). */
  hex(key: string, seed: bigint): string {
    return this.#api.h64ToString(key, seed);
  }

  /** A streaming xxh64 with seed 0 (whole-file checksums of export files). */
  createHash64(): { update(bytes: Uint8Array): { digest(): bigint }; digest(): bigint } {
    return this.#api.create64(0n);
  }

  /** xxh32 of `bytes` with seed 0: the checksum of stored chunks and journal records. */
  checksum(bytes: Uint8Array): number {
    return this.#api.h32Raw(bytes, 0);
  }
}

/**
 * UTF-8-encodes keys start..start+count back to back at the start of `target` (room for 3 bytes
 * per UTF-16 unit) by one native write of the joined keys, and writes their boundaries to
 * offsets[0..count]: from the UTF-16 lengths when all is ASCII, else from a walk over the bytes.
 * Returns the bytes written. A key with a lone surrogate is refused (INVALID_URL).
 */
function encodeKeys(keys: readonly string[], start: number, count: number, target: Buffer, offsets: Uint32Array): number {
  const joined = start === 0 && count === keys.length ? keys.join('') : keys.slice(start, start + count).join('');
  const written = target.write(joined, 0, 'utf8');
  let end = 0;
  if (written === joined.length) {
    for (let i = 0; i < count; i++) {
      offsets[i] = end;
      end += keys[start + i]!.length;
    }
  } else {
    end = utf8Boundaries(keys, start, count, target, offsets);
    checkEncodedKeys(keys, start, count, target, offsets, end);
  }
  offsets[count] = end;
  return end;
}

/**
 * Key boundaries in the UTF-8 `bytes` of keys start..start+count written back to back: each key
 * spans its UTF-16 length (a lead byte of 1-3 bytes encodes one UTF-16 unit, of 4 bytes a surrogate
 * pair). Writes offsets[0..count-1]; returns the end of the last key. A key ending in the first
 * half of a pair whose second half starts the next key is refused (INVALID_URL).
 */
export function utf8Boundaries(keys: readonly string[], start: number, count: number, bytes: Uint8Array, offsets: Uint32Array): number {
  let position = 0;
  for (let i = 0; i < count; i++) {
    offsets[i] = position;
    for (let units = keys[start + i]!.length; units > 0; ) {
      const lead = bytes[position]!;
      if (lead < 0x80) position += 1;
      else if (lead >= 0xf0) {
        // A pair split across two keys joins up in the joined batch: two lone halves, refused.
        if (units === 1) throw illFormedKey(keys[start + i]!);
        position += 4;
        units--;
      } else position += lead >= 0xe0 ? 3 : 2;
      units--;
    }
  }
  return position;
}

/**
 * Refuses a key with a lone surrogate, which Buffer#write encodes as U+FFFD (EF BF BD): only keys
 * whose UTF-8 holds that sequence are checked, so a batch pays nothing unless one does.
 */
function checkEncodedKeys(keys: readonly string[], start: number, count: number, bytes: Uint8Array, offsets: Uint32Array, end: number): void {
  const written = bytes.subarray(0, end);
  let i = 0;
  for (let at = written.indexOf(0xef); at >= 0; at = written.indexOf(0xef, at + 1)) {
    if (written[at + 1] !== 0xbf || written[at + 2] !== 0xbd) continue;
    while (i + 1 < count && offsets[i + 1]! <= at) i++;
    const key = keys[start + i]!;
    if (!key.isWellFormed()) throw illFormedKey(key);
  }
}

/** INVALID_URL for a key with a lone surrogate. */
export function illFormedKey(key: string): SeenStoreError {
  return new SeenStoreError('INVALID_URL', `URL ${JSON.stringify(key.slice(0, 100))} is not well-formed UTF-16 (a lone surrogate): it cannot be a key`);
}
