/**
 * How an input line becomes the key that is hashed. The mode is fixed in the epoch header when the
 * epoch is created; an epoch never mixes modes, because the same URL would map to different bits.
 *
 * - `none`: the line exactly as given (after the CLI strips CR and a BOM).
 * - `whatwg`: the WHATWG URL serialisation (`new URL(line).href`): lower-cased scheme and host,
 *   punycode IDNs, default ports dropped, dot segments resolved, percent-encoding made canonical.
 *   Lines that do not parse as absolute URLs are invalid.
 */
export type NormalizeMode = 'none' | 'whatwg';

export const NORMALIZE_MODES: readonly NormalizeMode[] = ['none', 'whatwg'];

/** Longest key, in UTF-8 bytes, that is accepted. URLs longer than this are rejected, not cut. */
export const MAX_KEY_BYTES = 65_536;

/** Returns the key for `url`, or undefined when it cannot be a key in this mode. */
export function toKey(url: string, mode: NormalizeMode): string | undefined {
  if (url.length === 0 || url.length > MAX_KEY_BYTES || !url.isWellFormed()) return undefined;
  if (mode === 'none') return tooLong(url) ? undefined : url;
  let href: string;
  try {
    href = new URL(url).href;
  } catch {
    return undefined;
  }
  return tooLong(href) ? undefined : href;
}

/** Only strings that could reach the limit are measured: UTF-16 length * 3 bounds the UTF-8 length. */
function tooLong(key: string): boolean {
  return key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES;
}
