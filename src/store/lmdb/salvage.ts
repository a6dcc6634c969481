import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { SeenStoreError, asStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import { fsyncPath } from '../file-open.js';
import { removeDeadEntries } from '../leftovers.js';
import { StoreEnv } from './env.js';
import type { SalvageReport, SalvageSkip } from '../backend.js';
import { readSalvage } from './salvage-read.js';
import { writeSalvage, type SalvageCounts } from './salvage-write.js';
import { DELIVERY_DIR, DeliveryFile, listDeliveryFiles, readDeliveryFile } from './delivery-files.js';

/** A salvage under way, beside its target: `.seenstore-salvage-PID-N`. */
const STAGING_PREFIX = '.seenstore-salvage-';
const STAGING_LEFTOVER = /^\.seenstore-salvage-(\d+)-\d+$/;
let stagings = 0;

/**
 * Copies everything readable of the store at `dir` into a new store at `to` (a path that does not
 * exist, or an empty directory) without opening `dir` with LMDB: its pages are read with
 * positional reads and checked as the page walk checks them (a store open refuses as damaged is
 * salvaged just the same), and its journal file's readable frames are folded in. The new store is
 * written through the store's own record writers in a staging directory beside `to` and renamed
 * into place once whole: a salvage that fails or is killed leaves no store at `to`.
 *
 * `dir` is only read. Run it while no process writes to `dir` (a commit during the read may leave
 * the copy a mix of two commits).
 */
export async function salvageStore(
  dir: string,
  to: string,
  hash: XxHash,
  mapSizeBytes: number,
): Promise<SalvageReport> {
  if (!existsSync(join(dir, 'data.mdb')))
    throw new SeenStoreError('NOT_FOUND', `${dir} holds no data.mdb: there is nothing to salvage`);
  if (resolve(dir) === resolve(to))
    throw new SeenStoreError('USAGE', 'salvage --to must name a new directory, not the damaged store');
  refuseTarget(to);
  const found = readSalvage(dir, hash);
  const skipped = [...found.skipped];
  const notes = [...found.notes];
  const parent = dirname(resolve(to));
  try {
    mkdirSync(parent, { recursive: true });
  } catch (error) {
    throw asStoreError(error, `creating the directory ${parent} for ${to}`);
  }
  removeDeadEntries(parent, STAGING_LEFTOVER);
  const staging = join(parent, `${STAGING_PREFIX}${process.pid}-${stagings++}`);
  try {
    const env = StoreEnv.open(staging, { create: true, mapSizeBytes });
    let counts: SalvageCounts;
    try {
      counts = {
        ...writeSalvage(env, hash, found, skipped, notes),
        deliveryRecords: copyDeliveryFiles(dir, staging, skipped),
      };
      await env.syncData();
    } finally {
      await env.close();
    }
    refuseTarget(to);
    try {
      renameSync(staging, to);
    } catch (error) {
      throw asStoreError(error, `moving the salvaged store into ${to}`);
    }
    fsyncPath(parent);
    return { from: dir, to, complete: skipped.length === 0, pagesRead: found.pagesRead, ...counts, skipped, notes };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** `to` must not exist, or be an empty directory (rename replaces it whole). */
function refuseTarget(to: string): void {
  let empty: boolean;
  try {
    empty = statSync(to).isDirectory() && readdirSync(to).length === 0;
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return;
    throw asStoreError(error, `checking ${to}`);
  }
  if (!empty)
    throw new SeenStoreError(
      'USAGE',
      `salvage --to ${basename(to)}: ${to} exists and is not an empty directory; name a new one`,
    );
}

/**
 * The undelivered batches of every run's delivery file (delivery-files.ts), rewritten into the
 * copy's own files of the same names; a file cut short keeps its batches before the cut.
 */
function copyDeliveryFiles(dir: string, staging: string, skipped: SalvageSkip[]): number {
  let batches = 0;
  for (const { name } of listDeliveryFiles(dir)) {
    const path = join(dir, DELIVERY_DIR, name);
    let read: ReturnType<typeof readDeliveryFile>;
    try {
      read = readDeliveryFile(path);
    } catch (error) {
      skipped.push({ kind: 'delivery', where: path, problem: (error as Error).message });
      continue;
    }
    if (read.cut)
      skipped.push({ kind: 'delivery', where: path, problem: 'cut short: the batches after the cut are lost' });
    const copy = new DeliveryFile(join(staging, DELIVERY_DIR, name));
    try {
      for (const batch of read.batches) copy.append([], batch);
    } finally {
      copy.close();
    }
    batches += read.batches.length;
  }
  return batches;
}
