import {
  PAGE_HEADER_BYTES,
  META_OFFSET,
  META_FREE_DB,
  META_MAIN_DB,
  META_LAST_PAGE,
  META_TXNID,
  META_BYTES,
  LMDB_MAGIC,
  LMDB_DATA_VERSION,
  P_META,
  MDB_INTEGERKEY,
  ENV_FLAGS_PERSISTED,
  PAGE_SIZES,
  readTree,
  type Meta,
} from './page-format.js';

/**
 * LMDB's two meta pages, as the page walk (page-walk.ts) reads them. Each check names the lines of
 * mdb.c (lmdb-js 3.5.6: node_modules/lmdb/dependencies/lmdb/libraries/liblmdb) that make it a
 * promise; docs/format.md "What the page walk checks, and why LMDB promises it" has the table.
 */
export interface MetaReads {
  readonly fileBytes: number;
  /** Reads into `buffer` at byte `position`; returns the bytes read (fewer at the file's end). */
  read(buffer: Buffer, position: number): number;
  report(page: number, db: string, problem: string): void;
}

/**
 * The larger transaction id of the two meta pages (0 for one that cannot be read): the newest
 * commit of the data file, read with `read` (the first eight bytes are enough).
 */
export function newestTxnId(io: Pick<MetaReads, 'read'>, pageBytes: number): bigint {
  const id = Buffer.alloc(8);
  let newest = 0n;
  for (const page of [0, 1]) {
    if (io.read(id, page * pageBytes + META_OFFSET + META_TXNID) === 8 && id.readBigUInt64LE(0) > newest)
      newest = id.readBigUInt64LE(0);
  }
  return newest;
}

/**
 * The meta page LMDB opens from, or undefined (with the damage reported) when it cannot be trusted.
 *
 * LMDB opens from the meta page with the larger transaction id (mdb_pick_meta: `a->mm_txnid >=
 * b->mm_txnid ? a : b`), and checks only page 0's type, magic and version before it does
 * (mdb_env_read_header); the chosen one must be sound, or LMDB would follow its roots wherever they
 * point. lmdb-js (overlapping sync) also writes a third, partial meta at half of page 0 (the last
 * synced state, mdb_env_read_header's `num_metas = 3`); its txnid is never above the newest full
 * meta's (it is written after that meta was synced), and LMDB opens from it alone only with
 * MDB_PREVSNAPSHOT, which seenstore never sets, so it is not checked (a check refused a store two
 * processes were creating at once).
 */
export function pickMeta(io: MetaReads): Meta | undefined {
  const head = Buffer.alloc(PAGE_HEADER_BYTES + META_BYTES);
  if (io.read(head, 0) < head.length) {
    io.report(0, 'file', `the file has ${io.fileBytes} bytes, too short for an LMDB meta page`);
    return undefined;
  }
  const first = readMeta(head, 0);
  if (first.valid !== undefined) {
    io.report(0, 'file', `meta page 0 ${first.valid}`);
    return undefined;
  }
  const second = Buffer.alloc(PAGE_HEADER_BYTES + META_BYTES);
  if (io.read(second, first.pageBytes) < second.length) {
    io.report(1, 'file', `the file has ${io.fileBytes} bytes: meta page 1 is missing`);
    return undefined;
  }
  const other = readMeta(second, 1);
  const newest = other.txnId > first.txnId ? other : first;
  if (newest.valid !== undefined) {
    io.report(newest.page, 'file', `meta page ${newest.page}, the newest (txn ${newest.txnId}), ${newest.valid}`);
    return undefined;
  }
  // The older meta page is the one the next commit overwrites (mdb_env_write_meta writes from
  // mm_mapsize on, never its header): damage there is not followed, but it is damage.
  if (other.valid !== undefined) {
    io.report(1, 'file', `meta page 1 ${other.valid}`);
    return undefined;
  }
  // mm_psize is set once, at creation (mdb_env_init_meta0), and copied into every later meta.
  if (other.pageBytes !== first.pageBytes)
    io.report(1, 'file', `meta page 1 has page size ${other.pageBytes}, meta page 0 ${first.pageBytes}`);
  return txnIdsAgree(io, first, other) ? newest : undefined;
}

