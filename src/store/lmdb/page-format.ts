/**
 * LMDB's page format, as the lmdb build bundled with lmdb-js 3.5.x writes it (mdb.c under
 * node_modules/lmdb/dependencies/lmdb/libraries/liblmdb): the constants and records the page walk
 * (page-walk.ts) reads.
 *
 * Layouts (64-bit build, little-endian; offsets in bytes):
 *   page header (24): pgno u64 @0, txnid u64 @8, pad u16 @16, flags u16 @18,
 *                     lower u16 @20, upper u16 @22 (an overflow page: page count u32 @20)
 *   branch/leaf page: u16 node offsets from @24 (lower / 2 of them); lower and upper and every
 *                     offset count from byte 24; nodes lie between upper and the page end
 *   node (8 + key + data): lo u16 @0, hi u16 @2, flags u16 @4, key size u16 @6, key @8, data;
 *                     branch: child = lo | hi << 16 | flags << 32; leaf: data size = lo | hi << 16
 *   F_BIGDATA leaf data (24): overflow pgno u64, txnid u64, page count u64
 *   MDB_db (48): pad u32 @0 (page size in the free DB's copy), flags u16 @4, depth u16 @6,
 *                branch u64 @8, leaf u64 @16, overflow u64 @24, entries u64 @32, root u64 @40
 *   meta (at page offset 24): magic u32 @0, version u32 @4, address @8, map size u64 @16,
 *                free DB @24, main DB @72, last page u64 @120, txnid u64 @128
 */

export const PAGE_HEADER_BYTES = 24;
export const NODE_HEADER_BYTES = 8;
export const DB_RECORD_BYTES = 48;
export const OVERFLOW_REF_BYTES = 24;
export const META_OFFSET = PAGE_HEADER_BYTES;
export const META_MAIN_DB = 72;
export const META_FREE_DB = 24;
export const META_LAST_PAGE = 120;
export const META_TXNID = 128;
export const META_BYTES = 144;
export const LMDB_MAGIC = 0xbeefc0de;
export const LMDB_DATA_VERSION = 2;
export const P_BRANCH = 0x01;
export const P_LEAF = 0x02;
export const P_OVERFLOW = 0x04;
export const P_META = 0x08;
export const F_BIGDATA = 0x01;
export const F_SUBDATA = 0x02;
export const F_DUPDATA = 0x04;
export const P_INVALID = 0xffff_ffff_ffff_ffffn;
export const MDB_INTEGERKEY = 0x08;
export const MDB_OVERLAPPINGSYNC = 0x1000;
/**
 * Environment flags mdb_env_init_meta0 may persist in mm_flags (`me_flags & 0xffff`), none of which
 * changes how LMDB reads the file: MDB_FIXEDMAP, MDB_TRACK_METRICS, MDB_SAFE_RESTORE,
 * MDB_OVERLAPPINGSYNC, MDB_NOSUBDIR (lmdb.h). MDB_ENCRYPT (0x2000) is not among them: its pages
 * cannot be read without the key.
 */
export const ENV_FLAGS_PERSISTED = 0x0001 | 0x0400 | 0x0800 | MDB_OVERLAPPINGSYNC | 0x4000;
/** mdb.c's CURSOR_STACK: mdb_cursor_push refuses a deeper stack (MDB_CURSOR_FULL), so no tree is deeper. */
export const MAX_DEPTH = 32;
/** mdb_env_set_pagesize: a power of two from 256 to MAX_PAGESIZE (64 KiB). */
export const PAGE_SIZES = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];

/** One structural fault, with its place. */
export interface Tree {
  readonly db: string;
  readonly depth: number;
  readonly root: bigint;
  readonly branchPages: bigint;
  readonly leafPages: bigint;
  readonly overflowPages: bigint;
  readonly entries: bigint;
  readonly flags: number;
}

export interface Meta {
  readonly page: number;
  readonly valid: string | undefined;
  readonly txnId: bigint;
  readonly pageBytes: number;
  readonly lastPage: bigint;
  readonly free: Tree;
  readonly main: Tree;
}

export function readTree(buffer: Buffer, at: number, db: string): Tree {
  return {
    db,
    flags: buffer.readUInt16LE(at + 4),
    depth: buffer.readUInt16LE(at + 6),
    branchPages: buffer.readBigUInt64LE(at + 8),
    leafPages: buffer.readBigUInt64LE(at + 16),
    overflowPages: buffer.readBigUInt64LE(at + 24),
    entries: buffer.readBigUInt64LE(at + 32),
    root: buffer.readBigUInt64LE(at + 40),
  };
}
