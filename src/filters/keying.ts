import { controlKey, illFormedKey, keyStrings, type Keys, type XxHash } from '../hash/xxhash.js';
import type { FilterGeometry, Layout } from './bloom.js';
import { PARTITIONED_LAYOUT } from './partitions.js';

/**
 * What each filter of a slice is keyed by. Without a keying (classic, blocked, spatial) every
 * filter hashes the whole URL key with its own seed. With one, some filters hash keys derived from
 * the URL, and a URL is seen only if every filter holds its own key:
 *
 * - `eigen-v1` (seed 001, the eigenvalue-extension Bloom filter): filter 0 hashes the URL with k
 *   positions; filter 1 (the "extension region", featureMBits bits) hashes the URL's features
 *   with featureK positions. The features are {@link eigenFeatures}.
 * - `multilayer-v1` (seed 002, the multi-layer Bloom filter, its algorithms 3 and 4): filters
 *   0..L-1 hash the URL's segments by depth ({@link urlLayers}); filter L (the extra layer) hashes
 *   the XOR of every layer's hash of (depth, segment), so segments of different URLs cannot be
 *   mixed into a false "seen".
 *
 * - `counting-v1` (seeds 003/004, the spectral Bloom filter): not a derivation but a cell type.
 *   Both filters hash the whole URL with their own seeds, and hold one-byte counters instead of
 *   bits: filter 0 the primary (mBits / 8 counters), filter 1 the recurring-minimum secondary
 *   (secondaryCells counters). See filters/counting.ts.
 *
 * Recorded in the slice header (format 3); the derivations are part of the format and never change
 * under the same name.
 */
export type Keying =
  | { readonly kind: 'eigen-v1'; readonly featureMBits: number; readonly featureK: number }
  | { readonly kind: 'multilayer-v1'; readonly layers: number }
  | { readonly kind: 'counting-v1'; readonly secondaryCells: number };

export interface SliceGeometry {
  readonly layout: string;
  readonly mBits: number;
  readonly k: number;
  readonly seeds: readonly string[];
  readonly keying?: Keying;
}

/** The geometry of each filter of a slice, in filter order. */
export function filterGeometries(slice: SliceGeometry): FilterGeometry[] {
  // A partitioned slice's filter is a blocked filter: its hash words are folded (filters/partitions.ts).
  const layout = slice.layout === PARTITIONED_LAYOUT ? 'blocked' : (slice.layout as Layout);
  const main: FilterGeometry = { layout, mBits: slice.mBits, k: slice.k };
  if (slice.keying?.kind === 'eigen-v1')
    return [main, { layout: 'classic', mBits: slice.keying.featureMBits, k: slice.keying.featureK }];
  if (slice.keying?.kind === 'counting-v1')
    return [main, { layout: 'classic', mBits: slice.keying.secondaryCells * 8, k: slice.k }];
  return slice.seeds.map(() => main);
}

/**
 * The features of a URL for `eigen-v1`: scheme, host (lower-cased, with port), path depth, path
 * length, the last segment's extension, and the query's parameter names in order, joined by
 * U+001F. Two URLs share features when they have the same shape on the same host: that is what
 * the extension region tells apart (and, on one host's many similar URLs, what it cannot).
 */
export function eigenFeatures(url: string): string {
  const schemeEnd = url.indexOf('://');
  const scheme = schemeEnd > 0 ? url.slice(0, schemeEnd).toLowerCase() : '';
  const rest = schemeEnd > 0 ? url.slice(schemeEnd + 3) : url;
  const hostEnd = firstOf(rest, '/?#');
  const host = rest.slice(0, hostEnd).toLowerCase();
  const afterHost = rest.slice(hostEnd);
  const queryAt = firstOf(afterHost, '?#');
  const path = afterHost.slice(0, queryAt);
  const segments = path.split('/').filter((s) => s.length > 0);
  const last = segments[segments.length - 1] ?? '';
  const dot = last.lastIndexOf('.');
  const extension = dot > 0 ? last.slice(dot + 1).toLowerCase() : '';
  let queryNames = '';
  if (afterHost[queryAt] === '?') {
    const hashAt = afterHost.indexOf('#', queryAt);
    const query = afterHost.slice(queryAt + 1, hashAt < 0 ? afterHost.length : hashAt);
    queryNames = query
      .split('&')
      .map((pair) => pair.split('=')[0])
      .join('&');
  }
  return [scheme, host, segments.length, path.length, extension, queryNames].join('\u001f');
}

