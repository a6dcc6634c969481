import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root (tests run from dist/test/...). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** ../shared/data beside the project: real URL lists, never copied into the repository. */
export const SHARED_DATA = resolve(ROOT, '..', 'shared', 'data');

export const DATA_FILES = ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt'] as const;

/** Reads a shared URL list; fails loudly when it is missing rather than letting a test pass on nothing. */
export function sharedUrls(file: (typeof DATA_FILES)[number]): string[] {
  const path = join(SHARED_DATA, file);
  if (!existsSync(path)) {
    throw new Error(`test data missing: ${path} (the tests read ../shared/data/ beside the project checkout)`);
  }
  const urls = readFileSync(path, 'utf8').split('\n').filter((line) => line.length > 0);
  if (urls.length < 10_000) throw new Error(`test data ${path} has only ${urls.length} lines`);
  return urls;
}

export function sharedPath(file: (typeof DATA_FILES)[number]): string {
  sharedUrls(file);
  return join(SHARED_DATA, file);
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
