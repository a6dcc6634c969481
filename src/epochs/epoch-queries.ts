import type { EpochBits } from '../store/backend.js';
import type { NormalizeMode } from '../url/normalize.js';
import { usableKeys } from '../url/url-keys.js';

/** URLs per call of the backend: a larger call is split, each part an atomic step of its own. */
export const MAX_BATCH_URLS = 65_536;

/**
 * Membership of each URL in one epoch, keyed by that epoch's normalisation: a URL that is no key
 * under it is simply not seen.
 */
export async function hasUrls(epoch: EpochBits, urls: readonly string[]): Promise<boolean[]> {
  const mode = epoch.header.normalize as NormalizeMode;
  const answers = new Array<boolean>(urls.length).fill(false);
  const out = new Uint8Array(Math.min(urls.length, MAX_BATCH_URLS));
  for (let start = 0; start < urls.length; start += MAX_BATCH_URLS) {
    const { keys, at } = usableKeys(urls, mode, start, Math.min(urls.length, start + MAX_BATCH_URLS));
    await epoch.has(keys, out);
    for (let i = 0; i < keys.length; i++) answers[at[i]!] = out[i] === 1;
  }
  return answers;
}

/** Membership of each key in one epoch, the keys checked under its normalisation already (urlKeys). */
export async function hasKeys(epoch: EpochBits, keys: readonly string[]): Promise<boolean[]> {
  const answers = new Array<boolean>(keys.length);
  const out = new Uint8Array(Math.min(keys.length, MAX_BATCH_URLS));
  for (let start = 0; start < keys.length; start += MAX_BATCH_URLS) {
    const part = keys.length <= MAX_BATCH_URLS ? keys : keys.slice(start, start + MAX_BATCH_URLS);
    await epoch.has(part, out);
    for (let i = 0; i < part.length; i++) answers[start + i] = out[i] === 1;
  }
  return answers;
}

/** Adds each key's count in one counting epoch to totals[i], the keys checked under its normalisation already. */
export async function addCounts(epoch: EpochBits, keys: readonly string[], totals: number[]): Promise<void> {
  const counts = new Array<number>(0);
  for (let start = 0; start < keys.length; start += MAX_BATCH_URLS) {
    const part = keys.slice(start, start + MAX_BATCH_URLS);
    counts.length = part.length;
    counts.fill(0);
    await epoch.count(part, counts);
    for (let i = 0; i < part.length; i++) totals[start + i]! += counts[i]!;
  }
}
