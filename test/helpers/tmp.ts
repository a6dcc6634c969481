import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/** A fresh temporary directory, removed when the test file finishes. */
export function tempDir(prefix = 'seenstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Page-walk records (src/store/lmdb/walk-record.ts) of the stores a test opens go to a temporary
// cache directory, which the processes it starts inherit: never into the user's ~/.cache.
process.env.XDG_CACHE_HOME = tempDir('seenstore-cache-');
