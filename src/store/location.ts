import { SeenStoreError } from '../errors.js';

/** `scheme:` of two letters or more (so `C:` stays a Windows drive), `//` at the start, or `word//`. */
const URL_LIKE = /^(?:[a-z][a-z0-9+.-]+:|\/\/|[a-z][a-z0-9+.-]*\/\/)/i;

/** `scheme://` with a scheme of `schemes`: a location some driver serves. */
function namesScheme(location: string, schemes: readonly string[]): boolean {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(location)?.[1]?.toLowerCase();
  return scheme !== undefined && schemes.includes(scheme);
}

/**
 * Refuses a location that looks like a URL but names none of `schemes` (the driver registry's,
 * store/open.ts): `redis:/host:7001`, `redis//host`, `//host`, `http://host`. Taken as a directory
 * it would create an empty store there and report every URL as new. A directory that really has
 * such a name is given as `./NAME`.
 */
export function checkLocation(location: string, schemes: readonly string[]): void {
  if (namesScheme(location, schemes) || !URL_LIKE.test(location)) return;
  const supported = `supported: ${schemes.map((scheme) => `${scheme}://`).join(', ')}, or a directory`;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(location)?.[1]?.toLowerCase();
  const what =
    scheme === undefined
      ? `store location ${JSON.stringify(location)} looks like a URL but names no supported scheme`
      : `unknown store scheme ${scheme}:// in ${JSON.stringify(location)}`;
  throw new SeenStoreError('USAGE', `${what} (${supported}); for a directory of that name write ./${location}`);
}
