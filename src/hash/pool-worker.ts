/**
 * A hashing thread of HashPool: hashes its share of a batch whose UTF-8 keys the main thread put
 * in shared memory, into a shared output buffer, and says so.
 */
import { parentPort } from 'node:worker_threads';
import { XxHash } from './xxhash.js';

export interface HashJob {
  readonly id: number;
  readonly bytes: SharedArrayBuffer;
  /** Key i spans [ranges[2i], ranges[2i + 1]) of `bytes`. */
  readonly ranges: SharedArrayBuffer;
  readonly count: number;
  readonly out: SharedArrayBuffer;
  readonly from: number;
  readonly to: number;
  readonly seeds: readonly bigint[];
}

const hash = await XxHash.load();
parentPort!.on('message', (job: HashJob) => {
  const stride = 2 * job.seeds.length;
  const out = new Uint32Array(job.out, job.from * stride * 4, (job.to - job.from) * stride);
  const keys = { bytes: new Uint8Array(job.bytes), ranges: new Uint32Array(job.ranges), count: job.count };
  hash.hashRanges(keys, job.from, job.to, job.seeds, out, stride, 0);
  parentPort!.postMessage(job.id);
});
parentPort!.postMessage('ready');
