/**
 * The bit thread of SeenStoreOptions.threads (see bit-thread.ts): waits for a batch, then decides
 * its URLs in order as the calling thread hashes them, setting bits in the filters' shared memory.
 * Blocks in Atomics.wait between batches and between chunks: it has no event loop work.
 */
import { receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { BloomFilter } from '../../filters/bloom.js';
import { decideRange, type DecideTarget, type PositionsAhead } from '../../filters/decide.js';
import { ABORTED, CTL, STATUS_FAILED, STATUS_OK, awaitChange, type BitThreadBinding } from './bit-thread-protocol.js';

const { ctl: ctlBuffer, port } = workerData as { ctl: SharedArrayBuffer; port: MessagePort };
const ctl = new Int32Array(ctlBuffer);

let target: DecideTarget | undefined;
let words: Uint32Array = new Uint32Array(0);
let flags: Uint8Array = new Uint8Array(0);
let ahead: PositionsAhead | undefined;

function bind(binding: BitThreadBinding): void {
  const views = binding.slices.map((slice) => ({
    at: slice.at,
    filters: slice.filters.map(
      (filter) =>
        new BloomFilter(filter.geometry, {
          regionBytes: filter.regionBytes,
          scheme: filter.scheme,
          memory: filter.memory,
        }),
    ),
  }));
  const newest = views.pop()!;
  target = { older: views, newest: newest.filters, newestAt: newest.at, stride: binding.stride };
  words = new Uint32Array(binding.words);
  flags = new Uint8Array(binding.flags);
  ahead = { positions: new Int32Array(binding.positions), perUrl: binding.perUrl, offsets: binding.offsets };
}

/** Decides the job's URLs as their hashes become ready, until the calling thread aborts it. */
function decideJob(job: DecideTarget, count: number, positions: PositionsAhead | undefined): void {
  for (const filter of job.newest) filter.warm(count * filter.geometry.k);
  const before = job.newest.map((filter) => filter.onesBits);
  let done = 0;
  let fresh = 0;
  while (done < count) {
    let ready = Atomics.load(ctl, CTL.progress);
    while (ready === done) ready = awaitChange(ctl, CTL.progress, ready);
    if (ready === ABORTED) return;
    fresh += decideRange(job, words, done, ready, Infinity, flags, positions).fresh;
    done = ready;
  }
  ctl[CTL.fresh] = fresh;
  job.newest.forEach((filter, f) => (ctl[CTL.setBits + f] = filter.onesBits - before[f]!));
}

let jobs = 0;
for (;;) {
  Atomics.wait(ctl, CTL.job, jobs);
  jobs = Atomics.load(ctl, CTL.job);
  if (jobs === ABORTED) break;
  for (let message = receiveMessageOnPort(port); message !== undefined; message = receiveMessageOnPort(port))
    bind(message.message as BitThreadBinding);
  let status = STATUS_OK;
  try {
    if (target === undefined) throw new Error('a batch came before the filters');
    decideJob(target, ctl[CTL.count]!, ctl[CTL.ahead] === 1 ? ahead : undefined);
  } catch (error) {
    status = STATUS_FAILED;
    // The calling thread reads it after the batch (it is blocked until then).
    port.postMessage(error instanceof Error ? error.message : String(error));
  }
  ctl[CTL.status] = status;
  Atomics.store(ctl, CTL.done, jobs);
  Atomics.notify(ctl, CTL.done);
}
