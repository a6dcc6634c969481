import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import { walkPages, type PageDamage, type PageWalkReport } from './page-walk.js';
import { recordSoundWalk, walkedSound } from './walk-record.js';

/** Snapshots live in the store directory, one folder each: `snapshots/NAME/{data.mdb,snapshot.json}`. */
export const SNAPSHOTS_DIR = 'snapshots';

/**
 * Files and directories that only a store that was opened (lock.mdb), written to (journal.log) or
 * used (locks/, snapshots/) has, each of its kind (/proc has a file named `locks`). A store is
 * created with its data file whole before any of them (create.ts).
 */
const STORE_TRACES = [
  { name: 'lock.mdb', directory: false },
  { name: 'journal.log', directory: false },
  { name: 'locks', directory: true },
  { name: SNAPSHOTS_DIR, directory: true },
] as const;
/** Walks repeated while writers keep moving the newest snapshot (see PageWalkReport.snapshotMoved). */
const WALK_ATTEMPTS = 5;

/**
 * Refuses (STORE_CORRUPT) a store whose data file is empty, or missing while the store's other
 * files exist: lost data, which LMDB would take for a new store. A missing directory or data file
 * of a store that never existed passes: the caller creates it or answers NOT_FOUND.
 */
export function refuseLostDataFile(dir: string): void {
  const path = join(dir, 'data.mdb');
  if (isDirectory(dir) && dataBytes(path) === 0) refuseLostData(dir, path);
}

/**
 * Checks a store's data file before lmdb-js maps it: lmdb-js follows LMDB's pages through its map,
 * so a page cut off the file's end stops the process with SIGBUS and a damaged page pointer with
 * SIGSEGV. Refuses (STORE_CORRUPT, with the place) a data file whose page structure is damaged or
 * cut short (page-walk.ts). Call holding the store's open guard, so that no commit moves the pages
 * (the meta pages above all) while they are read; an empty or missing file passes (see
 * refuseLostDataFile). A data file unchanged since a walk found it sound is not walked again
 * (walk-record.ts).
 */
export function checkDataFile(dir: string): void {
  const path = join(dir, 'data.mdb');
  if (!isDirectory(dir) || dataBytes(path) === 0) return;
  const before = statSync(path, { bigint: true });
  if (walkedSound(path, before)) return;
  const report = stableWalk(path, 1);
  const first = report?.damage[0];
  if (first !== undefined) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${path} is damaged: ${describeDamage(first)} (\`seenstore verify\` lists every damaged place; \`seenstore salvage --to NEWDIR\` copies everything readable into a new store; \`seenstore snapshot restore NAME\` returns the store to a snapshot and keeps this file as a snapshot)`,
    );
  }
  if (report !== undefined) recordSoundWalk(before, statSync(path, { bigint: true }), report);
}

/**
 * The page walk of `path`, repeated while writers moved the snapshot under it and it found damage;
 * undefined when every attempt was overtaken (the file then cannot be judged without LMDB's reader
 * lock, and a file that writers keep committing to is not cut short).
 */
export function stableWalk(path: string, maxDamage: number): PageWalkReport | undefined {
  for (let attempt = 0; attempt < WALK_ATTEMPTS; attempt++) {
    let report: PageWalkReport;
    try {
      report = walkPages(path, { maxDamage });
    } catch (error) {
      throw asStoreError(error, `reading ${path}`);
    }
    if (report.damage.length === 0 || !report.snapshotMoved) return report;
  }
  return undefined;
}

/** One line for a finding: where (page, database) and what. */
export function describeDamage(damage: PageDamage): string {
  // Findings about the file as a whole (meta pages, its size) name their place themselves.
  if (damage.db === 'file') return damage.problem;
  return damage.page < 0
    ? `database ${damage.db}: ${damage.problem}`
    : `page ${damage.page} (database ${damage.db}) ${damage.problem}`;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** Size of the data file; 0 when it does not exist. */
function dataBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return 0;
    throw asStoreError(error, `reading ${path}`);
  }
}

function isKind(path: string, directory: boolean): boolean {
  try {
    const stats = statSync(path);
    return directory ? stats.isDirectory() : stats.isFile();
  } catch {
    return false;
  }
}

/** The names of STORE_TRACES that `dir` holds. */
export function storeTraces(dir: string): string[] {
  return STORE_TRACES.filter((trace) => isKind(join(dir, trace.name), trace.directory)).map((trace) => trace.name);
}

/**
 * A store's data file appears under its name only whole (create.ts stages it and links it into
 * place), so an empty one is lost data, and so is a missing one beside the store's other files:
 * never a store being created, refused rather than recreated. (A store that an earlier seenstore
 * created in place, killed while it did, is refused the same way.)
 */
function refuseLostData(dir: string, path: string): void {
  const traces = storeTraces(dir);
  const present = existsSync(path);
  if (!present && traces.length === 0) return;
  const beside = traces.length === 0 ? '' : ` while the store's ${traces.join(', ')} exist`;
  throw new SeenStoreError(
    'STORE_CORRUPT',
    `${path} ${present ? 'is empty' : 'is missing'}${beside}: its data is lost, not a new store (restore a snapshot, or delete ${dir} to start afresh)`,
  );
}
