/**
 * A checkpointer that loses its lock, for the soak's stale-lock part. Usage:
 *   node lock-child.js STORE SCOPE FILE LOCK_STALE_MS stall|kill
 * Adds FILE's URLs in batches of 1,000 ("ack N" after each), then checkpoints. After the
 * checkpoint's first chunk transaction it prints "holding" and either SIGKILLs itself (`kill`: a
 * dead holder leaves its lock behind) or SIGSTOPs itself (`stall`: a live holder that stops
 * refreshing its lock, as in a long GC pause or a suspended VM). Once continued it prints
 * "resumed", then "wrote" after every further chunk transaction it commits — a fenced writer must
 * commit none — and finally "checkpoint ok" or "checkpoint-error CODE".
 */
import { readFileSync, writeSync } from 'node:fs';
import { SeenStore } from '../src/index.js';
import { setFaultHook } from '../src/store/faults.js';

const [dir, scopeName, file, staleText, mode] = process.argv.slice(2);
const urls = readFileSync(file!, 'utf8')
  .split('\n')
  .filter((line) => line.length > 0);

const store = await SeenStore.open(dir!, {
  checkpointJournalBytes: 2 ** 40,
  checkpointIntervalMs: 2 ** 40,
  lockStaleMs: Number(staleText),
});
const scope = store.scope(scopeName!, { capacityUrls: 5_000_000, fprTarget: 1e-7 });
for (let start = 0, n = 0; start < urls.length; start += 1000, n++) {
  await scope.add(urls.slice(start, start + 1000));
  writeSync(1, `ack ${n}\n`);
}

let paused = false;
setFaultHook((point) => {
  if (point !== 'checkpoint:after-chunk-txn') return;
  if (paused) {
    writeSync(1, 'wrote\n');
    return;
  }
  paused = true;
  writeSync(1, 'holding\n');
  process.kill(process.pid, mode === 'kill' ? 'SIGKILL' : 'SIGSTOP');
  writeSync(1, 'resumed\n');
});
try {
  await scope.checkpoint();
  writeSync(1, 'checkpoint ok\n');
} catch (error) {
  writeSync(1, `checkpoint-error ${(error as { code?: string }).code ?? 'none'}\n`);
}
setFaultHook(undefined);
// The lost checkpoint leaves this process's chunks dirty; close checkpoints again under a fresh
// lock (legitimately: a new token), which the parent allows.
await store.close().catch(() => undefined);
