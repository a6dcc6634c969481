import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { DiskUsage } from '../backend.js';
import type { StoreEnv } from './env.js';

/** lmdb-js's statistics of a database (mdb_stat), with the environment's (mdb_env_info) on the root. */
interface TreeStats {
  readonly pageSize: number;
  readonly treeBranchPageCount: number;
  readonly treeLeafPageCount: number;
  readonly overflowPages: number;
}

interface RootStats extends TreeStats {
  readonly mapSize: number;
  readonly lastPageNumber: number;
  readonly free: TreeStats;
}

function treePages(stats: TreeStats): number {
  return stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
}

/** LMDB's two meta pages, at the start of every data file. */
const META_PAGES = 2;

/** What the store's file holds, from LMDB's own statistics (one read transaction, nothing written). */
export function diskUsage(env: StoreEnv): DiskUsage {
  const root = env.root.getStats() as RootStats;
  const named = [
    env.metaDb,
    env.chunksDb,
    env.journalDb,
    ...(env.frontierDb === undefined ? [] : [env.frontierDb]),
  ].map((db) => treePages(db.getStats() as TreeStats));
  const heldPages = META_PAGES + treePages(root) + treePages(root.free) + named.reduce((sum, pages) => sum + pages, 0);
  const usedPages = root.lastPageNumber + 1;
  return {
    fileBytes: statSync(join(env.dir, 'data.mdb')).size,
    usedBytes: usedPages * root.pageSize,
    mapSizeBytes: root.mapSize,
    reclaimableBytes: Math.max(0, usedPages - heldPages) * root.pageSize,
    pageBytes: root.pageSize,
  };
}
