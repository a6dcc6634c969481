/**
 * A hashing thread of HashPool: hashes a range of a batch that the main thread UTF-8-encoded into
 * shared memory, into a shared output buffer, and says so.
 */
import { parentPort } from 'node:worker_threads';
import { XxHash } from './xxhash.js';

export interface HashJob {
  readonly id: number;
  readonly bytes: SharedArrayBuffer;
  readonly offsets: SharedArrayBuffer;
  readonly out: SharedArrayBuffer;
  readonly from: number;
  readonly to: number;
  readonly seeds: readonly bigint[];
}

const hash = await XxHash.load();
parentPort!.on('message', (job: HashJob) => {
  const stride = 2 * job.seeds.length;
  const out = new Uint32Array(job.out, job.from * stride * 4, (job.to - job.from) * stride);
  hash.hashEncodedRange(new Uint8Array(job.bytes), new Uint32Array(job.offsets), job.from, job.to, job.seeds, out, stride, 0);
  parentPort!.postMessage(job.id);
});
parentPort!.postMessage('ready');
