import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ERROR_CODES } from '../src/index.js';
import { runCli } from './helpers/cli.js';

/** Mounts a fresh 8 MiB ext4 file system (needs root and mkfs.ext4); undefined when it cannot. */
function mountSmallExt4(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  // Not tempDir(): the file system must be unmounted before its directory is removed.
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-full-'));
  let mounted = false;
  after(() => {
    if (mounted) execFileSync('umount', [mountPoint], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  });
  const image = join(dir, 'fs.img');
  const mountPoint = join(dir, 'mnt');
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${image}`, 'bs=1M', 'count=8'], { stdio: 'ignore' });
    execFileSync('mkfs.ext4', ['-q', image], { stdio: 'ignore' });
    mkdirSync(mountPoint);
    execFileSync('mount', ['-o', 'loop', image, mountPoint], { stdio: 'ignore' });
    mounted = true;
  } catch {
    return undefined;
  }
  return mountPoint;
}

describe('a full disk', () => {
  test("LMDB's own raw line cannot be held back, but seenstore's error line stands on a line of its own", async (t) => {
    const mountPoint = mountSmallExt4();
    if (mountPoint === undefined) {
      t.skip('needs root, mkfs.ext4 and loop mounts');
      return;
    }
    const store = join(mountPoint, 'store');
    assert.equal((await runCli(['add', '--store', store], 'https://a.example/\n')).code, 0);
    // Fill the file system to the last block, so that LMDB's next page write finds no byte free.
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${join(mountPoint, 'filler')}`, 'bs=4k'], { stdio: 'ignore' });
    } catch {
      // dd stops with ENOSPC: that is the point.
    }
    const urls = Array.from({ length: 50_000 }, (_, i) => `https://full.example/${i}\n`).join('');
    const out = await runCli(['add', '--store', store, '--scope', 'big', '--capacity', '5000000'], urls);
    assert.equal(out.code, ERROR_CODES.STORE_FULL, out.stderr);
    const lines = out.stderr.split('\n').filter(Boolean);
    assert.match(lines.at(-1)!, /^seenstore: error STORE_FULL: /, out.stderr);
    for (const line of lines.slice(0, -1)) assert.match(line, /^(Write error: .*|read .*)$/, `only LMDB's line may precede: ${JSON.stringify(out.stderr)}`);
  });
});
