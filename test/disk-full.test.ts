import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ERROR_CODES } from '../src/index.js';
import { runCli } from './helpers/cli.js';

/** Mounts a fresh 8 MiB ext4 file system, or a 1 MiB tmpfs (needs root and, for ext4, mkfs.ext4); undefined when it cannot. */
function mountSmall(kind: 'ext4' | 'tmpfs'): string | undefined {
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
    mkdirSync(mountPoint);
    if (kind === 'tmpfs')
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint], { stdio: 'ignore' });
    else {
      execFileSync('dd', ['if=/dev/zero', `of=${image}`, 'bs=1M', 'count=8'], { stdio: 'ignore' });
      execFileSync('mkfs.ext4', ['-q', image], { stdio: 'ignore' });
      execFileSync('mount', ['-o', 'loop', image, mountPoint], { stdio: 'ignore' });
    }
    mounted = true;
  } catch {
    return undefined;
  }
  return mountPoint;
}

describe('a full disk', () => {
  test("LMDB's own raw line cannot be held back, but seenstore's error line stands on a line of its own", async (t) => {
    const mountPoint = mountSmall('ext4');
    if (mountPoint === undefined) {
      t.skip('needs root, mkfs.ext4 and loop mounts');
      return;
    }
    const store = join(mountPoint, 'store');
    assert.equal((await runCli(['add', '--store', store], 'https://a.example/\n')).code, 0);
    // Fill the file system to the last block, so that LMDB's next page write finds no byte free.
    fill(mountPoint);
    const urls = Array.from({ length: 50_000 }, (_, i) => `https://full.example/${i}\n`).join('');
    const out = await runCli(['add', '--store', store, '--scope', 'big', '--capacity', '5000000'], urls);
    assert.equal(out.code, ERROR_CODES.STORE_FULL, out.stderr);
    const lines = out.stderr.split('\n').filter(Boolean);
    assert.match(lines.at(-1)!, /^seenstore: error STORE_FULL: /, out.stderr);
    for (const line of lines.slice(0, -1))
      assert.match(line, /^(Write error: .*|read .*)$/, `only LMDB's line may precede: ${JSON.stringify(out.stderr)}`);
  });

  test('filter-new on a full disk: a run whose work is committed exits 0 with a warning; a batch that cannot be kept is not recorded', async (t) => {
    const mountPoint = mountSmall('ext4');
    if (mountPoint === undefined) {
      t.skip('needs root, mkfs.ext4 and loop mounts');
      return;
    }
    const store = join(mountPoint, 'store');
    assert.equal((await runCli(['filter-new', '--store', store], 'https://a.example/\n')).code, 0);
    fill(mountPoint);
    // Nothing new: the journal takes the batch in the room it keeps ahead; only the checkpoint at close finds no room.
    const seen = await runCli(['filter-new', '--store', store], 'https://a.example/\n');
    assert.equal(seen.code, 0, seen.stderr);
    assert.match(seen.stderr, /warning: the checkpoint of default\/1 at close was not written, the disk is full/);
    // New URLs: their batch cannot be kept as undelivered, so it is refused before it is recorded.
    const fresh = Array.from({ length: 50 }, (_, i) => `https://new.example/${i}`);
    const refused = await runCli(['filter-new', '--store', store], `${fresh.join('\n')}\n`);
    assert.equal(refused.code, ERROR_CODES.STORE_FULL, refused.stderr);
    assert.equal(refused.stdout, '');
    rmSync(join(mountPoint, 'filler'));
    const later = await runCli(['filter-new', '--store', store], `${fresh.join('\n')}\n`);
    assert.equal(later.code, 0, later.stderr);
    assert.deepEqual(later.stdout.split('\n').filter(Boolean), fresh, 'the refused batch was recorded after all');
  });

  test("a new store on a full tmpfs is STORE_FULL, not a SIGBUS in LMDB's lock file", async (t) => {
    const mountPoint = mountSmall('tmpfs');
    if (mountPoint === undefined) {
      t.skip('needs root and tmpfs mounts');
      return;
    }
    const store = join(mountPoint, 'store');
    mkdirSync(store);
    fill(mountPoint);
    const out = await runCli(['add', '--store', store], 'https://a.example/\n');
    assert.equal(out.signal, null, `killed by ${out.signal}`);
    assert.equal(out.code, ERROR_CODES.STORE_FULL, out.stderr);
  });
});

function fill(mountPoint: string): void {
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${join(mountPoint, 'filler')}`, 'bs=1k'], { stdio: 'ignore' });
  } catch {
    // dd stops with ENOSPC: that is the point.
  }
}
