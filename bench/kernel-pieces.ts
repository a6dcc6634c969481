/**
 * The kernel's pieces timed by CPU time on one build of seenstore (docs/benchmarks.md, issue 29):
 * batch hashing of the ~50k real URLs as UTF-8 keys under 1 and 3 seeds, and the add-if-absent
 * decision of the same URLs, 70 times over, into one classic and one blocked filter (m = 1.1 M
 * bits, k = 8). Prints ns per URL, the least of 3 runs. Run it alternately on two builds:
 *
 *   node dist/bench/kernel-pieces.js PATH/TO/dist
 *
 * A build without src/filters/kernel-bits.js decides with decideRange (the JavaScript path).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { allSharedUrls, utf8Lines } from '../test/helpers/data.js';

// Either build's modules, untyped: the two builds' types differ.
// biome-ignore lint/suspicious/noExplicitAny: untyped on purpose, the two builds' types differ.
type Module = Record<string, any>;

const dist = resolve(process.argv[2] ?? 'dist');
const load = async (path: string): Promise<Module> => (await import(pathToFileURL(join(dist, path)).href)) as Module;
const { XxHash } = await load('src/hash/xxhash.js');
const { BloomFilter } = await load('src/filters/bloom.js');
const { decideRange } = await load('src/filters/decide.js');
const KernelBits = existsSync(join(dist, 'src/filters/kernel-bits.js'))
  ? (await load('src/filters/kernel-bits.js')).KernelBits
  : undefined;

const urls = allSharedUrls();
const keys = utf8Lines(urls);
const hash = await XxHash.load();

/** Least CPU ns per URL of 3 runs of `passes` passes of `work`. */
function cpuNsPerUrl(passes: number, work: () => void): number {
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const start = process.cpuUsage();
    for (let p = 0; p < passes; p++) work();
    const used = process.cpuUsage(start);
    best = Math.min(best, ((used.user + used.system) * 1e3) / (passes * urls.length));
  }
  return best;
}

for (const seedCount of [1, 3]) {
  const seeds = Array.from({ length: seedCount }, (_, s) => BigInt(s + 5));
  const out = new Uint32Array(2 * seedCount * urls.length);
  hash.hashKeys(keys, seeds, out, 2 * seedCount, 0);
  process.stdout.write(
    `hash, ${seedCount} seed(s): ${cpuNsPerUrl(20, () => hash.hashKeys(keys, seeds, out, 2 * seedCount, 0)).toFixed(1)} ns/URL\n`,
  );
}
const words = new Uint32Array(2 * urls.length);
hash.hashKeys(keys, [77n], words, 2, 0);
const flags = new Uint8Array(urls.length);
for (const layout of ['classic', 'blocked']) {
  const geometry = { layout, mBits: 1_102_848, k: 8 };
  const kernel = KernelBits === undefined ? undefined : new KernelBits();
  const filter = new BloomFilter(geometry, { regionBytes: 65_472, memory: kernel?.place(geometry, 65_472) ?? false });
  const target = { older: [], newest: [filter], newestAt: 0, stride: 2 };
  const decide = (): void =>
    void (
      kernel?.decide(target, words, 0, urls.length, Infinity, flags) ??
      decideRange(target, words, 0, urls.length, Infinity, flags)
    );
  process.stdout.write(
    `decide, ${layout}: ${cpuNsPerUrl(70, decide).toFixed(1)} ns/URL (${kernel === undefined ? 'decideRange' : 'kernel'})\n`,
  );
}
