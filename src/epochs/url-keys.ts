import { SeenStoreError } from '../errors.js';
import { isUtf8Keys, keyStrings, type Keys } from '../hash/xxhash.js';
import { firstInvalidUtf8Key, toKey, type NormalizeMode } from '../url/normalize.js';

/**
 * Turns a call's URLs into the keys an epoch hashes, validating every one before anything is
 * written: a bad one fails the whole call. In mode `none` every key is its URL, and the caller's
 * array serves (no copy per call). With `hashedWhole`, the caller hashes all of the call's keys
 * before it writes anything, and the hashing refuses a lone surrogate (toKey's checkWellFormed).
 */
export function urlKeys(urls: readonly string[], mode: NormalizeMode, hashedWhole = false): readonly string[] {
  if (!Array.isArray(urls)) throw new TypeError('urls must be an array of strings');
  const keys = mode === 'none' ? undefined : new Array<string>(urls.length);
  for (let i = 0; i < urls.length; i++) {
    const url = urls[i];
    if (typeof url !== 'string') throw new TypeError(`urls[${i}] is not a string`);
    const key = toKey(url, mode, !hashedWhole);
    if (key === undefined) {
      throw new SeenStoreError('INVALID_URL', `urls[${i}] is not a usable URL (empty, ill-formed UTF-16, over 64 KiB${mode === 'whatwg' ? ', or not an absolute URL' : ''})`);
    }
    if (keys !== undefined) keys[i] = key;
  }
  return keys ?? urls;
}

/** As urlKeys, for an array or UTF-8 keys; UTF-8 keys stay bytes in mode `none`, else they are decoded and normalised. */
export function anyUrlKeys(urls: Keys, mode: NormalizeMode, hashedWhole: boolean): Keys {
  if (!isUtf8Keys(urls)) return urlKeys(urls, mode, hashedWhole);
  const bad = firstInvalidUtf8Key(urls);
  if (bad >= 0) {
    throw new SeenStoreError('INVALID_URL', `URL ${bad} of the UTF-8 batch is not a usable URL (empty, not valid UTF-8, over 64 KiB, or out of order)`);
  }
  return mode === 'none' ? urls : urlKeys(keyStrings(urls), mode);
}

/**
 * The keys of the URLs that are usable under `mode`, and where each came from: for queries, where
 * an unusable URL is simply not seen.
 */
export function usableKeys(urls: readonly string[], mode: NormalizeMode, from: number, to: number): { keys: string[]; at: number[] } {
  const keys: string[] = [];
  const at: number[] = [];
  for (let i = from; i < to; i++) {
    const key = toKey(urls[i]!, mode, false);
    if (key !== undefined) {
      keys.push(key);
      at.push(i);
    }
  }
  return { keys, at };
}
