/**
 * A child process for the frontier's fault-injection tests. Usage:
 *   node frontier-child.js STORE FILE BATCH FAULT_POINT|none enqueue|take|done LEASE_MS
 * `enqueue`: enqueues FILE's URLs to scope `f` in batches, printing "ack N" after batch N.
 * `take`: takes BATCH URLs at a time (lease LEASE_MS) until none is left, printing "took ID" for
 * each once the take resolved. `done`: takes BATCH URLs, then finishes them ("done N" after).
 * The process kills itself with SIGKILL the first time FAULT_POINT is reached.
 */
import { readFileSync, writeSync } from 'node:fs';
import { SeenStore } from '../../src/index.js';
import { setFaultHook, type FaultPoint } from '../../src/store/faults.js';

const [dir, file, batchText, point, mode, leaseText] = process.argv.slice(2);
const batch = Number(batchText);
const leaseMs = Number(leaseText ?? 60_000);
if (point !== 'none') {
  setFaultHook((reached: FaultPoint) => {
    if (reached === point) process.kill(process.pid, 'SIGKILL');
  });
}
const store = await SeenStore.open(dir!, { checkpointJournalBytes: 2 ** 40, checkpointIntervalMs: 2 ** 40 });
const scope = store.scope('f', { capacityUrls: 100_000, fprTarget: 1e-9 });
if (mode === 'enqueue') {
  const urls = readFileSync(file!, 'utf8').split('\n').filter((line) => line.length > 0);
  for (let start = 0, n = 0; start < urls.length; start += batch, n++) {
    await scope.enqueue(urls.slice(start, start + batch));
    writeSync(1, `ack ${n}\n`);
  }
} else {
  const frontier = scope.frontier();
  for (;;) {
    const taken = await frontier.take(batch, { leaseMs });
    if (taken.length === 0) break;
    writeSync(1, taken.map((entry) => `took ${entry.id}\n`).join(''));
    if (mode === 'done') {
      await frontier.done(taken.map((entry) => entry.id));
      writeSync(1, `done ${taken.length}\n`);
    }
  }
}
writeSync(1, 'finished\n');
await store.close();
