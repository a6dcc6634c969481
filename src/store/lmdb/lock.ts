import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { asStoreError } from '../../errors.js';

/** Held while a restore or a migration runs; SeenStore.open refuses while it is held. */
export const EXCLUSIVE_LOCK = 'exclusive';

/**
 * proper-lockfile and the modules it loads (graceful-fs, retry, signal-exit: 19 files) are
 * loaded when a lock is first taken or found: a command that only reads never takes one.
 */
async function lockfile(): Promise<typeof import('proper-lockfile')> {
  return (await import('proper-lockfile')).default;
}

/**
 * A proper-lockfile lock is a directory whose mtime its holder refreshes every fifth of the staleness.
 * Another process may take it over once it is `LOCK_STALE_MS` old, so a killed holder blocks the
 * lock for at most that long plus one second: when proper-lockfile takes a lock it probes the file
 * system's mtime precision by stamping the lock up to a second into the future, and a holder killed
 * before its first refresh leaves that stamp (measured by the soak). A holder whose event loop
 * stalls longer than the staleness loses the lock silently; the fencing token in the store (see
 * checkpoint) stops such a holder from writing.
 */
export const LOCK_STALE_MS = 10_000;
/** proper-lockfile refuses a staleness below 2 s. */
export const LOCK_STALE_MS_MIN = 2_000;

export interface HeldLock {
  /** False once proper-lockfile reports that the lock was lost (stale, taken over, removed). */
  readonly held: () => boolean;
  readonly release: () => Promise<void>;
}

/** Takes the named lock of the store without waiting; undefined when another process holds it. */
export async function tryLock(storeDir: string, name: string, staleMs: number): Promise<HeldLock | undefined> {
  const dir = join(storeDir, 'locks');
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw asStoreError(error, `creating the lock directory ${dir}`);
  }
  let compromised = false;
  let release: () => Promise<void>;
  try {
    release = await (await lockfile()).lock(join(dir, name), {
      realpath: false,
      stale: staleMs,
      update: Math.floor(staleMs / 5),
      retries: 0,
      onCompromised: () => {
        compromised = true;
      },
    });
  } catch (error) {
    if ((error as { code?: string }).code === 'ELOCKED') return undefined;
    throw asStoreError(error, `taking the lock ${name}`);
  }
  return {
    held: () => !compromised,
    release: async () => {
      if (compromised) return;
      await release().catch(() => undefined);
    },
  };
}

/** Whether another process holds the named lock now (a stale lock counts as free). */
export async function isLocked(storeDir: string, name: string, staleMs: number): Promise<boolean> {
  const path = join(storeDir, 'locks', name);
  // proper-lockfile's lock is the directory `${path}.lock` (its documented default lockfilePath):
  // without it nobody holds the lock, and proper-lockfile need not be loaded to say so.
  if (!existsSync(`${path}.lock`)) return false;
  try {
    return await (await lockfile()).check(path, { realpath: false, stale: staleMs });
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return false;
    throw asStoreError(error, `checking the lock ${name}`);
  }
}

/** The staleness a store uses: the option, else LOCK_STALE_MS, never below LOCK_STALE_MS_MIN. */
export function effectiveLockStaleMs(lockStaleMs: number | undefined): number {
  return Math.max(LOCK_STALE_MS_MIN, lockStaleMs ?? LOCK_STALE_MS);
}
