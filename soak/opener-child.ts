/**
 * An opener for the soak's opener-race part: opens the store at STORE through the library, reads
 * its stats and closes it, again and again until DURATION_MS have passed, then prints how many
 * times. Usage: node opener-child.js STORE DURATION_MS. Each open is an LMDB environment open, as
 * in a `seenstore stats` process, without a node start-up between them.
 */
import { writeSync } from 'node:fs';
import { SeenStore, SeenStoreError } from '../src/index.js';

const [dir, durationText] = process.argv.slice(2);
const until = Date.now() + Number(durationText);
let opens = 0;
try {
  while (Date.now() < until) {
    const store = await SeenStore.open(dir!, { create: false });
    await store.stats();
    await store.close();
    opens++;
  }
  writeSync(1, `opens ${opens}\n`);
} catch (error) {
  // As the CLI would: one line with the code, and its exit code.
  const typed = error instanceof SeenStoreError ? error : undefined;
  writeSync(1, `opens ${opens}\n`);
  writeSync(2, `seenstore: error ${typed?.code ?? 'untyped'}: ${(error as Error).message}\n`);
  process.exitCode = typed?.exitCode ?? 1;
}
