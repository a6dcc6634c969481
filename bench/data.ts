import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageReposFile, usablePackageRepoUrls } from '../test/helpers/data.js';

/** bench/ in the source tree (this file runs from dist/bench/). */
export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench');
const SHARED = resolve(BENCH_DIR, '..', '..', 'shared', 'data');
const CACHE = join(BENCH_DIR, '.data');

export interface Dataset {
  readonly name: string;
  /** One URL per line, distinct. */
  readonly path: string;
  readonly urls: number;
  readonly source: string;
}

/** Every 10th URL is held out: never inserted, queried to measure false positives. */
export const HOLD_OUT_EVERY = 10;

export function splitUrls(urls: readonly string[]): { insert: string[]; query: string[] } {
  const insert: string[] = [];
  const query: string[] = [];
  urls.forEach((url, i) => (i % HOLD_OUT_EVERY === HOLD_OUT_EVERY - 1 ? query : insert).push(url));
  return { insert, query };
}

export function readUrls(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
}

function write(name: string, urls: readonly string[], source: string, file = `${name}.txt`): Dataset {
  mkdirSync(CACHE, { recursive: true });
  const path = join(CACHE, file);
  if (!existsSync(path)) writeFileSync(path, `${urls.join('\n')}\n`);
  return { name, path, urls: urls.length, source };
}

/** The shared real lists, deduplicated (~50k URLs). Fails loudly when ../shared/data is missing. */
export function sharedDataset(): Dataset {
  const files = ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'].map((file) => join(SHARED, file));
  for (const file of files)
    if (!existsSync(file)) throw new Error(`bench data missing: ${file} (../shared/data beside the project)`);
  const urls = [...new Set(files.flatMap(readUrls))];
  return write('shared-50k', urls, '../shared/data: crawl-sitelist-15k + crawl-benign-35k, deduplicated');
}

/**
 * ~1.7M real repository URLs from the npm package all-the-package-repos (bench/package.json,
 * pinned): its distinct http(s) values in file order, those without a host left out
 * (usablePackageRepoUrls).
 */
export function packageReposDataset(): Dataset {
  const require = createRequire(join(BENCH_DIR, 'package.json'));
  const packageJson = require.resolve('all-the-package-repos/package.json');
  const version = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  const name = `package-repos-${version}`;
  const file = packageReposFile(version);
  if (existsSync(join(CACHE, file))) {
    const path = join(CACHE, file);
    return { name, path, urls: readUrls(path).length, source: `all-the-package-repos@${version}` };
  }
  const values = Object.values(
    JSON.parse(readFileSync(join(dirname(packageJson), 'data', 'packages.json'), 'utf8')) as Record<string, unknown>,
  );
  return write(
    name,
    usablePackageRepoUrls(values),
    `all-the-package-repos@${version}, data/packages.json values, distinct http(s) URLs with a host`,
    file,
  );
}

/**
 * `node dist/bench/data.js [--quick]` prints the datasets as JSON, preparing them first if need be.
 * The harness runs it as a child so that it never holds the data itself: while the harness held
 * the 1.7M URLs (or the 1.4 GB package data), journal replay measured 0.78 s in two bench runs,
 * against 0.29-0.30 s with the harness small (a parent holding 1.4 GB slowed the first child open
 * after it to 0.71 s). Why a parent blocked in spawnSync slows its child was not pinned down.
 */
if (process.argv[1]?.endsWith('data.js')) {
  const quick = process.argv.includes('--quick');
  process.stdout.write(`${JSON.stringify(quick ? [sharedDataset()] : [sharedDataset(), packageReposDataset()])}\n`);
}

/**
 * The `seenstore` command of a built checkout: dist/src/cli/bin.cjs (the bundle through the code
 * cache), or, in a build older than it, dist/src/cli/main.js.
 */
export function cliOf(root: string): string {
  const bin = join(root, 'dist', 'src', 'cli', 'bin.cjs');
  return existsSync(bin) ? bin : join(root, 'dist', 'src', 'cli', 'main.js');
}

/**
 * The frontier benches' real URLs (frontier-size.ts, frontier-shape.ts): the ~1.7M repository
 * URLs of all-the-package-repos with the ~50k of ../shared/data spread among them (one in every
 * 34), distinct: 1.74M.
 */
export function frontierBenchUrls(): string[] {
  const packages = readUrls(packageReposDataset().path);
  const shared = ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'].flatMap((file) => readUrls(join(SHARED, file)));
  const every = Math.floor(packages.length / shared.length);
  const out: string[] = [];
  packages.forEach((url, i) => {
    out.push(url);
    if (i % every === 0 && i / every < shared.length) out.push(shared[i / every]!);
  });
  return [...new Set(out)];
}
