import { assert } from '../errors.js';
import type { Backend } from './backend.js';
import { registered, type Driver, type OpenOptions, type StoreSettings } from './driver.js';
import { lmdbDriver } from './lmdb/driver.js';
import { memoryDriver } from './memory/driver.js';
import { redisDriver } from './redis/driver.js';
import { checkLocation } from './location.js';

/**
 * The registry of drivers: the one place that lists the backends. A location `SCHEME://...` goes
 * to the driver that declares SCHEME; a location without a scheme is a directory. Adding a backend
 * is a driver folder plus one line here (docs/architecture.md "Writing a driver").
 */
const DRIVERS: readonly Driver<unknown>[] = [registered(lmdbDriver), registered(redisDriver), registered(memoryDriver)];

/** `SCHEME://`: what makes a location a URL rather than a path (a scheme is at least two characters, so `C://` stays a path). */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]+):\/\//;

/** The location schemes a store may name (`redis`, `rediss`, ...), lower case: what an unknown-scheme message lists. */
export function supportedSchemes(): string[] {
  return DRIVERS.flatMap((driver) => driver.schemes);
}

/** The scheme of a URL-looking location, lower case; undefined for a path. */
export function locationScheme(location: string): string | undefined {
  return SCHEME.exec(location)?.[1]?.toLowerCase();
}

/**
 * The driver a location names. USAGE for a URL whose scheme no driver serves: `postgres://x` is
 * refused, never taken for a directory named `postgres:`; so is a location that only looks like a
 * URL (`redis:/host`, `redis//host`: store/location.ts).
 */
export function driverFor(location: string): Driver<unknown> {
  checkLocation(location, supportedSchemes());
  const scheme = locationScheme(location);
  const driver = DRIVERS.find((d) => (scheme === undefined ? d.schemes.length === 0 : d.schemes.includes(scheme)));
  assert(driver !== undefined, `a checked location ${scheme ?? 'without a scheme'} has a driver`);
  return driver;
}

/**
 * Opens the backend a location names, with the settings that driver takes from `settings`. Each
 * backend's module is loaded only when a store of its kind is opened, so neither LMDB's native
 * addon nor a Redis client costs start-up otherwise.
 */
export async function openBackend(location: string, common: OpenOptions, settings: StoreSettings): Promise<Backend> {
  const driver = driverFor(location);
  return driver.open(location, common, driver.parseOptions(settings));
}

/** A location fit for messages: a password in a URL is never printed. */
export function redactLocation(location: string): string {
  const scheme = locationScheme(location);
  const driver = DRIVERS.find((d) => scheme !== undefined && d.schemes.includes(scheme));
  return driver === undefined ? location : driver.redact(location);
}
