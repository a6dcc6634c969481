import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/** The directories tempDir made in this test file, removed when it finishes. */
const made: string[] = [];

// Registered once, at import (the root of the test file), not by each tempDir call: node:test
// attaches an after() called inside a test to the test whose async context the call runs in, and
// after awaiting a promise that another, finished test created (a shared pristine store), that is
// the finished test, whose hooks have run: its directories stayed behind (7 per run of
// page-damage.test, 5 of salvage.test, about 14 MB each).
after(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the test file finishes. */
export function tempDir(prefix = 'seenstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

// Page-walk records (src/store/lmdb/walk-record.ts) of the stores a test opens go to a temporary
// cache directory, which the processes it starts inherit: never into the user's ~/.cache.
process.env.XDG_CACHE_HOME = tempDir('seenstore-cache-');
