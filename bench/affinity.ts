/**
 * Host affinity on a consistent-hash ring of crawler owners (issue 28, seed 004's parallel
 * crawlers), measured on the real hosts of ../shared/data: how evenly D owners share the queues
 * (and the URLs behind them), and what fraction of queues change owner when one owner joins or
 * leaves, against consistent hashing's 1/D. Markdown on stdout (docs/results.md, "Host affinity").
 *
 *   node dist/bench/affinity.js
 */
import { OwnerRing, RING_VIRTUAL_NODES } from '../src/epochs/owner-ring.js';
import { XxHash } from '../src/hash/xxhash.js';
import { queueKeyOf } from '../src/url/queue-key.js';
import { readUrls, sharedDataset } from './data.js';

const hash = await XxHash.load();
const dataset = sharedDataset();
const urlsPerHost = new Map<string, number>();
for (const url of readUrls(dataset.path)) {
  const key = queueKeyOf(url, 'host');
  if (key !== undefined) urlsPerHost.set(key, (urlsPerHost.get(key) ?? 0) + 1);
}
const hosts = [...urlsPerHost.keys()];
const totalUrls = [...urlsPerHost.values()].reduce((a, b) => a + b, 0);
const names = (count: number): string[] => Array.from({ length: count }, (_, i) => `crawler-${i}`);

function owners(ring: OwnerRing): Map<string, string> {
  return new Map(hosts.map((host) => [host, ring.ownerOf(host)]));
}

function maxOverMean(
  assigned: Map<string, string>,
  count: number,
  weight: (host: string) => number,
  total: number,
): number {
  const load = new Map<string, number>();
  for (const [host, owner] of assigned) load.set(owner, (load.get(owner) ?? 0) + weight(host));
  return Math.max(...load.values()) / (total / count);
}

function movedShare(a: Map<string, string>, b: Map<string, string>): number {
  let moved = 0;
  for (const host of hosts) if (a.get(host) !== b.get(host)) moved++;
  return moved / hosts.length;
}

process.stdout.write(
  `${dataset.source}: ${totalUrls.toLocaleString('en')} URLs, ${hosts.length.toLocaleString('en')} host queues; ${RING_VIRTUAL_NODES} virtual nodes per owner\n\n`,
);
process.stdout.write(
  '| D owners | max/mean queues | max/mean URLs | queues moved when one leaves (theory 1/D) | queues moved when one joins (theory 1/(D+1)) | ring build |\n|---:|---:|---:|---:|---:|---:|\n',
);
for (const count of [4, 16, 64]) {
  const started = performance.now();
  const ring = new OwnerRing(names(count), hash);
  const buildMs = performance.now() - started;
  const base = owners(ring);
  const queues = maxOverMean(base, count, () => 1, hosts.length);
  const urls = maxOverMean(base, count, (host) => urlsPerHost.get(host)!, totalUrls);
  const leave = movedShare(base, owners(new OwnerRing(names(count).slice(1), hash)));
  const join = movedShare(base, owners(new OwnerRing(names(count + 1), hash)));
  const pct = (x: number): string => `${(x * 100).toFixed(2)} %`;
  process.stdout.write(
    `| ${count} | ${queues.toFixed(3)} | ${urls.toFixed(3)} | ${pct(leave)} (${pct(1 / count)}) | ${pct(join)} (${pct(1 / (count + 1))}) | ${buildMs.toFixed(2)} ms |\n`,
  );
}
