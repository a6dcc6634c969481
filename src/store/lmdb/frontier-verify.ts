import { SeenStoreError } from '../../errors.js';
import type { StoreEnv } from './env.js';
import { KeyReader, readScopeNumber, scopePrefix, scopeRange } from './frontier-keys.js';
import { FrontierLookup } from './frontier-lookup.js';
import { readLocation, readOwner, readQueue, readState } from './frontier-records.js';

/** Each tag's key length after the prefix and tag where the layout fixes it (frontier-keys.ts); undefined: text. */
const KEY_LENGTHS: Readonly<Record<string, number | undefined>> = {
  s: 0,
  k: undefined,
  i: 4,
  n: undefined,
  r: undefined,
  w: 15,
  l: 5,
  x: 11,
  u: 9,
  o: undefined,
};

/**
 * Every frontier record that does not read back (for verify): each with its place and the error.
 * Each scope's records are read by tag: the state, queue and owner records decode, every entry
 * decodes (its queue's key known), and every location names an entry that is there.
 */
export function verifyFrontier(env: StoreEnv): { where: string; error: unknown }[] {
  const db = env.frontierDb;
  if (db === undefined) return [];
  const found: { where: string; error: unknown }[] = [];
  const attempt = (where: string, check: () => void): void => {
    try {
      check();
    } catch (error) {
      found.push({ where, error });
    }
  };
  const scopes: [string, number][] = [];
  for (const { key, value } of db.getRange({ start: Buffer.from([0]), end: Buffer.from([1]) })) {
    const raw = key as Buffer;
    attempt(`frontier ${raw.toString('hex')}`, () => {
      if (raw[1] === 0x6e) scopes.push([raw.toString('utf8', 2), readScopeNumber(value, 'a scope number')]);
      else if (raw[1] !== 0x63 || raw.length !== 2 || value.length !== 4)
        throw new SeenStoreError('STORE_CORRUPT', 'not a frontier key');
    });
  }
  for (const [scope, no] of scopes) {
    const prefix = scopePrefix(no);
    const parts = new KeyReader(prefix.length);
    const lookup = new FrontierLookup(env, db, scope, prefix);
    for (const { key, value } of db.getRange(scopeRange(prefix))) {
      const raw = key as Buffer;
      attempt(`frontier ${scope} ${raw.toString('hex')}`, () => {
        const tag = String.fromCharCode(raw[prefix.length]!);
        const length = KEY_LENGTHS[tag];
        if (!(tag in KEY_LENGTHS) || (length !== undefined && raw.length !== prefix.length + 1 + length))
          throw new SeenStoreError('STORE_CORRUPT', 'not a frontier key');
        if (tag === 's') readState(env, value, scope);
        else if (tag === 'k') readQueue(env, value, scope, parts.text(raw));
        else if (tag === 'o') readOwner(env, value, scope, parts.text(raw));
        else if (tag === 'w') lookup.entriesOf(lookup.blockOf(raw, value));
        else if (tag === 'l') lookup.leased(parts.leased(raw));
        else if (tag === 'u') {
          // The entry it names is there (its value is checked at its own place).
          const { seq } = parts.location(raw);
          const block = readLocation(value, seq, `location ${seq}`);
          if (
            db.getBinary(lookup.keys.leased(seq)) === undefined &&
            db.getBinary(lookup.keys.waiting(block.q, block.dueMs, block.blockSeq)) === undefined
          ) {
            throw new SeenStoreError('STORE_CORRUPT', `location ${seq} names an entry that is not there`);
          }
        }
      });
    }
  }
  return found;
}
