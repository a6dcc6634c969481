import { SeenStoreError } from '../errors.js';

/**
 * A frontier id of a backend that numbers its entries, as take gave it: a whole number >= 1 in
 * decimal; USAGE for anything else.
 */
export function parseFrontierId(id: string): number {
  const n = typeof id === 'string' && /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : NaN;
  if (!Number.isSafeInteger(n)) throw SeenStoreError.notFrontierId(id);
  return n;
}
