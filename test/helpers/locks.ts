import { existsSync, readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Makes the locks a killed process left in the store at `storeDir` stale at once: proper-lockfile
 * judges a lock by its directory's mtime, so setting that an hour back is what waiting
 * lockStaleMs (plus the second it may stamp ahead) would do, without the wait. Returns how many
 * locks it aged, so a test can require that there was one.
 */
export function ageLocks(storeDir: string): number {
  const dir = join(storeDir, 'locks');
  if (!existsSync(dir)) return 0;
  const anHourAgo = new Date(Date.now() - 3_600_000);
  const locks = readdirSync(dir).filter((name) => name.endsWith('.lock'));
  for (const name of locks) utimesSync(join(dir, name), anHourAgo, anHourAgo);
  return locks.length;
}
