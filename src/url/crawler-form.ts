/**
 * The crawler URL form (normalisation mode `crawler`): the WHATWG serialisation, then
 *
 * 1. the fragment dropped (with its `#`);
 * 2. percent-escapes made canonical per RFC 3986 §6.2.2: an escape of an unreserved character
 *    (`A-Z a-z 0-9 - . _ ~`) decoded, every other escape's hex digits upper-cased; a URL that holds
 *    a stray `%` (not followed by two hex digits) only gets the upper-casing, because a decoded
 *    digit next to it could form a new escape;
 * 3. the query split on `&`, empty pieces dropped, the pieces sorted by key (the text before the
 *    first `=`, compared code unit by code unit, which is byte order since the serialisation is
 *    ASCII), stable: pieces with the same key keep their order; no query left means no `?`;
 * 4. then, with neither query nor fragment left, an opaque path's trailing spaces (`mailto:a `)
 *    dropped, as parsing the key again would drop them.
 *
 * Nothing else is rewritten: `+` and `%20`, `/` and `%2F`, `a` and `a=` stay distinct, because a
 * server may tell them apart and a false merge means a page never fetched. docs/format.md has the
 * rule's test vectors and how it differs from Crawlee's uniqueKey and Scrapy's canonicalize_url.
 */
export function crawlerForm(href: string): string {
  const hashAt = href.indexOf('#');
  const withoutFragment = hashAt < 0 ? href : href.slice(0, hashAt);
  const text = withoutFragment.includes('%') ? canonicalEscapes(withoutFragment) : withoutFragment;
  // In a WHATWG serialisation, the first `?` starts the query: the parts before it encode theirs.
  const queryAt = text.indexOf('?');
  const query = queryAt < 0 ? '' : sortedQuery(text.slice(queryAt + 1));
  if (query.length > 0) return `${text.slice(0, queryAt)}?${query}`;
  const head = queryAt < 0 ? text : text.slice(0, queryAt);
  // WHATWG keeps trailing spaces of an opaque path (`mailto:a `) only while a query or fragment
  // follows; without both, parsing the key again would strip them: strip them now.
  return hasOpaquePath(head) ? head.replace(/ +$/, '') : head;
}

/** `scheme:` not followed by `/`: a path that is not a list of segments (`mailto:`, `data:`). */
function hasOpaquePath(href: string): boolean {
  return href.charCodeAt(href.indexOf(':') + 1) !== 0x2f;
}

const ESCAPE = /%([0-9A-Fa-f]{2})/g;
const STRAY_PERCENT = /%(?![0-9A-Fa-f]{2})/;

function canonicalEscapes(text: string): string {
  const decode = !STRAY_PERCENT.test(text);
  return text.replace(ESCAPE, (found: string, hex: string) => {
    const code = Number.parseInt(hex, 16);
    return decode && isUnreserved(code) ? String.fromCharCode(code) : found.toUpperCase();
  });
}

function isUnreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2d ||
    code === 0x2e ||
    code === 0x5f ||
    code === 0x7e // - . _ ~
  );
}

function sortedQuery(query: string): string {
  const pieces = query.split('&').filter((piece) => piece.length > 0);
  if (pieces.length < 2) return pieces.join('&');
  const keyed = pieces.map((piece) => {
    const equalsAt = piece.indexOf('=');
    return { key: equalsAt < 0 ? piece : piece.slice(0, equalsAt), piece };
  });
  // Array.prototype.sort is stable (ES2019): pieces with one key keep their relative order.
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map(({ piece }) => piece).join('&');
}
