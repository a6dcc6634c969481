/**
 * A child process for fault-injection tests. Usage:
 *   node crash-child.js STORE SCOPE FILE BATCH_SIZE FAULT_POINT|none [checkpoint-each|rotate|prune]
 * Adds FILE's URLs in batches, printing "ack N" after batch N is acknowledged. The process kills
 * itself with SIGKILL when FAULT_POINT is reached (the first time, or the CHILD_KILL_AT-th), so the parent can check what survived.
 * Env: CHILD_CAPACITY (default 100,000) and CHILD_STRATEGY (default classic) shape the scope;
 * CHILD_THREADS (default 1) is SeenStoreOptions.threads. CHILD_KILL_AT (default 1): the time FAULT_POINT
 * is reached that kills.
 * Modes: `checkpoint-each` checkpoints after every batch (else once at the end); `rotate` rotates
 * the scope after the adds; `prune` rotates twice, then prunes all but the open epoch; `paced`
 * waits for a line on stdin before each batch after the first (runPacedChild in cli.ts), so that
 * the parent acts between batches, or while one runs, at points it chooses.
 */
import { readFileSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { SeenStore } from '../../src/index.js';
import { setFaultHook, type FaultPoint } from '../../src/store/faults.js';

const [dir, scopeName, file, batchText, point, mode] = process.argv.slice(2);
const urls = readFileSync(file!, 'utf8')
  .split('\n')
  .filter((line) => line.length > 0);
const batchSize = Number(batchText);

if (point !== 'none') {
  let reachedTimes = 0;
  const killAt = Number(process.env.CHILD_KILL_AT ?? 1);
  setFaultHook((reached: FaultPoint) => {
    if (reached === point && ++reachedTimes >= killAt) process.kill(process.pid, 'SIGKILL');
  });
}

const store = await SeenStore.open(dir!, {
  checkpointJournalBytes: 2 ** 40,
  checkpointIntervalMs: 2 ** 40,
  threads: Number(process.env.CHILD_THREADS ?? 1),
});
const scope = store.scope(scopeName, {
  capacityUrls: Number(process.env.CHILD_CAPACITY ?? 100_000),
  fprTarget: 1e-7,
  ...(process.env.CHILD_STRATEGY === undefined ? {} : { strategy: process.env.CHILD_STRATEGY }),
});
const input = mode === 'paced' ? createInterface({ input: process.stdin }) : undefined;
const goes = input?.[Symbol.asyncIterator]();
for (let start = 0, n = 0; start < urls.length; start += batchSize, n++) {
  if (goes !== undefined && n > 0 && (await goes.next()).done === true)
    throw new Error('stdin ended before the last batch');
  await scope.add(urls.slice(start, start + batchSize));
  writeSync(1, `ack ${n}\n`);
  if (mode === 'checkpoint-each') await scope.checkpoint();
}
await scope.checkpoint();
if (mode === 'rotate' || mode === 'prune') {
  await scope.rotate();
  writeSync(1, 'rotated\n');
}
if (mode === 'prune') {
  await scope.rotate();
  await scope.prune({ keepLast: 1 });
}
writeSync(1, 'done\n');
if (input !== undefined) {
  input.close();
  process.stdin.destroy();
}
await store.close();
