import type { UrlStatus } from './backend.js';

/**
 * A frontier entry's state at `nowMs`, and the time that state names, as every driver reports it
 * (urlStatus, the listing of entries): `leased` while its lease runs (atMs: when the lease ends),
 * else `scheduled` while its due time is ahead, else `waiting` (atMs: its due time).
 */
export function entryState(
  leaseUntilMs: number,
  dueMs: number,
  nowMs: number,
): { readonly state: UrlStatus['state']; readonly atMs: number } {
  if (leaseUntilMs > nowMs) return { state: 'leased', atMs: leaseUntilMs };
  return { state: dueMs > nowMs ? 'scheduled' : 'waiting', atMs: dueMs };
}