/**
 * Commit T writes meta page T % 2 (mdb_env_write_meta: `toggle = txn->mt_txnid & 1`) and a write
 * transaction is the newest meta's txnid + 1 (mdb_txn_renew0), so the two pages hold consecutive
 * txnids, or 0 beside the first (a new file: mdb_env_init_meta; a compacting copy,
 * mdb_env_copyfd1, writes a txnid to page 1 only). A txnid off that pattern would make LMDB open an
 * older snapshot, silently dropping commits.
 */
function txnIdsAgree(io: MetaReads, first: Meta, second: Meta): boolean {
  for (const meta of [first, second]) {
    if (meta.txnId !== 0n && Number(meta.txnId & 1n) !== meta.page) {
      io.report(
        meta.page,
        'file',
        `meta page ${meta.page} holds txn ${meta.txnId}, which LMDB writes to meta page ${meta.txnId & 1n}`,
      );
      return false;
    }
  }
  const gap = first.txnId > second.txnId ? first.txnId - second.txnId : second.txnId - first.txnId;
  if (first.txnId !== 0n && second.txnId !== 0n && gap !== 1n) {
    io.report(0, 'file', `the meta pages hold txns ${first.txnId} and ${second.txnId}, not consecutive ones`);
    return false;
  }
  return true;
}

/**
 * The meta record in `head` (a page header and the meta), and what is wrong with it, if anything.
 * Salvage (salvage-pages.ts) reads both meta pages with it, to fall back on the older snapshot.
 */
export function readMeta(head: Buffer, page: number): Meta {
  const at = META_OFFSET;
  const pageBytes = head.readUInt32LE(at + META_FREE_DB);
  const lastPage = head.readBigUInt64LE(at + META_LAST_PAGE);
  const txnId = head.readBigUInt64LE(at + META_TXNID);
  const envFlags = head.readUInt16LE(at + META_FREE_DB + 4);
  let valid: string | undefined;
  // mdb_env_init_meta writes each meta page's number and P_META; mdb_env_read_header refuses a
  // page 0 without P_META, LMDB's magic or data version (MDB_INVALID, MDB_VERSION_MISMATCH).
  if (head.readBigUInt64LE(0) !== BigInt(page)) valid = `carries page number ${head.readBigUInt64LE(0)}`;
  else if ((head.readUInt16LE(18) & P_META) === 0)
    valid = `is not a meta page (flags 0x${head.readUInt16LE(18).toString(16)})`;
  else if (head.readUInt32LE(at) !== LMDB_MAGIC) valid = "does not carry LMDB's magic number";
  else if ((head.readUInt32LE(at + 4) & 0xffff) !== LMDB_DATA_VERSION)
    valid = `has LMDB data version ${head.readUInt32LE(at + 4) & 0xffff}, not ${LMDB_DATA_VERSION}`;
  // LMDB's page sizes are powers of two from 512 to 64 KiB (MIN_PAGESIZE, MAX_PAGESIZE); a wrong
  // one makes every page offset wrong.
  else if (!PAGE_SIZES.includes(pageBytes)) valid = `has an impossible page size ${pageBytes}`;
  // The free DB's flags double as the environment's persistent flags (mm_flags): mdb_env_init_meta0
  // writes MDB_INTEGERKEY plus the low 16 bits of the creating environment's flags but
  // MDB_OVERLAPPINGSYNC, and mdb_txn_commit toggles MDB_OVERLAPPINGSYNC (unsynced commits). The
  // env bits change nothing LMDB reads; a persistent DB flag (MDB_DUPSORT, ...) or a missing
  // MDB_INTEGERKEY would change how LMDB reads the free DB.
  else if ((envFlags & MDB_INTEGERKEY) === 0 || (envFlags & ~(MDB_INTEGERKEY | ENV_FLAGS_PERSISTED)) !== 0)
    valid = `has environment flags 0x${envFlags.toString(16)}`;
  // mm_last_pg is the highest page in use (mdb_env_write_meta: mt_next_pgno - 1); at least the two meta pages.
  else if (lastPage < 1n || lastPage > BigInt(Number.MAX_SAFE_INTEGER) / BigInt(pageBytes))
    valid = `has an impossible last page ${lastPage}`;
  return {
    page,
    valid,
    txnId,
    pageBytes,
    lastPage,
    free: readTree(head, at + META_FREE_DB, 'free'),
    main: readTree(head, at + META_MAIN_DB, 'main'),
  };
}
