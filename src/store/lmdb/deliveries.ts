import { SeenStoreError } from '../../errors.js';
import type { Deliveries, DeliveryWrite, UndeliveredBatch, UndeliveredKey } from '../backend.js';
import { ownerGone } from '../owners.js';
import type { StoreEnv } from './env.js';
import { decodeUndelivered, encodeUndelivered } from '../undelivered-record.js';
import { deliveryKey, deliveryKeyParts, deliveryScopeRange } from './keys.js';

/**
 * A scope's undelivered batches in the `delivery` database: `[scope, owner, seq]` → the batch
 * (undelivered-record.ts). Every change is one write transaction (or a part of an add's).
 */
export class LmdbDeliveries implements Deliveries {
  readonly #env: StoreEnv;
  readonly #scope: string;

  constructor(env: StoreEnv, scope: string) {
    this.#env = env;
    this.#scope = scope;
  }

  async orphaned(): Promise<UndeliveredBatch[]> {
    const env = this.#env;
    env.refresh();
    const db = env.deliveryDb;
    if (db === undefined) return [];
    const found: UndeliveredBatch[] = [];
    for (const { key, value } of db.getRange(deliveryScopeRange(this.#scope))) {
      const { owner, seq } = deliveryKeyParts(key);
      if (ownerGone(owner)) found.push({ owner, seq, lines: decodeUndelivered(value, `undelivered batch ${this.#scope}/${owner}/${seq}`) });
    }
    return found;
  }

  async change(remove: readonly UndeliveredKey[], put: readonly UndeliveredBatch[]): Promise<boolean> {
    const env = this.#env;
    const db = put.length > 0 ? env.ensureDeliveryDb() : env.deliveryDb;
    if (db === undefined) return remove.length === 0;
    return env.write(() => {
      for (const { owner, seq } of remove) if (db.get(deliveryKey(this.#scope, owner, seq)) === undefined) return false;
      for (const { owner, seq } of remove) db.removeSync(deliveryKey(this.#scope, owner, seq));
      for (const batch of put) db.putSync(deliveryKey(this.#scope, batch.owner, batch.seq), encodeUndelivered(batch.lines));
      return true;
    }, () => remove.length + put.length > 0);
  }
}

/**
 * Inside an add's write transaction, once its answers are known: keeps the batch's new URLs as
 * undelivered and deletes the owner's batches delivered since (epoch.ts).
 */
export function keepUndelivered(env: StoreEnv, scope: string, deliver: DeliveryWrite, answers: readonly boolean[]): boolean {
  const db = env.deliveryDb;
  if (db === undefined) throw new SeenStoreError('INTERNAL', 'invariant broken: the delivery database exists before an add keeps a batch');
  for (const seq of deliver.delivered) db.removeSync(deliveryKey(scope, deliver.owner, seq));
  const lines = deliver.lines(answers);
  if (lines.length > 0) db.putSync(deliveryKey(scope, deliver.owner, deliver.seq), encodeUndelivered(lines));
  return deliver.delivered.length > 0 || lines.length > 0;
}

