import xxhash from 'xxhash-wasm';
import type { XXHashAPI } from 'xxhash-wasm';
import { SeenStoreError } from '../errors.js';
import { Kernel } from './kernel.js';

/** Keys encoded per call into wasm memory; larger batches are hashed in several rounds. */
const ROUND_BYTES_MAX = 4 * 2 ** 20;
/** Keys per round: the scratch holds their ranges and hashes beside their bytes. */
const ROUND_KEYS_MAX = 65_536;

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

/** Keys start..end of the batch (a view for UTF-8 keys, a copy of the array for strings; the batch itself when whole). */
export function sliceKeys(keys: Keys, start: number, end: number): Keys {
  if (start === 0 && end === keyCount(keys)) return keys;
  if (!isUtf8Keys(keys)) return keys.slice(start, end);
  return { bytes: keys.bytes, ranges: keys.ranges.subarray(2 * start, 2 * end), count: end - start };
}

/**
 * UTF-8 batches whose keys a vector pass found free of control characters already (the CLI's line
 * reader: src/cli/lines.ts): hashKeys does not look again (~2.5 ns per URL on filter-new's path).
 * The batch must not change after it is marked; a part of it taken apart is looked at again.
 */
const controlFreeKeys = new WeakSet<Utf8Keys>();

/** Marks `keys` as free of control characters (see controlFreeKeys). */
export function markControlFree<K extends Utf8Keys>(keys: K): K {
  controlFreeKeys.add(keys);
  return keys;
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
 * xxHash. URL hashes are xxh64(UTF-8 bytes of the key, seed). For batches, the keys' bytes are put
 * into the memory of a kernel (kernel.wat) once and one call hashes every key under every seed,
 * each key's seeds while its bytes are in the cache: no BigInt and no allocation per key. Single
 * hashes, hex digests, streaming hashes and record checksums (xxh32, seed 0) come from
 * xxhash-wasm, whose xxh64 the kernel's equals (test/kernel.test.ts).
 */
export class XxHash {
  readonly #api: XXHashAPI;
  readonly #kernel = new Kernel(false, ROUND_BYTES_MAX);
  #offsets = new Uint32Array(1024);
  readonly #scratch64 = new BigUint64Array(1);
  readonly #scratch32 = new Uint32Array(this.#scratch64.buffer);

  private constructor(api: XXHashAPI) {
    this.#api = api;
  }

  static async load(): Promise<XxHash> {
    return new XxHash(await xxhash());
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
   * INVALID_URL, and with `controls` (keys that are URLs) so is a key that holds a control
   * character (U+0000-U+001F, U+007F), looked for by the kernel in the pass that hashes: what was
   * hashed before it is left in `out`, for the caller to throw away.
   */
  hashKeys(keys: Keys, seeds: readonly bigint[], out: Uint32Array, stride: number, at: number, controls = false): void {
    if (isUtf8Keys(keys)) {
      this.#hashRanges(keys, seeds, out, stride, at, controls && !controlFreeKeys.has(keys));
      return;
    }
    for (let start = 0; start < keys.length; ) {
      const count = this.#hashStrings(keys, start, seeds, out, stride, at, controls);
      start += count;
    }
  }

  /**
   * UTF-8-encodes keys from `start` into the kernel's memory, as many as fit in one round, and
   * hashes them; returns how many. Each key is written where the last ended (encodeKeys): no
   * string is made.
   */
  #hashStrings(
    keys: readonly string[],
    start: number,
    seeds: readonly bigint[],
    out: Uint32Array,
    stride: number,
    at: number,
    controls: boolean,
  ): number {
    if (this.#offsets.length < Math.min(keys.length - start, ROUND_KEYS_MAX) + 1)
      this.#offsets = new Uint32Array(Math.min(keys.length - start, ROUND_KEYS_MAX) + 1);
    const offsets = this.#offsets;
    let count = 0;
    let chars = 0;
    while (start + count < keys.length && count + 1 < offsets.length && (count === 0 || 3 * chars < ROUND_BYTES_MAX)) {
      chars += keys[start + count]!.length;
      count++;
    }
    const round = this.#round(count, seeds, 3 * chars);
    const end = encodeKeys(keys, start, count, Buffer.from(this.#kernel.buffer, round.keysAt, 3 * chars), offsets);
    const ranges = round.ranges;
    for (let i = 0; i < count; i++) {
      ranges[2 * i] = round.keysAt + offsets[i]!;
      ranges[2 * i + 1] = round.keysAt + (i + 1 < count ? offsets[i + 1]! : end);
    }
    const bad = this.#hashRound(round, count, seeds.length, out, start * stride, stride, at, controls);
    if (bad >= 0) throw controlKey(keys[start + bad]!);
    return count;
  }

  /**
   * Hashes UTF-8 keys with every seed: key i's hash with seeds[s] goes to out[i * stride + at + 2s]
   * and the next word. Each round copies the bytes spanning its keys into the kernel's memory at
   * once (separators and all) and hashes them where they lie.
   */
  #hashRanges(
    keys: Utf8Keys,
    seeds: readonly bigint[],
    out: Uint32Array,
    stride: number,
    at: number,
    controls: boolean,
  ): void {
    const { bytes, ranges, count: total } = keys;
    for (let start = 0; start < total; ) {
      const base = ranges[2 * start]!;
      let end = start + 1;
      while (end < total && end - start < ROUND_KEYS_MAX && ranges[2 * end + 1]! - base <= ROUND_BYTES_MAX) end++;
      const span = ranges[2 * end - 1]! - base;
      const count = end - start;
      const round = this.#round(count, seeds, span);
      this.#kernel.bytes.set(bytes.subarray(base, base + span), round.keysAt);
      const local = round.ranges;
      const shift = round.keysAt - base;
      for (let i = 0; i < 2 * count; i++) local[i] = ranges[2 * start + i]! + shift;
      const bad = this.#hashRound(round, count, seeds.length, out, start * stride, stride, at, controls);
      if (bad >= 0)
        throw controlKey(
          Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString(
            'utf8',
            ranges[2 * (start + bad)],
            ranges[2 * (start + bad) + 1],
          ),
        );
      start = end;
    }
  }

  /** Scratch for one round of `count` keys of `keyBytes` bytes: seeds written, views of the ranges and hashes. */
  #round(
    count: number,
    seeds: readonly bigint[],
    keyBytes: number,
  ): { keysAt: number; rangesAt: number; ranges: Uint32Array; seedsAt: number; hashesAt: number } {
    const seedsAt = this.#kernel.scratch(8 * seeds.length + 8 * count + keyBytes + 8 + 8 * seeds.length * count + 64);
    const rangesAt = seedsAt + 8 * seeds.length;
    const keysAt = rangesAt + 8 * count;
    const hashesAt = (keysAt + keyBytes + 7) & ~7;
    const buffer = this.#kernel.buffer;
    const seedWords = new BigUint64Array(buffer, seedsAt, seeds.length);
    for (let s = 0; s < seeds.length; s++) seedWords[s] = seeds[s]!;
    return { keysAt, rangesAt, ranges: new Uint32Array(buffer, rangesAt, 2 * count), seedsAt, hashesAt };
  }

  /**
   * Hashes a round's keys under every seed and copies the hashes to out[first + i * stride + at + 2s];
   * returns -1, or with `controls` the round's first key that holds a control byte (nothing copied).
   */
  #hashRound(
    round: { rangesAt: number; seedsAt: number; hashesAt: number },
    count: number,
    seedCount: number,
    out: Uint32Array,
    first: number,
    stride: number,
    at: number,
    controls: boolean,
  ): number {
    const bad = this.#kernel.hashRanges(
      round.rangesAt,
      count,
      round.seedsAt,
      seedCount,
      round.hashesAt,
      8 * seedCount,
      controls,
    );
    if (bad >= 0) return bad;
    const words = 2 * seedCount;
    const hashes = new Uint32Array(this.#kernel.buffer, round.hashesAt, words * count);
    if (words === stride && at === 0) {
      out.set(hashes, first);
      return -1;
    }
    for (let i = 0; i < count; i++) {
      const into = first + i * stride + at;
      for (let w = 0; w < words; w++) out[into + w] = hashes[i * words + w]!;
    }
    return -1;
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
 * per UTF-16 unit), one native write per key, and writes their boundaries to offsets[0..count].
 * Returns the bytes written. A key with a lone surrogate (which Buffer#write encodes as U+FFFD,
 * so its bytes outnumber its UTF-16 units) is refused (INVALID_URL).
 *
 * Not one write of the joined keys: the joined string of a 10,000-URL batch (~600 KB) is a large
 * object V8 maps afresh for each batch, and where a first touch of a page costs 12-16 us (stop
 * 40's machine) that cost 400 ns per URL against 87 per key (docs/benchmarks.md).
 */
function encodeKeys(
  keys: readonly string[],
  start: number,
  count: number,
  target: Buffer,
  offsets: Uint32Array,
): number {
  let end = 0;
  for (let i = 0; i < count; i++) {
    const key = keys[start + i]!;
    offsets[i] = end;
    const written = target.write(key, end, 'utf8');
    if (written !== key.length && !key.isWellFormed()) throw illFormedKey(key);
    end += written;
  }
  offsets[count] = end;
  return end;
}

/** INVALID_URL for a URL key with a control character (U+0000-U+001F, U+007F), named by its code and place. */
export function controlKey(key: string): SeenStoreError {
  let at = 0;
  while (at < key.length && key.charCodeAt(at) >= 0x20 && key.charCodeAt(at) !== 0x7f) at++;
  const code = key.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0');
  // JSON escapes the C0 characters; DEL too, so that the message shows where it is.
  const shown = JSON.stringify(key.slice(0, 100)).replaceAll('\u007f', '\\u007f');
  return new SeenStoreError(
    'INVALID_URL',
    `URL ${shown} is not a usable URL: it holds control character U+${code} at character ${at + 1}`,
  );
}

/** INVALID_URL for a key with a lone surrogate. */
export function illFormedKey(key: string): SeenStoreError {
  return new SeenStoreError(
    'INVALID_URL',
    `URL ${JSON.stringify(key.slice(0, 100))} is not well-formed UTF-16 (a lone surrogate): it cannot be a key`,
  );
}
