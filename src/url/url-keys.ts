import { SeenStoreError } from '../errors.js';
import { controlKey, isUtf8Keys, keyStrings, markControlFree, type Keys, type Utf8Keys } from '../hash/xxhash.js';
import { firstInvalidUtf8Key, toKey, type NormalizeMode } from './normalize.js';
import { holdsControlBytes, isAsciiSpace, shapedBytes, urlKeyRange } from './url-shape.js';

/**
 * Turns a call's URLs into the keys an epoch hashes, validating every one before anything is
 * written: a bad one fails the whole call. In mode `none` every key is its URL, and the caller's
 * array serves (no copy per call). With `hashedWhole`, the caller hashes all of the call's keys
 * before it writes anything, and the hashing refuses a lone surrogate and, in mode `url`, a
 * control character (toKey's byHashing; EpochHasher).
 */
export function urlKeys(urls: readonly string[], mode: NormalizeMode, hashedWhole = false): readonly string[] {
  if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
  let keys = mode === 'none' || mode === 'url' ? undefined : new Array<string>(urls.length);
  for (let i = 0; i < urls.length; i++) {
    const url = urls[i];
    if (typeof url !== 'string') throw new TypeError(`urls[${i}] is not a string`);
    const key = toKey(url, mode, hashedWhole);
    if (key === undefined) {
      throw new SeenStoreError(
        'INVALID_URL',
        `urls[${i}] is not a usable URL (empty, ill-formed UTF-16, over 64 KiB${mode === 'none' ? '' : ', not an absolute URL, or with a control character'})`,
      );
    }
    if (keys === undefined && key !== url) keys = urls.slice(0, i);
    if (keys !== undefined) keys[i] = key;
  }
  return keys ?? urls;
}

/** As urlKeys, for an array or UTF-8 keys; UTF-8 keys stay bytes in mode `none`, else they are decoded and normalised. */
export function anyUrlKeys(urls: Keys, mode: NormalizeMode, hashedWhole: boolean): Keys {
  if (!isUtf8Keys(urls)) return urlKeys(urls, mode, hashedWhole);
  const bad = firstInvalidUtf8Key(urls);
  if (bad >= 0) {
    throw new SeenStoreError(
      'INVALID_URL',
      `URL ${bad} of the UTF-8 batch is not a usable URL (empty, not valid UTF-8, over 64 KiB, or out of order)`,
    );
  }
  if (mode === 'url') return checkedUrlKeys.has(urls) ? urls : trimmedUrlKeys(urls, hashedWhole);
  return mode === 'none' ? urls : urlKeys(keyStrings(urls), mode);
}

/**
 * UTF-8 batches whose keys were trimmed and checked as URL keys where they were cut from the input
 * (the CLI's line batcher, control characters included): checking them again costs ~10 ns per URL
 * on filter-new's path, and looking for control characters again in the hashing ~2.5 ns
 * (markControlFree). Internal to the package; the batch must not change after it is marked.
 */
const checkedUrlKeys = new WeakSet<Utf8Keys>();

/** Marks `keys` as trimmed and checked by urlKeyRange and the kernel's controlAt already (see checkedUrlKeys). */
export function markCheckedUrlKeys<K extends Utf8Keys>(keys: K): K {
  checkedUrlKeys.add(keys);
  return markControlFree(keys);
}

/**
 * UTF-8 keys in mode `url`: each must start like an absolute URL once trimmed, and hold no control
 * character (INVALID_URL otherwise; with `hashedWhole` the hashing looks for those). The caller's
 * ranges serve unless a key had whitespace around it; then the trimmed ranges are a copy (one per
 * call, never per key), the caller's left as they were.
 */
function trimmedUrlKeys(urls: Utf8Keys, hashedWhole: boolean): Utf8Keys {
  const { bytes, count } = urls;
  const given = urls.ranges;
  const range = new Uint32Array(2);
  let ranges = given;
  for (let i = 0; i < count; i++) {
    const start = given[2 * i]!;
    const end = given[2 * i + 1]!;
    // The usual key has no whitespace around it: its shape is checked in place.
    if (!isAsciiSpace(bytes[start]!) && !isAsciiSpace(bytes[end - 1]!)) {
      if (!shapedBytes(bytes, start, end)) throw notUrlKey(i);
      if (!hashedWhole && holdsControlBytes(bytes, start, end)) throw controlKey(keyText(urls, i));
      continue;
    }
    if (!urlKeyRange(bytes, start, end, range)) throw notUrlKey(i);
    if (!hashedWhole && holdsControlBytes(bytes, range[0]!, range[1]!)) throw controlKey(keyText(urls, i));
    if (ranges === given) ranges = given.slice(0, 2 * count);
    ranges[2 * i] = range[0]!;
    ranges[2 * i + 1] = range[1]!;
  }
  return ranges === given ? urls : { bytes, ranges, count };
}

/** Key i of a UTF-8 batch as text (for a message). */
function keyText(urls: Utf8Keys, i: number): string {
  return Buffer.from(urls.bytes.buffer, urls.bytes.byteOffset, urls.bytes.length).toString(
    'utf8',
    urls.ranges[2 * i],
    urls.ranges[2 * i + 1],
  );
}

function notUrlKey(i: number): SeenStoreError {
  return new SeenStoreError('INVALID_URL', `URL ${i} of the UTF-8 batch is not an absolute URL (scheme://host)`);
}

/**
 * The keys of the URLs that are usable under `mode`, and where each came from: for queries, where
 * an unusable URL is simply not seen. What the hashing refuses (a lone surrogate; in mode `url` a
 * control character) is left to it: such a URL fails the query with INVALID_URL.
 */
export function usableKeys(
  urls: readonly string[],
  mode: NormalizeMode,
  from: number,
  to: number,
): { keys: string[]; at: number[] } {
  const keys: string[] = [];
  const at: number[] = [];
  for (let i = from; i < to; i++) {
    const key = toKey(urls[i]!, mode, true);
    if (key !== undefined) {
      keys.push(key);
      at.push(i);
    }
  }
  return { keys, at };
}
