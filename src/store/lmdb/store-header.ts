import { SeenStoreError } from '../../errors.js';
import { FORMAT_VERSION } from '../records.js';
import type { StoreEnv } from './env.js';
import { readStoreHeader, type StoreHeader } from './records.js';

/** Key of the store header in the meta DB. */
export const STORE_HEADER_KEY = 'store';

/**
 * The store header of a newly opened environment: read and checked for this seenstore's format
 * (any format with `anyFormat`, for migrate), or written into an environment nothing was stored in
 * yet. An environment with data but no header is STORE_CORRUPT.
 */
export function initStoreHeader(env: StoreEnv, anyFormat: boolean): StoreHeader {
  const existing = env.getMeta(STORE_HEADER_KEY);
  if (existing !== undefined) return anyFormat ? readStoreHeader(existing) : checkedStoreHeader(existing);
  const hasData = env.root.getKeysCount({ limit: 8 }) > 3 || env.metaDb.getKeysCount({ limit: 1 }) > 0;
  if (hasData)
    throw new SeenStoreError('STORE_CORRUPT', `${env.dir} holds an LMDB environment without a seenstore header`);
  if (env.readOnly)
    throw new SeenStoreError(
      'NOT_FOUND',
      `no seenstore store at ${env.dir} (an LMDB environment nothing was stored in)`,
    );
  const created: StoreHeader = { v: 1, formatVersion: FORMAT_VERSION, createdAtMs: Date.now() };
  return env.write(() => {
    const raced = env.getMeta(STORE_HEADER_KEY);
    if (raced !== undefined) return checkedStoreHeader(raced);
    env.putMeta(STORE_HEADER_KEY, created);
    return created;
  });
}

function checkedStoreHeader(value: unknown): StoreHeader {
  const header = readStoreHeader(value);
  if (header.formatVersion !== FORMAT_VERSION) {
    const hint =
      header.formatVersion < FORMAT_VERSION ? ' (run `seenstore migrate`)' : ' (written by a newer seenstore)';
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `store format ${header.formatVersion} is not supported by this version (format ${FORMAT_VERSION})${hint}`,
    );
  }
  return header;
}
