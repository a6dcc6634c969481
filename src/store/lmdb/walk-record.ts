import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  writeFileSync,
  type BigIntStats,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { newestTxnId } from './meta-pages.js';
import type { PageWalkReport } from './page-walk.js';

/**
 * Records of data files that a page walk found sound: an open skips the walk (a read of every
 * page the store uses: 35 ms warm, over a second from a cold page cache, for a 1.3 GB store) when
 * the data file is still that file, unchanged. One small file per data file, named by its device
 * and inode, in the user's cache directory (walkRecordDir): never in the store directory, which a
 * read-only open leaves as it found it.
 *
 * "Unchanged" is the file's identity and its change times as the kernel keeps them (device, inode,
 * size, mtime, ctime, in nanoseconds) plus the newest meta page's transaction id: every write
 * through the file system changes the ctime (which no user tool can set back), every commit the
 * transaction id, a copy or a restore the inode. A walk is recorded only for a file whose last
 * change is older than RECORD_AFTER_CHANGE_NS, so that a change right after the record, within
 * the same tick of the kernel's coarse clock, cannot carry the recorded times.
 */
const WALK_RECORD_VERSION = 1;
const RECORD_AFTER_CHANGE_NS = 1_000_000_000n;

interface WalkRecord {
  readonly v: number;
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
  readonly pageBytes: number;
  readonly txnId: string;
}

function identity(stats: BigIntStats): Omit<WalkRecord, 'v' | 'pageBytes' | 'txnId'> {
  return {
    dev: String(stats.dev),
    ino: String(stats.ino),
    size: String(stats.size),
    mtimeNs: String(stats.mtimeNs),
    ctimeNs: String(stats.ctimeNs),
  };
}

/** $XDG_CACHE_HOME/seenstore/page-walks, else ~/.cache/seenstore/page-walks. */
export function walkRecordDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'seenstore', 'page-walks');
}

function recordFile(stats: BigIntStats): string {
  return join(walkRecordDir(), `${stats.dev}-${stats.ino}.json`);
}

/** True when the data file at `path` (stat `stats`) is the one a recorded sound walk read. */
export function walkedSound(path: string, stats: BigIntStats): boolean {
  let record: WalkRecord;
  try {
    record = JSON.parse(readFileSync(recordFile(stats), 'utf8')) as WalkRecord;
  } catch {
    return false;
  }
  if (record?.v !== WALK_RECORD_VERSION || !Number.isInteger(record.pageBytes)) return false;
  const now = identity(stats);
  if (
    now.dev !== record.dev ||
    now.ino !== record.ino ||
    now.size !== record.size ||
    now.mtimeNs !== record.mtimeNs ||
    now.ctimeNs !== record.ctimeNs
  )
    return false;
  return String(newestTxnIdOf(path, record.pageBytes)) === record.txnId;
}

/**
 * Records a walk that found no damage, of the data file whose stat was `before` it and still is
 * (nothing changed during the walk). Best effort: without a writable cache directory, every open
 * walks.
 */
export function recordSoundWalk(
  before: BigIntStats,
  after: BigIntStats,
  report: PageWalkReport,
  nowMs = Date.now(),
): void {
  const unchanged = JSON.stringify(identity(before)) === JSON.stringify(identity(after));
  const settled = BigInt(nowMs) * 1_000_000n - after.ctimeNs > RECORD_AFTER_CHANGE_NS;
  if (!unchanged || !settled || report.damage.length > 0 || report.snapshotMoved) return;
  const record: WalkRecord = {
    v: WALK_RECORD_VERSION,
    ...identity(after),
    pageBytes: report.pageBytes,
    txnId: String(report.txnId),
  };
  const file = recordFile(after);
  const temporary = `${file}.tmp-${process.pid}`;
  try {
    mkdirSync(walkRecordDir(), { recursive: true });
    writeFileSync(temporary, `${JSON.stringify(record)}\n`);
    renameSync(temporary, file);
  } catch {
    // Not recorded: the next open walks again.
  }
}

/** The newest transaction id of the two meta pages (0 when they cannot be read). */
function newestTxnIdOf(path: string, pageBytes: number): bigint {
  const fd = openSync(path, 'r');
  try {
    return newestTxnId({ read: (buffer, position) => readSync(fd, buffer, 0, buffer.length, position) }, pageBytes);
  } finally {
    closeSync(fd);
  }
}
