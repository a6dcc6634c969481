/**
 * A child process for the frontier's fault-injection tests. Usage:
 *   node frontier-child.js STORE FILE BATCH FAULT_POINT|none enqueue|take|done|schedule|polite LEASE_MS [SKIP] [DELAY_MS]
 * `enqueue`: enqueues FILE's URLs to scope `f` in batches, printing "ack N" after batch N.
 * `take`: takes BATCH URLs at a time (lease LEASE_MS) until none is left, printing "took ID" for
 * each once the take resolved. `done`: takes BATCH URLs, then finishes them ("done N" after).
 * `schedule`: schedules FILE's URLs an hour ahead in batches, printing "scheduled N" after batch N.
 * `polite`: a crawler under politeness (delay DELAY_MS, one URL per queue per take): takes, then
 * finishes what it took, printing "took ID" and "done ID" per URL once each call resolved, and
 * sleeps until the next queue is ready, until the frontier is empty.
 * The process kills itself with SIGKILL when FAULT_POINT is reached the (SKIP + 1)th time.
 */
import { readFileSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../../src/index.js';
import { setFaultHook, type FaultPoint } from '../../src/store/faults.js';

const [dir, file, batchText, point, mode, leaseText, skipText, delayText] = process.argv.slice(2);
const batch = Number(batchText);
const leaseMs = Number(leaseText ?? 60_000);
let skip = Number(skipText ?? 0);
if (point !== 'none') {
  setFaultHook((reached: FaultPoint) => {
    if (reached === point && skip-- === 0) process.kill(process.pid, 'SIGKILL');
  });
}
const store = await SeenStore.open(dir!, { checkpointJournalBytes: 2 ** 40, checkpointIntervalMs: 2 ** 40 });
const scope = store.scope('f', { capacityUrls: 100_000, fprTarget: 1e-9 });
const frontier = scope.frontier();
if (mode === 'enqueue') {
  // No politeness here: these tests are of atomicity; politeness under kill -9 has its own test.
  await frontier.configure({ delayMs: Number(delayText ?? 0) });
  const urls = readFileSync(file!, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  for (let start = 0, n = 0; start < urls.length; start += batch, n++) {
    await scope.enqueue(urls.slice(start, start + batch));
    writeSync(1, `ack ${n}\n`);
  }
} else if (mode === 'schedule') {
  const urls = readFileSync(file!, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  for (let start = 0, n = 0; start < urls.length; start += batch, n++) {
    await frontier.schedule(urls.slice(start, start + batch), Date.now() + 3_600_000);
    writeSync(1, `scheduled ${n}\n`);
  }
} else if (mode === 'polite') {
  for (;;) {
    // Sleep until the first queue is ready, so that every take hands something out (and the
    // fault point's count is of takes that did).
    const readyAtMs = Math.min(...(await frontier.listQueues()).map((queue) => queue.readyAtMs ?? Infinity));
    if (readyAtMs === Infinity) break;
    // A timer may fire a millisecond before Date.now() reaches its time; a take then would hand
    // out nothing and still pass the fault point (a kill with no lease held). So sleep on until
    // the store's clock (Date.now()) says the queue is ready.
    while (Date.now() < readyAtMs) await sleep(readyAtMs - Date.now());
    const taken = await frontier.take(batch, { leaseMs });
    if (taken.length === 0) throw new Error(`a take at ${Date.now()} of a queue ready at ${readyAtMs} was empty`);
    writeSync(1, taken.map((entry) => `took ${entry.id}\n`).join(''));
    await frontier.done(taken.map((entry) => entry.id));
    writeSync(1, taken.map((entry) => `done ${entry.id}\n`).join(''));
  }
} else {
  for (;;) {
    const taken = await frontier.take(batch, { leaseMs, perQueue: batch });
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
