/**
 * The other process of counting.test.ts's load race and journal.test.ts's query race. Usage:
 *   node checkpoint-child.js STORE SCOPE URLS_FILE DIR [MODE]
 * URLS_FILE holds four batches of equal size. The child adds the first and checkpoints, then
 * writes DIR/ready; once DIR/go exists it adds the second and third, checkpoints (folding them
 * into the chunks and compacting them out of the journal file), adds the fourth, and writes
 * DIR/done; it closes the store (which checkpoints again) once DIR/exit exists. The scope must
 * exist. With MODE `late-checkpoint` (journal.test.ts), the second and third are added before
 * DIR/ready, and only their checkpoint waits for DIR/go.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../../src/index.js';

const [dir, scopeName, file, signals, mode] = process.argv.slice(2);
const late = mode === 'late-checkpoint';
const urls = readFileSync(file!, 'utf8')
  .split('\n')
  .filter((line) => line.length > 0);
const size = urls.length / 4;
const batch = (n: number): string[] => urls.slice(n * size, (n + 1) * size);

const store = await SeenStore.open(dir!, { checkpointJournalBytes: 2 ** 40, checkpointIntervalMs: 2 ** 40 });
const scope = store.scope(scopeName!, { create: false });
await scope.add(batch(0));
await scope.checkpoint();
if (late) {
  await scope.add(batch(1));
  await scope.add(batch(2));
}
writeFileSync(join(signals!, 'ready'), '');
while (!existsSync(join(signals!, 'go'))) await sleep(5);
if (!late) {
  await scope.add(batch(1));
  await scope.add(batch(2));
}
await scope.checkpoint();
await scope.add(batch(3));
writeFileSync(join(signals!, 'done'), '');
while (!existsSync(join(signals!, 'exit'))) await sleep(5);
await store.close();
