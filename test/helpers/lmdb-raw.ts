/**
 * A process that uses lmdb-js directly, without seenstore's open guard: what an older seenstore or
 * another LMDB tool does to a store. `opener DIR` opens the environment and closes it; `writer DIR`
 * keeps it open and, for each stdin line `put KEY`, commits KEY in its own transaction and prints
 * `ok KEY`; at the end of stdin it prints `keys` and every key it sees.
 */
import { createInterface } from 'node:readline';
import { open } from 'lmdb';

const [mode, dir] = process.argv.slice(2);
if (dir === undefined || (mode !== 'opener' && mode !== 'writer')) {
  process.stderr.write('usage: lmdb-raw opener|writer DIR\n');
  process.exit(2);
}
const root = open({ path: dir, noSubdir: false, maxDbs: 8 });
if (mode === 'writer') {
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const key = line.replace(/^put /, '');
    root.transactionSync(() => root.putSync(key, 'v'));
    await root.flushed;
    process.stdout.write(`ok ${key}\n`);
  }
  root.resetReadTxn();
  process.stdout.write(`keys ${[...root.getKeys()].join(',')}\n`);
}
await root.close();
