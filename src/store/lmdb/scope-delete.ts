import type { DeletedScope } from '../backend.js';
import { readEpochHeader } from '../records.js';
import type { StoreEnv } from './env.js';
import { readState } from './frontier-records.js';
import { checkpointKey, dropKey, epochKey, fenceKey, scopeKey } from './keys.js';
import { KeyWriter, frontierPrefix, scopeNumberKey, scopeRange } from './frontier-keys.js';
import { epochNumbers, finishDrops, readScope } from './metadata.js';

/**
 * Deletes a scope. One write transaction removes the scope record, its frontier (every queue,
 * owner and setting) and every epoch header, each epoch leaving a drop marker: from its commit
 * the scope is gone for every reader and writer at once (an add to it fails EPOCH_SEALED). The
 * epochs' data is then deleted in bounded transactions, as a prune does; a crash in between
 * leaves only drop markers, which the next creation of the same name finishes first
 * (createScope below), since a re-created scope numbers its epochs from 1 again.
 */
export function deleteScope(env: StoreEnv, scope: string): DeletedScope | undefined {
  env.refresh();
  const deleted = env.write(() => {
    if (readScope(env, scope) === undefined) return undefined;
    const epochs = epochNumbers(env, scope);
    for (const epoch of epochs) {
      env.putMeta(dropKey(scope, epoch), { v: 1, header: readEpochHeader(env.getMeta(epochKey(scope, epoch))) });
      env.removeMeta(epochKey(scope, epoch));
      env.removeMeta(checkpointKey(scope, epoch));
    }
    env.removeMeta(scopeKey(scope));
    env.removeMeta(fenceKey(scope));
    return { epochs: epochs.length, queuedUrls: deleteFrontier(env, scope) };
  });
  finishDrops(env, scope);
  return deleted;
}

/** Inside a write transaction: every frontier key of the scope; how many URLs it held. */
function deleteFrontier(env: StoreEnv, scope: string): number {
  const db = env.frontierDb;
  if (db === undefined) return 0;
  const prefix = frontierPrefix(db, scope, false);
  if (prefix === undefined) return 0;
  const held = readState(env, db.getBinary(new KeyWriter(prefix).state()), scope).entries;
  for (const key of [...db.getKeys(scopeRange(prefix))]) db.removeSync(key);
  db.removeSync(scopeNumberKey(scope));
  return held;
}
