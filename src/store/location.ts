import { SeenStoreError } from '../errors.js';

/**
 * The URL schemes a store location may name, each for a backend that is not a directory. One
 * list: the check below and the messages read it, so a backend registered under another scheme
 * needs only its entry here.
 */
export const SUPPORTED_SCHEMES: readonly string[] = ['redis', 'rediss'];

/** `scheme:` of two letters or more (so `C:` stays a Windows drive), `//` at the start, or `word//`. */
const URL_LIKE = /^(?:[a-z][a-z0-9+.-]+:|\/\/|[a-z][a-z0-9+.-]*\/\/)/i;

/** The scheme of a location that names a supported server (`redis://...`), else undefined. */
export function locationScheme(location: string, schemes: readonly string[] = SUPPORTED_SCHEMES): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(location)?.[1]?.toLowerCase();
  return scheme !== undefined && schemes.includes(scheme) ? scheme : undefined;
}

/**
 * Refuses a location that looks like a URL but names no supported scheme (`redis:/host:7001`,
 * `redis//host`, `http://host`): taken as a directory it would create an empty store there and
 * report every URL as new. A directory that really has such a name is given as `./NAME`.
 * `schemes`: the list the message names (a driver registry's, where there is one).
 */
export function checkLocation(location: string, schemes: readonly string[] = SUPPORTED_SCHEMES): void {
  if (locationScheme(location, schemes) !== undefined || !URL_LIKE.test(location)) return;
  const supported = schemes.map((scheme) => `${scheme}://HOST:PORT`).join(', ');
  throw new SeenStoreError(
    'USAGE',
    `store location ${JSON.stringify(location)} looks like a URL but names no supported scheme (${supported}); for a directory of that name write ./${location}`,
  );
}
