/**
 * A child process of the storage contract: opens the store at LOCATION, adds the URLs of FILE to
 * scope `s` in batches of 500 and prints each URL it was told is new.
 *
 *   node child.js LOCATION FILE OPTIONS_JSON
 */
import { readFileSync } from 'node:fs';
import { SeenStore } from '../../src/index.js';

const [location, file, options] = process.argv.slice(2);
const urls = readFileSync(file!, 'utf8')
  .split('\n')
  .filter((line) => line.length > 0);
const store = await SeenStore.open(location!, JSON.parse(options!));
const scope = store.scope('s', { capacityUrls: 200_000, fprTarget: 1e-9 });
const out: string[] = [];
for (let start = 0; start < urls.length; start += 500) {
  const batch = urls.slice(start, start + 500);
  const fresh = await scope.addIfAbsent(batch);
  batch.forEach((url, i) => {
    if (fresh[i]) out.push(url);
  });
}
await store.close();
process.stdout.write(out.length === 0 ? '' : `${out.join('\n')}\n`);
