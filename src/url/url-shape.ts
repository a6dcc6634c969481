/**
 * The cheap check of normalisation `url` (keys are URLs): a key is its line without surrounding
 * ASCII whitespace, and it must start like an absolute URL with a host: a scheme (a letter, then
 * letters, digits, `+`, `-`, `.`), `://`, then a first host character that is none of `/ ? # @ :`
 * and no whitespace or control character, after at most one `@` (an empty userinfo: the WHATWG URL
 * standard reads `http://@host/` as `http://host/`). Nothing else past the host's first character
 * is looked at: no parse, no allocation, a few byte comparisons per key. Each function has a string and a byte form that
 * decide alike, since one input is read either way (strings through the library, bytes by
 * filter-new).
 *
 * Nor may a URL key hold a control character (U+0000-U+001F, U+007F) anywhere: that check looks at
 * every character, so the hot paths leave it to a pass that reads every byte anyway (the kernel's
 * hashing, the line reader's scan: src/hash/kernel.wat); the functions here that make it say so.
 */

/** Space, tab, LF, VT, FF, CR: what is trimmed from both ends of a key. */
export function isAsciiSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d);
}

function isAlpha(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
}

function isSchemeChar(code: number): boolean {
  return isAlpha(code) || (code >= 0x30 && code <= 0x39) || code === 0x2b || code === 0x2d || code === 0x2e;
}

/** Longest scheme looked for: past it, the line is not a URL (IANA's longest is far shorter). */
const SCHEME_CHARS_MAX = 32;

/** Characters that cannot start a host: / ? # @ : and anything up to space (controls, whitespace). */
function canStartHost(code: number): boolean {
  return (
    code > 0x20 && code !== 0x7f && code !== 0x2f && code !== 0x3f && code !== 0x23 && code !== 0x40 && code !== 0x3a
  );
}

/** Whether the host that starts at `at` (before `end`) starts well: `@` (an empty userinfo) then a host character, or a host character. */
function hostStartsString(line: string, at: number, end: number): boolean {
  const code = line.charCodeAt(at);
  return code === 0x40 ? at + 1 < end && canStartHost(line.charCodeAt(at + 1)) : canStartHost(code);
}

function hostStartsBytes(bytes: Uint8Array, at: number, end: number): boolean {
  const code = bytes[at]!;
  return code === 0x40 ? at + 1 < end && canStartHost(bytes[at + 1]!) : canStartHost(code);
}

/** Whether line[start, end) starts like `scheme://host`. */
function shapedString(line: string, start: number, end: number): boolean {
  if (end - start < 4 || !isAlpha(line.charCodeAt(start))) return false;
  let i = start + 1;
  const schemeEnd = Math.min(end, start + SCHEME_CHARS_MAX + 1);
  while (i < schemeEnd && isSchemeChar(line.charCodeAt(i))) i++;
  return (
    i + 3 < end &&
    line.charCodeAt(i) === 0x3a &&
    line.charCodeAt(i + 1) === 0x2f &&
    line.charCodeAt(i + 2) === 0x2f &&
    hostStartsString(line, i + 3, end)
  );
}

/**
 * The key of `line` in mode `url` (trimmed), or undefined when it does not start like an absolute
 * URL, or, with `controls`, when the key holds a control character.
 */
export function urlKeyOf(line: string, controls: boolean): string | undefined {
  let start = 0;
  let end = line.length;
  while (start < end && isAsciiSpace(line.charCodeAt(start))) start++;
  while (end > start && isAsciiSpace(line.charCodeAt(end - 1))) end--;
  if (!shapedString(line, start, end) || (controls && holdsControlString(line, start, end))) return undefined;
  return start === 0 && end === line.length ? line : line.slice(start, end);
}

/** A control character: C0 (U+0000-U+001F) or DEL (U+007F). No URL holds one unescaped. */
export function isControl(code: number): boolean {
  return code < 0x20 || code === 0x7f;
}

/** Whether line[start, end) holds a control character. */
export function holdsControlString(line: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (isControl(line.charCodeAt(i))) return true;
  return false;
}

/** Whether `line` holds a control character once its surrounding ASCII whitespace is left aside. */
export function holdsControlTrimmed(line: string): boolean {
  let start = 0;
  let end = line.length;
  while (start < end && isAsciiSpace(line.charCodeAt(start))) start++;
  while (end > start && isAsciiSpace(line.charCodeAt(end - 1))) end--;
  return holdsControlString(line, start, end);
}

/** Whether bytes[start, end) holds a control character (the bytes of any other UTF-8 character are 0x20 or more). */
export function holdsControlBytes(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (isControl(bytes[i]!)) return true;
  return false;
}

/**
 * As urlKeyOf, for the UTF-8 key bytes[start, end): its trimmed start and end written to
 * `range` (two numbers), true when it starts like an absolute URL (control characters are the
 * caller's: holdsControlBytes). No allocation.
 */
export function urlKeyRange(bytes: Uint8Array, start: number, end: number, range: Uint32Array): boolean {
  while (start < end && isAsciiSpace(bytes[start]!)) start++;
  while (end > start && isAsciiSpace(bytes[end - 1]!)) end--;
  range[0] = start;
  range[1] = end;
  return shapedBytes(bytes, start, end);
}

/**
 * Whether bytes[start, end), already without surrounding whitespace, starts like an absolute URL:
 * shapedString over bytes (written twice: a closure per key would allocate on the hot path).
 */
export function shapedBytes(bytes: Uint8Array, start: number, end: number): boolean {
  // Most crawled URLs are http(s): `http` then `://` or `s://`, decided without the scheme loop.
  if (
    end - start > 8 &&
    bytes[start] === 0x68 &&
    bytes[start + 1] === 0x74 &&
    bytes[start + 2] === 0x74 &&
    bytes[start + 3] === 0x70
  ) {
    const colon = bytes[start + 4] === 0x73 ? start + 5 : start + 4;
    if (bytes[colon] === 0x3a)
      return bytes[colon + 1] === 0x2f && bytes[colon + 2] === 0x2f && hostStartsBytes(bytes, colon + 3, end);
  }
  if (end - start < 4 || !isAlpha(bytes[start]!)) return false;
  let i = start + 1;
  const schemeEnd = Math.min(end, start + SCHEME_CHARS_MAX + 1);
  while (i < schemeEnd && isSchemeChar(bytes[i]!)) i++;
  return (
    i + 3 < end &&
    bytes[i] === 0x3a &&
    bytes[i + 1] === 0x2f &&
    bytes[i + 2] === 0x2f &&
    hostStartsBytes(bytes, i + 3, end)
  );
}
