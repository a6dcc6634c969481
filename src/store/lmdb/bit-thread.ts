import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { SeenStoreError } from '../../errors.js';
import type { BloomFilter } from '../../filters/bloom.js';
import type { DecideTarget } from '../../filters/decide.js';
import {
  ABORTED,
  CTL,
  CTL_SLOTS,
  MAX_BIT_THREAD_FILTERS,
  STATUS_OK,
  awaitChange,
  type BitThreadBinding,
} from './bit-thread-protocol.js';

/** URLs hashed per hand-over: the bit thread starts on a batch after the first of these. */
export const BIT_THREAD_CHUNK = 1024;

/** A batch the bit thread has not finished after this long is abandoned (the thread is taken for dead). */
const BATCH_TIMEOUT_MS = 60_000;

export interface ThreadDecided {
  readonly fresh: number;
  /** Bits set per filter of the newest slice (to count into the calling thread's filters). */
  readonly setBits: readonly number[];
}

/**
 * A second thread that sets the bits of adds (SeenStoreOptions.threads = 2), over filters in
 * shared memory. Per batch, inside the write transaction: the calling thread hashes the URLs
 * chunk by chunk (strings live on it), computes the newest slice's positions where its filters
 * can, and hands each chunk over; the bit thread tests and sets the bits of the URLs in order as
 * they come, so the two threads overlap. One thread sets the bits, in input order: the answers
 * and the bits are exactly those of one thread. Hand-overs poll briefly before blocking (see
 * SPIN_LOADS). The calling thread waits for the batch (it is inside a synchronous LMDB
 * transaction anyway), then builds the journal record from the bit thread's flags.
 */
export class BitThread {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #ctl: Int32Array;
  #jobs = 0;
  #bound: DecideTarget | undefined;
  #words = new SharedArrayBuffer(0);
  #flags = new SharedArrayBuffer(0);
  #positions = new SharedArrayBuffer(0);
  #dead: string | undefined;

