import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toKey } from '../../src/url/normalize.js';
import { generatedUrls } from './generated-urls.js';

/** The project root (tests run from dist/test/...). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** ../shared/data beside the project: real URL lists, never copied into the repository. */
export const SHARED_DATA = resolve(ROOT, '..', 'shared', 'data');

export const DATA_FILES = ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'] as const;
type DataFile = (typeof DATA_FILES)[number];

/** Whether ../shared/data holds the real URL lists (CI does; a bare clone does not). */
export const HAVE_SHARED_DATA = DATA_FILES.every((file) => existsSync(join(SHARED_DATA, file)));

/**
 * The `skip` of a test that needs the real lists themselves (a figure measured on them); every
 * other test runs on generated crawl-like URLs when they are absent.
 */
export const NEEDS_SHARED_DATA: string | false = HAVE_SHARED_DATA
  ? false
  : `needs the real URL lists in ${SHARED_DATA} (absent in a bare clone)`;

/** Each list's size and a seed for its generated stand-in (disjoint from the other's). */
const STAND_INS: Record<DataFile, { readonly urls: number; readonly seed: number }> = {
  'crawl-sitelist-15k.txt': { urls: 15_181, seed: 1 },
  'crawl-benign-35k.txt': { urls: 35_378, seed: 2 },
};

let announced = false;
const cache = new Map<DataFile, string[]>();

/**
 * A shared URL list, or, in a bare clone, a generated crawl-like list of the same size (said once
 * per process on stderr, so a run on stand-ins is never mistaken for a run on the real data).
 */
export function sharedUrls(file: DataFile): string[] {
  const cached = cache.get(file);
  if (cached !== undefined) return cached;
  let urls: string[];
  if (HAVE_SHARED_DATA) {
    const path = join(SHARED_DATA, file);
    urls = readFileSync(path, 'utf8')
      .split('\n')
      .filter((line) => line.length > 0);
    if (urls.length < 10_000) throw new Error(`test data ${path} has only ${urls.length} lines`);
  } else {
    if (!announced)
      process.stderr.write(
        `# ${SHARED_DATA} not found: tests use generated crawl-like URLs in place of the real lists\n`,
      );
    announced = true;
    urls = generatedUrls(STAND_INS[file].urls, STAND_INS[file].seed);
  }
  cache.set(file, urls);
  return urls;
}

/** The path of a shared URL list, or of its generated stand-in (written once per process). */
export function sharedPath(file: DataFile): string {
  if (HAVE_SHARED_DATA) return join(SHARED_DATA, file);
  const path = join(tmpdir(), `seenstore-stand-in-${process.pid}-${file}`);
  if (!existsSync(path)) {
    writeFileSync(path, `${sharedUrls(file).join('\n')}\n`);
    process.on('exit', () => rmSync(path, { force: true }));
  }
  return path;
}

/** URLs as UTF-8 keys where they lie, one per line of one buffer (as filter-new hands them over). */
export function utf8Lines(urls: readonly string[]): { bytes: Buffer; ranges: Uint32Array; count: number } {
  const bytes = Buffer.from(`${urls.join('\n')}\n`);
  const ranges = new Uint32Array(2 * urls.length);
  let at = 0;
  urls.forEach((url, i) => {
    ranges[2 * i] = at;
    at += Buffer.byteLength(url);
    ranges[2 * i + 1] = at;
    at += 1;
  });
  return { bytes, ranges, count: urls.length };
}

/** Every shared URL, deduplicated, in file order. */
export function allSharedUrls(): string[] {
  return [...new Set(DATA_FILES.flatMap((file) => sharedUrls(file)))];
}

/**
 * Upper bound of a binomial count: mean + z standard deviations (z = 4.5: a correct
 * implementation fails about once in 300,000 runs) plus one for discreteness.
 */
export function binomialUpper(trials: number, p: number, z = 4.5): number {
  return trials * p + z * Math.sqrt(trials * p * (1 - p)) + 1;
}

export function binomialLower(trials: number, p: number, z = 4.5): number {
  return Math.max(0, trials * p - z * Math.sqrt(trials * p * (1 - p)) - 1);
}

/** A deterministic stream of uniform 32-bit words (xorshift32): synthetic hash halves for tests. */
export function xorshift32(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state >>> 0;
  };
}

/** bench/'s large real data set (bench/package.json pins it; `npm install --prefix bench` installs it). */
const PACKAGE_REPOS = join(ROOT, 'bench', 'node_modules', 'all-the-package-repos');
/** Where bench/data.ts keeps the data set as one URL per line (the same file is written here). */
const BENCH_CACHE = join(ROOT, 'bench', '.data');

/**
 * The file bench/data.ts and largeUrls keep the data set in (`.usable`: since URLs without a host
 * are left out; `2`: since those with a control character are too, as URL keys refuse them).
 */
export function packageReposFile(version: string): string {
  return `package-repos-${version}.usable2.txt`;
}

/**
 * The package list's distinct http(s) values in file order that seenstore takes as URLs with its
 * default keys: a few have no host (`https:///css/x.git`) and are skipped as invalid, which every
 * contender would have to do alike.
 */
export function usablePackageRepoUrls(values: readonly unknown[]): string[] {
  return [
    ...new Set(
      values.filter((v): v is string => typeof v === 'string' && /^https?:\/\//.test(v) && toKey(v, 'url') === v),
    ),
  ];
}

/** A large URL list: its lines, and where they came from (for a test's report). */
export interface LargeUrls {
  readonly urls: string[];
  readonly source: string;
}

/**
 * `count` distinct real repository URLs from bench's all-the-package-repos data set (its distinct
 * http(s) values in file order, as bench/data.ts lists them, read from bench's cache of that list
 * when it is there); without it, generated crawl-like URLs stand in (said once on stderr). The
 * shared lists are too small (50k URLs) for a test at 10^6.
 */
export function largeUrls(count: number): LargeUrls {
  const repos = packageRepoUrls();
  if (repos !== undefined && repos.urls.length >= count)
    return { urls: repos.urls.slice(0, count), source: repos.source };
  process.stderr.write(
    `# ${PACKAGE_REPOS} not installed (npm install --prefix bench): ${count.toLocaleString('en-US')} generated crawl-like URLs stand in for real ones\n`,
  );
  return {
    urls: generatedUrls(count, 3),
    source: `${count} generated crawl-like URLs (test/helpers/generated-urls.ts, seed 3)`,
  };
}

function packageRepoUrls(): LargeUrls | undefined {
  const packageJson = join(PACKAGE_REPOS, 'package.json');
  if (!existsSync(packageJson)) return undefined;
  const version = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  const source = `all-the-package-repos@${version} (bench's data set)`;
  const cache = join(BENCH_CACHE, packageReposFile(version));
  if (existsSync(cache))
    return {
      urls: readFileSync(cache, 'utf8')
        .split('\n')
        .filter((line) => line.length > 0),
      source,
    };
  const values = Object.values(
    JSON.parse(readFileSync(join(PACKAGE_REPOS, 'data', 'packages.json'), 'utf8')) as Record<string, unknown>,
  );
  const urls = usablePackageRepoUrls(values);
  // The same file bench/data.ts writes, complete or absent (renamed into place): parsing the
  // 257 MB package list takes ~12 s, reading this file well under one.
  mkdirSync(BENCH_CACHE, { recursive: true });
  writeFileSync(`${cache}.${process.pid}`, `${urls.join('\n')}\n`);
  renameSync(`${cache}.${process.pid}`, cache);
  return { urls, source };
}
