import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import type { Backend } from './backend.js';
import { checkLocation, locationScheme } from './location.js';

/** What opening a store needs, whichever backend it is (each takes what applies to it). */
export interface BackendOptions {
  readonly hash: XxHash;
  readonly create: boolean;
  readonly readOnly: boolean;
  readonly threads: number;
  readonly mapSizeBytes?: number;
  readonly lockStaleMs?: number;
  readonly checkpointJournalBytes: number;
  readonly checkpointIntervalMs: number;
  readonly warn: (message: string) => void;
  /** Redis: replicas that must confirm a write (WAIT) before it is acknowledged; default 0. */
  readonly waitReplicas?: number;
  /** Redis: how long calls retry through failovers before STORE_UNAVAILABLE; default 30 s. */
  readonly unavailableAfterMs?: number;
}

/** A store location that names a Redis server rather than a directory. */
export function isRedisLocation(location: string): boolean {
  return locationScheme(location) !== undefined;
}

/**
 * Opens the backend a location names: `redis://` / `rediss://` a Redis server or cluster, anything
 * else a directory for the LMDB backend. Each backend's module is loaded only when a store of its
 * kind is opened, so neither LMDB's native addon nor a Redis client costs start-up otherwise.
 */
export async function openBackend(location: string, options: BackendOptions): Promise<Backend> {
  checkLocation(location);
  if (isRedisLocation(location)) {
    const { RedisBackend } = await import('./redis/backend.js');
    return RedisBackend.open(location, redactLocation(location), options);
  }
  const { LmdbBackend } = await import('./lmdb/backend.js');
  return LmdbBackend.open(location, options);
}

/** The operations on a closed store (migrate, restore, verify of a damaged store): the LMDB backend's alone. */
export async function offlineOperations(location: string, doing: string): Promise<typeof import('./lmdb/offline.js')> {
  if (isRedisLocation(location)) {
    throw new SeenStoreError('UNSUPPORTED', `cannot ${doing} ${redactLocation(location)}: only a directory store (the LMDB backend) has it`);
  }
  return import('./lmdb/offline.js');
}

/** A location fit for messages: a password in a URL is never printed. */
export function redactLocation(location: string): string {
  return location.replace(/^(rediss?:\/\/)([^@/]*@)/i, '$1***@');
}
