/**
 * A child process for the Redis frontier tests. Usage:
 *   node redis-frontier-child.js LOCATION enqueue FILE BATCH
 *   node redis-frontier-child.js LOCATION take BATCH LEASE_MS [FAULT_POINT|none] [PER_QUEUE] [SCOPE]
 *   node redis-frontier-child.js LOCATION drain SCOPE FAULT_POINT
 *   node redis-frontier-child.js LOCATION migrate FAULT_POINT [NTH]
 * `enqueue`: enqueues FILE's URLs to scope `f` in batches, printing "ack N" after batch N.
 * `take`: takes BATCH URLs at a time (at most PER_QUEUE of a queue, default all) until none is
 * left, printing "took ID<TAB>URL" for each once the take resolved. With FAULT_POINT, the process
 * kills itself with SIGKILL when it is first reached. `drain`: reads the stats of SCOPE's frontier
 * (which moves its inboxes into its queues) with FAULT_POINT set. `migrate`: SeenStore.migrate,
killed when FAULT_POINT is reached the NTH time (default 1). Env CHILD_BARRIER=DIR:N (take): a
 * start barrier, so that takers started one after another race: each, once its store is open,
 * leaves a file in DIR and takes only when N files are there.
 */
import { readFileSync, readdirSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../../src/index.js';
import { setFaultHook, type FaultPoint } from '../../src/store/faults.js';

const [location, mode, ...rest] = process.argv.slice(2);
const store = await SeenStore.open(location!, { onWarning: () => {} });
const scopeName = mode === 'drain' ? rest[0]! : mode === 'take' ? (rest[4] ?? 'f') : 'f';
const scope = store.scope(scopeName, { capacityUrls: 100_000, fprTarget: 1e-9 });
const killAt = (point: string | undefined, nth = 1): void => {
  if (point === undefined || point === 'none') return;
  let times = 0;
  setFaultHook((reached: FaultPoint) => {
    if (reached === point && ++times >= nth) process.kill(process.pid, 'SIGKILL');
  });
};
if (mode === 'migrate') {
  killAt(rest[0], Number(rest[1] ?? 1));
  await SeenStore.migrate(location!);
} else if (mode === 'drain') {
  killAt(rest[1]);
  await scope.frontier().stats();
} else if (mode === 'enqueue') {
  const urls = readFileSync(rest[0]!, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  const batch = Number(rest[1]);
  for (let start = 0, n = 0; start < urls.length; start += batch, n++) {
    await scope.enqueue(urls.slice(start, start + batch));
    writeSync(1, `ack ${n}\n`);
  }
} else {
  const [batch, leaseMs, point, perQueue] = [Number(rest[0]), Number(rest[1]), rest[2], Number(rest[3] ?? 65_536)];
  killAt(point);
  const frontier = scope.frontier();
  // A start barrier for takers that must race: the first take waits until every taker is ready.
  const barrier = process.env.CHILD_BARRIER;
  if (barrier !== undefined) {
    const [dir, count] = [
      barrier.slice(0, barrier.lastIndexOf(':')),
      Number(barrier.slice(barrier.lastIndexOf(':') + 1)),
    ];
    writeFileSync(join(dir, String(process.pid)), '');
    // Bounded: a taker that died before the barrier must not hold the others forever.
    const deadline = Date.now() + 60_000;
    while (readdirSync(dir).length < count && Date.now() < deadline) await sleep(2);
  }
  for (;;) {
    const taken = await frontier.take(batch, { leaseMs, perQueue });
    if (taken.length === 0) break;
    writeSync(1, taken.map((entry) => `took ${entry.id}\t${entry.url}\n`).join(''));
  }
}
writeSync(1, 'finished\n');
await store.close();