  private constructor(worker: Worker, port: MessagePort, ctl: Int32Array) {
    this.#worker = worker;
    this.#port = port;
    this.#ctl = ctl;
    // A thread that died takes no more batches (a batch it was on times out in #await).
    worker.on('error', (error: Error) => (this.#dead = `the bit thread failed: ${error.message}`));
    worker.on('exit', () => (this.#dead ??= 'the bit thread exited'));
  }

  static async start(): Promise<BitThread> {
    const ctl = new Int32Array(new SharedArrayBuffer(4 * CTL_SLOTS));
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(new URL('./bit-thread-worker.js', import.meta.url), {
      workerData: { ctl: ctl.buffer, port: port2 },
      transferList: [port2],
    });
    await new Promise<void>((resolve, reject) => {
      worker.once('online', resolve);
      worker.once('error', reject);
    });
    // Between batches the thread blocks in Atomics.wait: it must not keep the process alive.
    worker.unref();
    port1.unref();
    return new BitThread(worker, port1, ctl);
  }

  /** True when the bit thread can take batches of `target` (filters in shared memory, not too many). */
  accepts(target: DecideTarget): boolean {
    if (this.#dead !== undefined || target.newest.length > MAX_BIT_THREAD_FILTERS) return false;
    const shared = (filters: readonly BloomFilter[]): boolean =>
      filters.every((filter) => filter.sharedMemory !== undefined);
    return shared(target.newest) && target.older.every((slice) => shared(slice.filters));
  }

  /** Shared buffers for a batch: `words` hash words, a flag per URL (grown as needed). */
  buffers(words: number, urls: number): { words: Uint32Array; flags: Uint8Array } {
    if (this.#words.byteLength < 4 * words) {
      this.#words = new SharedArrayBuffer(4 * Math.max(words, (2 * this.#words.byteLength) / 4));
      this.#bound = undefined;
    }
    if (this.#flags.byteLength < urls) {
      this.#flags = new SharedArrayBuffer(Math.max(urls, 2 * this.#flags.byteLength));
      this.#bound = undefined;
    }
    return { words: new Uint32Array(this.#words), flags: new Uint8Array(this.#flags) };
  }

  /**
   * Decides `count` URLs on the bit thread while `hash(from, to)` fills in the hash words of URLs
   * from..to - 1 (in the buffer buffers() gave) on this thread, a chunk at a time. Where the newest
   * slice's filters can, this thread also computes their positions (BloomFilter.positionsInto),
   * so that the bit thread only tests and sets bits: the two then take about as long. If `hash`
   * throws, the bit thread stops at the chunks it has and the error is rethrown (the caller must
   * then reload its filters: some bits of the batch are set).
   */
  decide(target: DecideTarget, count: number, hash: (from: number, to: number) => void): ThreadDecided {
    const { newest, newestAt, stride } = target;
    const offsets: number[] = [];
    let perUrl = 0;
    for (const filter of newest) {
      offsets.push(perUrl);
      perUrl += filter.geometry.k;
    }
    const ahead = newest.every((filter) => filter.positionsAhead);
    if (ahead && this.#positions.byteLength < 4 * count * perUrl) {
      this.#positions = new SharedArrayBuffer(4 * Math.max(count * perUrl, (2 * this.#positions.byteLength) / 4));
      this.#bound = undefined;
    }
    if (this.#bound !== target) this.#bind(target, perUrl, offsets);
    const words = new Uint32Array(this.#words);
    const positions = new Int32Array(this.#positions);
    const ctl = this.#ctl;
    ctl[CTL.count] = count;
    ctl[CTL.ahead] = ahead ? 1 : 0;
    Atomics.store(ctl, CTL.progress, 0);
    const job = ++this.#jobs;
    Atomics.store(ctl, CTL.job, job);
    Atomics.notify(ctl, CTL.job);
    try {
      for (let from = 0; from < count; from += BIT_THREAD_CHUNK) {
        const to = Math.min(count, from + BIT_THREAD_CHUNK);
        hash(from, to);
        if (ahead)
          for (let f = 0; f < newest.length; f++)
            newest[f]!.positionsInto(
              words,
              newestAt + 2 * f,
              stride,
              from,
              to,
              positions,
              from * perUrl + offsets[f]!,
              perUrl,
            );
        Atomics.store(ctl, CTL.progress, to);
        Atomics.notify(ctl, CTL.progress);
      }
    } catch (error) {
      Atomics.store(ctl, CTL.progress, ABORTED);
      Atomics.notify(ctl, CTL.progress);
      this.#await(job);
      throw error;
    }
    this.#await(job);
    if (ctl[CTL.status] !== STATUS_OK) {
      const message = receiveMessageOnPort(this.#port)?.message as string | undefined;
      throw new SeenStoreError('INTERNAL', `the bit thread failed on a batch: ${message ?? 'no reason given'}`);
    }
    return { fresh: ctl[CTL.fresh]!, setBits: target.newest.map((_, f) => ctl[CTL.setBits + f]!) };
  }

  /** Waits for the bit thread to finish batch `job`; a thread that never does is taken for dead. */
  #await(job: number): void {
    const ctl = this.#ctl;
    const deadline = Date.now() + BATCH_TIMEOUT_MS;
    for (let done = Atomics.load(ctl, CTL.done); done !== job; done = awaitChange(ctl, CTL.done, done, 1000)) {
      if (Date.now() > deadline) {
        this.#dead = `the bit thread did not finish a batch in ${BATCH_TIMEOUT_MS / 1000} s`;
        throw new SeenStoreError('INTERNAL', this.#dead);
      }
    }
  }

  #bind(target: DecideTarget, perUrl: number, offsets: readonly number[]): void {
    const describe = (filters: readonly BloomFilter[], at: number): BitThreadBinding['slices'][number] => ({
      at,
      filters: filters.map((filter) => ({
        geometry: filter.geometry,
        regionBytes: filter.regionBytes,
        scheme: filter.scheme,
        memory: filter.sharedMemory!,
      })),
    });
    const binding: BitThreadBinding = {
      slices: [
        ...target.older.map((slice) => describe(slice.filters, slice.at)),
        describe(target.newest, target.newestAt),
      ],
      stride: target.stride,
      words: this.#words,
      flags: this.#flags,
      positions: this.#positions,
      perUrl,
      offsets,
    };
    this.#port.postMessage(binding);
    this.#bound = target;
  }

  async close(): Promise<void> {
    Atomics.store(this.#ctl, CTL.job, ABORTED);
    Atomics.notify(this.#ctl, CTL.job);
    this.#port.close();
    await this.#worker.terminate();
  }
}
