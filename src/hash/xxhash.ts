import xxhash from 'xxhash-wasm';
import type { XXHashAPI } from 'xxhash-wasm';

/**
 * xxHash through xxhash-wasm. URL hashes are xxh64(UTF-8 bytes of the key, seed), handed out as
 * two unsigned 32-bit halves so that callers never do BigInt arithmetic; record checksums are
 * xxh32 with seed 0.
 */
export class XxHash {
  readonly #api: XXHashAPI;
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
   * the little-endian u64 layout the journal stores.
   * The key must be well-formed UTF-16 (callers validate), so its UTF-8 encoding is exact.
   */
  hashInto(key: string, seed: bigint, out: Uint32Array, at: number): void {
    this.#scratch64[0] = this.#api.h64(key, seed);
    out[at] = this.#scratch32[0]!;
    out[at + 1] = this.#scratch32[1]!;
  }

  /** The 64-bit hash as 16 lower-case hex digits (for test vectors and docs). */
  hex(key: string, seed: bigint): string {
    return this.#api.h64ToString(key, seed);
  }

  /** xxh32 of `bytes` with seed 0: the checksum of stored chunks and journal records. */
  checksum(bytes: Uint8Array): number {
    return this.#api.h32Raw(bytes, 0);
  }
}
