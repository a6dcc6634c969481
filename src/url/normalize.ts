import { isUtf8 } from 'node:buffer';
import { SeenStoreError } from '../errors.js';
import type { Utf8Keys } from '../hash/xxhash.js';
import { crawlerForm } from './crawler-form.js';
import { holdsControlTrimmed, urlKeyOf } from './url-shape.js';

/**
 * How an input line becomes the key that is hashed. The mode is fixed in the epoch header when the
 * epoch is created; an epoch never mixes modes, because the same URL would map to different bits.
 *
 * - `none`: the line exactly as given (after the CLI strips CR and a BOM): any line is a key
 *   (`keys: 'raw'`).
 * - `url` (the default of new scopes since format 4: `keys: 'url'` with no normalisation): the
 *   line without surrounding ASCII whitespace, when it starts like an absolute URL
 *   (`scheme://host`, src/url/url-shape.ts) and holds no control character; other lines are
 *   invalid. The bytes are not changed otherwise, so a URL given without surrounding whitespace
 *   has the same key as under `none`.
 * - `whatwg`: the WHATWG URL serialisation (`new URL(line).href`): lower-cased scheme and host,
 *   punycode IDNs, default ports dropped, dot segments resolved, percent-encoding made canonical.
 *   Lines that do not parse as absolute URLs are invalid, and so are lines that hold a control
 *   character once trimmed (which the parser would drop or percent-encode).
 * - `crawler`: the `whatwg` form without its fragment, with canonical percent-escapes and the query
 *   parameters sorted by key (src/url/crawler-form.ts), so that the links a crawler finds in
 *   different orders or with different fragments are one key.
 */
export type NormalizeMode = 'none' | 'url' | 'whatwg' | 'crawler';

/** The modes given by name (--normalize); `url` is `none` with `keys: 'url'` (KeyMode). */
export const NORMALIZE_MODES: readonly NormalizeMode[] = ['none', 'whatwg', 'crawler'];

/** Every mode an epoch header may record. */
export const KNOWN_NORMALIZE_MODES: readonly NormalizeMode[] = ['none', 'url', 'whatwg', 'crawler'];

/**
 * What a scope accepts as a key: `url` (default) only lines that are URLs, `raw` any line
 * (deduplicating lines of any kind). With normalisation `none`, `url` makes the epoch's mode `url`.
 */
export type KeyMode = 'url' | 'raw';

export const KEY_MODES: readonly KeyMode[] = ['url', 'raw'];

/** The mode an epoch records for a normalisation and a key mode (USAGE when they contradict). */
export function epochNormalizeMode(normalize: NormalizeMode | undefined, keys: KeyMode | undefined): NormalizeMode {
  if (keys !== undefined && !KEY_MODES.includes(keys))
    throw new SeenStoreError('USAGE', `unknown key mode ${JSON.stringify(keys)} (${KEY_MODES.join(', ')})`);
  const mode = normalize ?? 'none';
  if (keys === 'raw' && mode !== 'none')
    throw new SeenStoreError(
      'USAGE',
      `keys raw takes any line as it is; normalisation ${mode} takes only URLs: give one of them`,
    );
  return mode === 'none' && keys !== 'raw' ? 'url' : mode;
}

/** The key mode an epoch's normalisation implies: `raw` for `none`, `url` for the others. */
export function keyModeOf(mode: NormalizeMode): KeyMode {
  return mode === 'none' ? 'raw' : 'url';
}

/** Longest key, in UTF-8 bytes, that is accepted. URLs longer than this are rejected, not cut. */
export const MAX_KEY_BYTES = 65_536;

/**
 * Returns the key for `url`, or undefined when it cannot be a key in this mode. With `byHashing`,
 * what the hashing refuses anyway (INVALID_URL) while it reads the key is left to it: a lone
 * surrogate, found while encoding (free for ASCII batches; `String.isWellFormed` costs about 100 ns
 * per URL), and in mode `url` a control character, found by the kernel's pass over the bytes (a
 * loop over the characters here costs ~80-120 ns per URL): only for callers that hash every key
 * before writing anything.
 */
export function toKey(url: string, mode: NormalizeMode, byHashing = false): string | undefined {
  if (url.length === 0 || url.length > MAX_KEY_BYTES) return undefined;
  if (mode === 'none') return (!byHashing && !url.isWellFormed()) || tooLong(url) ? undefined : url;
  if (mode === 'url') {
    const key = urlKeyOf(url, !byHashing);
    return key === undefined || (!byHashing && !key.isWellFormed()) || tooLong(key) ? undefined : key;
  }
  if (mode !== 'whatwg' && mode !== 'crawler') unknownMode(mode);
  if (!url.isWellFormed() || holdsControlTrimmed(url)) return undefined;
  let href: string;
  try {
    href = new URL(url).href;
  } catch {
    return undefined;
  }
  const key = mode === 'whatwg' ? href : crawlerForm(href);
  return tooLong(key) ? undefined : key;
}

/** A mode this version does not know (an epoch header from a newer one) must not hash as another. */
function unknownMode(mode: never): never {
  throw new SeenStoreError(
    'FORMAT_UNSUPPORTED',
    `unknown normalisation ${JSON.stringify(mode)} (this version knows ${KNOWN_NORMALIZE_MODES.join(', ')})`,
  );
}

/**
 * Index of the first UTF-8 key that cannot be a key in mode `none` (empty, over MAX_KEY_BYTES, not
 * valid UTF-8, out of order or out of bounds), or -1 when all can. The batch's shape (typed arrays,
 * two ranges per key) is the caller's to check. One native UTF-8 check covers
 * the whole span when it is valid; a key is then valid when it starts and ends on character
 * boundaries. No allocation per key unless the span holds invalid bytes somewhere.
 */
export function firstInvalidUtf8Key(keys: Utf8Keys): number {
  const { bytes, ranges, count } = keys;
  if (count === 0) return -1;
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let previousEnd = 0;
  for (let i = 0; i < count; i++) {
    const start = ranges[2 * i]!;
    const end = ranges[2 * i + 1]!;
    if (start < previousEnd || end <= start || end > bytes.length || end - start > MAX_KEY_BYTES) return i;
    previousEnd = end;
  }
  const spanValid = isUtf8(view.subarray(ranges[0]!, previousEnd));
  for (let i = 0; i < count; i++) {
    const start = ranges[2 * i]!;
    const end = ranges[2 * i + 1]!;
    const ok = spanValid
      ? !isContinuation(bytes[start]!) && (end === previousEnd || !isContinuation(bytes[end]!))
      : isUtf8(view.subarray(start, end));
    if (!ok) return i;
  }
  return -1;
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** Only strings that could reach the limit are measured: UTF-16 length * 3 bounds the UTF-8 length. */
function tooLong(key: string): boolean {
  return key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES;
}
