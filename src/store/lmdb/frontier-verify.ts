import { SeenStoreError } from '../../errors.js';
import type { StoreEnv } from './env.js';
import { readEntry, readOwner, readQueue, readState } from './frontier-records.js';

const isId = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 1;
const isTime = (n: unknown): boolean => typeof n === 'number' && Number.isFinite(n);
const isText = (s: unknown): boolean => typeof s === 'string';

/** The shape of each frontier key after [scope, tag] (docs/format.md). */
const KEY_SHAPES: Readonly<Record<string, readonly ((part: unknown) => boolean)[]>> = {
  s: [],
  e: [isId],
  q: [isText],
  n: [isText],
  w: [isText, isTime, isId],
  r: [isTime, isTime, isText],
  l: [isTime, isId],
  u: [isTime, isId],
  o: [isText],
};

/** Every frontier record that does not read back (for verify): each with its place and the error. */
export function verifyFrontier(env: StoreEnv): { where: string; error: unknown }[] {
  const db = env.frontierDb;
  if (db === undefined) return [];
  const found: { where: string; error: unknown }[] = [];
  for (const { key, value } of db.getRange({})) {
    const where = `frontier ${JSON.stringify(key)}`;
    try {
      checkRecord(env, key as unknown, value);
    } catch (error) {
      found.push({ where, error });
    }
  }
  return found;
}

function checkRecord(env: StoreEnv, key: unknown, value: Uint8Array): void {
  const parts = Array.isArray(key) ? (key as unknown[]) : [];
  const [scope, tag, ...rest] = parts;
  const shape = typeof tag === 'string' ? KEY_SHAPES[tag] : undefined;
  if (typeof scope !== 'string' || shape === undefined || rest.length !== shape.length || !shape.every((check, i) => check(rest[i]))) {
    throw new SeenStoreError('STORE_CORRUPT', 'not a frontier key');
  }
  if (tag === 's') readState(env, value, scope);
  else if (tag === 'e') readEntry(env, value, scope, rest[0] as number);
  else if (tag === 'q') readQueue(env, value, scope, rest[0] as string);
  else if (tag === 'o') readOwner(env, value, scope, rest[0] as string);
}