/**
 * The `layers` keys of a URL for `multilayer-v1`: layer 0 is everything up to the end of the host
 * (scheme, authority), layers 1..L-2 one path segment each with its leading `/`, layer L-1 the rest
 * (deeper segments, query, fragment). A layer the path does not reach is the empty key, so `a/b`,
 * `a/b/` and `a/b/c` all differ. The layers joined give back the URL exactly: no two URLs share
 * all their layers.
 */
export function urlLayers(url: string, layers: number, out: string[]): void {
  const schemeEnd = url.indexOf('://');
  let at = firstOf(url, '/?#', schemeEnd >= 0 ? schemeEnd + 3 : 0);
  out[0] = url.slice(0, at);
  for (let layer = 1; layer < layers; layer++) {
    if (layer === layers - 1) {
      out[layer] = url.slice(at);
    } else if (at < url.length && url[at] === '/') {
      const end = firstOf(url, '/?#', at + 1);
      out[layer] = url.slice(at, end);
      at = end;
    } else {
      // The path ended (or a query or fragment follows): that goes to the last layer.
      out[layer] = '';
    }
  }
}

/** A control character: what the kernel's pass refuses in a URL key (strategies with derived keys test the URL here). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

function firstOf(text: string, chars: string, from = 0): number {
  for (let i = from; i < text.length; i++) if (chars.includes(text[i]!)) return i;
  return text.length;
}

/**
 * Hashes the keys of `batch` for every filter of one slice into `words`: filter f's hash of key i goes to
 * words[i * stride + at + 2f] (low half) and the next word (high half), as the journal stores it.
 * With `controls`, a key that holds a control character is refused (INVALID_URL; XxHash.hashKeys).
 */
export function hashSlice(
  hash: XxHash,
  keying: Keying | undefined,
  batch: Keys,
  seeds: readonly bigint[],
  words: Uint32Array,
  stride: number,
  at: number,
  controls = false,
): void {
  if (keying === undefined || keying.kind === 'counting-v1') {
    hash.hashKeys(batch, seeds, words, stride, at, controls);
    return;
  }
  const keys = keyStrings(batch);
  // Derived keys need not contain a URL's lone surrogate or control character (the features join
  // with U+001F): refuse them here, as hashing the URL would.
  for (const key of keys) {
    if (!key.isWellFormed()) throw illFormedKey(key);
    if (controls && CONTROL_CHARACTER.test(key)) throw controlKey(key);
  }
  if (keying.kind === 'eigen-v1') {
    hash.hashKeys(keys, [seeds[0]!], words, stride, at);
    hash.hashKeys(keys.map(eigenFeatures), [seeds[1]!], words, stride, at + 2);
    return;
  }
  const layers = keying.layers;
  const perLayer = Array.from({ length: layers }, () => new Array<string>(keys.length));
  const parts = new Array<string>(layers);
  for (let i = 0; i < keys.length; i++) {
    urlLayers(keys[i]!, layers, parts);
    for (let layer = 0; layer < layers; layer++) perLayer[layer]![i] = parts[layer]!;
  }
  for (let layer = 0; layer < layers; layer++)
    hash.hashKeys(perLayer[layer]!, [seeds[layer]!], words, stride, at + 2 * layer);
  // The extra layer: XOR over layers of the hash of (depth, segment) under its own seed.
  const xorAt = at + 2 * layers;
  const scratch = new Uint32Array(2 * keys.length);
  for (let i = 0; i < keys.length; i++) {
    words[i * stride + xorAt] = 0;
    words[i * stride + xorAt + 1] = 0;
  }
  for (let layer = 0; layer < layers; layer++) {
    hash.hashKeys(
      perLayer[layer]!.map((segment) => `${layer}\u001f${segment}`),
      [seeds[layers]!],
      scratch,
      2,
      0,
    );
    for (let i = 0; i < keys.length; i++) {
      words[i * stride + xorAt] = (words[i * stride + xorAt]! ^ scratch[2 * i]!) >>> 0;
      words[i * stride + xorAt + 1] = (words[i * stride + xorAt + 1]! ^ scratch[2 * i + 1]!) >>> 0;
    }
  }
}
