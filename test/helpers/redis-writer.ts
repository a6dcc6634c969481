/**
 * A writer process of the Redis backend's tests: adds the URLs of FILE to SCOPE in batches and,
 * once each batch is acknowledged, writes the URLs it was told are new to stdout with one
 * synchronous write per batch (so that a kill -9 never loses what was acknowledged and printed).
 * With PAUSE_MS > 0 it sleeps between batches.
 *
 *   node redis-writer.js LOCATION SCOPE FILE BATCH OPTIONS_JSON [PAUSE_MS]
 */
import { readFileSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../../src/index.js';

const [location, scopeName, file, batchText, options, pauseText] = process.argv.slice(2);
const urls = readFileSync(file!, 'utf8')
  .split('\n')
  .filter((line) => line.length > 0);
const batch = Number(batchText);
const pause = Number(pauseText ?? 0);
const store = await SeenStore.open(location!, { ...JSON.parse(options!), onWarning: () => {} });
const scope = store.scope(scopeName!, { capacityUrls: 200_000, fprTarget: 1e-9 });
for (let start = 0; start < urls.length; start += batch) {
  const part = urls.slice(start, start + batch);
  const fresh = await scope.addIfAbsent(part);
  const out = part.filter((_, i) => fresh[i]);
  if (out.length > 0) writeSync(1, `${out.join('\n')}\n`);
  if (pause > 0) await sleep(pause);
}
await store.close();
