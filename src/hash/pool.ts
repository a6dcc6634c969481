import { Worker } from 'node:worker_threads';
import { encodeKeys, isUtf8Keys, keyCount, type Keys, type Utf8Keys, type XxHash } from './xxhash.js';
import type { HashJob } from './pool-worker.js';

/** Below this many keys a batch is hashed on the calling thread: a hand-off costs ~0.1 ms. */
export const MIN_PARALLEL_KEYS = 4096;

/**
 * Hashing on several threads (SeenStoreOptions.hashThreads): the calling thread UTF-8-encodes the
 * batch once into shared memory (or copies keys that are UTF-8 already), each of `threads - 1` workers hashes its share while the calling
 * thread hashes its own, and the hashes land in shared memory, from which they are copied in the
 * caller's layout. Hashing is the part of an add or query that parallelises; deciding and setting
 * bits stays on the calling thread, where the filters are.
 */
export class HashPool {
  readonly threads: number;
  readonly #local: XxHash;
  readonly #workers: Worker[];
  readonly #pending = new Map<number, () => void>();
  #nextId = 0;
  #queue: Promise<unknown> = Promise.resolve();
  #bytes = new SharedArrayBuffer(1 << 20);
  #ranges = new SharedArrayBuffer(8 * 8192);
  #offsets = new Uint32Array(8192);
  #out = new SharedArrayBuffer(8 * 8192);

  private constructor(local: XxHash, workers: Worker[]) {
    this.#local = local;
    this.#workers = workers;
    this.threads = workers.length + 1;
    for (const worker of workers) {
      worker.on('message', (id: number) => {
        const done = this.#pending.get(id);
        this.#pending.delete(id);
        done?.();
      });
    }
  }

  /** Starts `threads - 1` hashing workers (each loads its own xxhash-wasm instance). */
  static async start(local: XxHash, threads: number): Promise<HashPool> {
    const url = new URL('./pool-worker.js', import.meta.url);
    const workers = await Promise.all(
      Array.from({ length: Math.max(0, threads - 1) }, () =>
        new Promise<Worker>((resolve, reject) => {
          const worker = new Worker(url);
          worker.once('message', () => {
            // Idle workers do not keep the process alive; a job in flight does (see hashKeys).
            worker.unref();
            resolve(worker);
          });
          worker.once('error', reject);
        }),
      ),
    );
    return new HashPool(local, workers);
  }

  /**
   * As XxHash.hashKeys, on every thread of the pool for batches large enough to be worth it. Calls
   * run one at a time (they share the pool's buffers); small batches are hashed at once.
   */
  hashKeys(keys: Keys, seeds: readonly bigint[], out: Uint32Array, stride: number, at: number): Promise<void> {
    if (this.#workers.length === 0 || keyCount(keys) < MIN_PARALLEL_KEYS) {
      this.#local.hashKeys(keys, seeds, out, stride, at);
      return Promise.resolve();
    }
    const run = this.#queue.then(() => this.#hashShared(keys, seeds, out, stride, at));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #hashShared(keys: Keys, seeds: readonly bigint[], out: Uint32Array, stride: number, at: number): Promise<void> {
    const shared = isUtf8Keys(keys) ? this.#copy(keys) : this.#encode(keys);
    const count = shared.count;
    const wordsPerKey = 2 * seeds.length;
    if (this.#out.byteLength < 4 * wordsPerKey * count) this.#out = new SharedArrayBuffer(4 * wordsPerKey * count * 2);
    const hashes = new Uint32Array(this.#out);
    // Equal shares; the calling thread takes the first.
    const share = Math.ceil(count / this.threads);
    const jobs = this.#workers.map((worker, w) => {
      const from = Math.min(count, (w + 1) * share);
      const to = Math.min(count, from + share);
      if (from >= to) return Promise.resolve();
      const id = this.#nextId++;
      const job: HashJob = { id, bytes: this.#bytes, ranges: this.#ranges, count, out: this.#out, from, to, seeds };
      return new Promise<void>((resolve) => {
        this.#pending.set(id, () => {
          worker.unref();
          resolve();
        });
        worker.ref();
        worker.postMessage(job);
      });
    });
    this.#local.hashRanges(shared, 0, Math.min(count, share), seeds, hashes, wordsPerKey, 0);
    await Promise.all(jobs);
    for (let i = 0; i < count; i++) {
      for (let w = 0; w < wordsPerKey; w++) out[i * stride + at + w] = hashes[i * wordsPerKey + w]!;
    }
  }

  /** UTF-8-encodes the batch into the shared buffer: one native write, boundaries as XxHash finds them. */
  #encode(keys: readonly string[]): Utf8Keys {
    let units = 0;
    for (const key of keys) units += key.length;
    const { bytes, ranges } = this.#reserve(3 * units, keys.length);
    if (this.#offsets.length < keys.length + 1) this.#offsets = new Uint32Array(2 * (keys.length + 1));
    const offsets = this.#offsets;
    encodeKeys(keys, 0, keys.length, Buffer.from(this.#bytes), offsets);
    for (let i = 0; i < keys.length; i++) {
      ranges[2 * i] = offsets[i]!;
      ranges[2 * i + 1] = offsets[i + 1]!;
    }
    return { bytes, ranges, count: keys.length };
  }

  /** Copies UTF-8 keys into the shared buffers, their ranges made relative to the first key. */
  #copy(keys: Utf8Keys): Utf8Keys {
    const base = keys.ranges[0]!;
    const span = keys.ranges[2 * keys.count - 1]! - base;
    const { bytes, ranges } = this.#reserve(span, keys.count);
    bytes.set(keys.bytes.subarray(base, base + span));
    for (let i = 0; i < 2 * keys.count; i++) ranges[i] = keys.ranges[i]! - base;
    return { bytes, ranges, count: keys.count };
  }

  #reserve(byteCount: number, keyCount: number): { bytes: Uint8Array; ranges: Uint32Array } {
    if (this.#bytes.byteLength < byteCount) this.#bytes = new SharedArrayBuffer(byteCount * 2);
    if (this.#ranges.byteLength < 8 * keyCount) this.#ranges = new SharedArrayBuffer(8 * keyCount * 2);
    return { bytes: new Uint8Array(this.#bytes), ranges: new Uint32Array(this.#ranges) };
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}
