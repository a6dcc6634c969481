import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import {
  PAGE_HEADER_BYTES, NODE_HEADER_BYTES, DB_RECORD_BYTES, OVERFLOW_REF_BYTES, META_OFFSET, META_MAIN_DB,
  META_FREE_DB, META_LAST_PAGE, META_TXNID, META_BYTES, LMDB_MAGIC, LMDB_DATA_VERSION, P_BRANCH, P_LEAF,
  P_OVERFLOW, P_META, F_BIGDATA, F_SUBDATA, F_DUPDATA, P_INVALID, MDB_INTEGERKEY, MDB_OVERLAPPINGSYNC,
  MAX_DEPTH, PAGE_SIZES, readTree, type Tree, type Meta,
} from './page-format.js';

export { PAGE_HEADER_BYTES };

/**
 * A structural walk of an LMDB data file as the lmdb build bundled with lmdb-js 3.5.x writes it
 * (mdb.c under node_modules/lmdb/dependencies/lmdb/libraries/liblmdb): every page of every
 * database the newest meta page reaches is read with positional reads (never through a memory
 * map, so a cut or damaged file cannot stop the process with SIGBUS or SIGSEGV) and checked for
 * what LMDB would otherwise follow blindly: page numbers, page types, free-space bounds, node
 * offsets, key and data sizes, child page numbers and overflow runs. It does not look at the
 * bytes of keys and values: the records' own checksums do that (verify.ts).
 *
 * The page layouts are in page-format.ts.
 */

export interface PageDamage {
  /** The page the fault was found on (or points into); -1 for the file as a whole. */
  readonly page: number;
  /** The database the page belongs to: `free`, `main`, a named DB (`meta`, `chunks`, ...) or `file`. */
  readonly db: string;
  readonly problem: string;
}

export interface PageWalkReport {
  readonly pageBytes: number;
  /** The meta page LMDB opens from (0 or 1), its transaction id and last page number. */
  readonly metaPage: number;
  readonly txnId: bigint;
  readonly lastPage: number;
  readonly fileBytes: number;
  /** Branch, leaf and overflow-run head pages read. */
  readonly pagesRead: number;
  /** The highest page any database uses (overflow runs counted whole): the file must hold it. */
  readonly highestUsedPage: number;
  /**
   * A commit newer than the one after the walked snapshot landed during the walk. The walk reads
   * outside LMDB's reader table, so such a commit may have reused pages of the walked snapshot:
   * damage found by a walk whose snapshot moved may be a false alarm, and the walk is repeated.
   */
  readonly snapshotMoved: boolean;
  readonly damage: PageDamage[];
}

export interface PageWalkOptions {
  /** Stop after this many findings (default 100; 1 to learn only whether the file is sound). */
  readonly maxDamage?: number;
  /** Called for each sound page the walk reaches (an overflow run by its first page). */
  readonly visit?: (page: number, db: string, kind: 'branch' | 'leaf' | 'overflow') => void;
}

/** Thrown inside the walk when enough damage was found. */
class WalkStop extends Error {}

/** Walks the data file at `path`. Never throws for damage (it is reported); throws for I/O errors. */
export function walkPages(path: string, options: PageWalkOptions = {}): PageWalkReport {
  const fd = openSync(path, 'r');
  try {
    return new PageWalk(fd, fstatSync(fd).size, options.maxDamage ?? 100, options.visit).run();
  } finally {
    closeSync(fd);
  }
}

class PageWalk {
  readonly #fd: number;
  #fileBytes: number;
  readonly #maxDamage: number;
  readonly damage: PageDamage[] = [];
  #pageBytes = 4096;
  #lastPage = 0;
  #txnId = 0n;
  #filePages = 0;
  #pagesRead = 0;
  #highestUsed = 1;
  /** Tree pages seen, to catch a page used twice (and so a cycle). */
  readonly #seen = new Set<number>();
  /** Overflow runs seen, [first, count]: checked for overlaps at the end. */
  readonly #runs: [number, number][] = [];
  readonly #levels: Buffer[] = [];
  readonly #runHead = Buffer.alloc(PAGE_HEADER_BYTES);

  readonly #visit: PageWalkOptions['visit'];

  constructor(fd: number, fileBytes: number, maxDamage: number, visit: PageWalkOptions['visit']) {
    this.#fd = fd;
    this.#visit = visit;
    this.#fileBytes = fileBytes;
    this.#maxDamage = Math.max(1, maxDamage);
  }

  run(): PageWalkReport {
    let meta: Meta | undefined;
    try {
      meta = this.#pickMeta();
      if (meta !== undefined) this.#walkAll(meta);
    } catch (error) {
      if (!(error instanceof WalkStop)) throw error;
    }
    const txnId = meta?.txnId ?? 0n;
    return {
      pageBytes: this.#pageBytes,
      metaPage: meta?.page ?? -1,
      txnId,
      lastPage: this.#lastPage,
      fileBytes: this.#fileBytes,
      pagesRead: this.#pagesRead,
      highestUsedPage: this.#highestUsed,
      snapshotMoved: meta !== undefined && this.#newestTxnId() > txnId + 1n,
      damage: this.damage,
    };
  }

  /** The larger transaction id of the two meta pages as they are now. */
  #newestTxnId(): bigint {
    const id = Buffer.alloc(8);
    let newest = 0n;
    for (const page of [0, 1]) {
      if (this.#read(id, page * this.#pageBytes + META_OFFSET + META_TXNID) === 8 && id.readBigUInt64LE(0) > newest) newest = id.readBigUInt64LE(0);
    }
    return newest;
  }

  #report(page: number, db: string, problem: string): void {
    this.damage.push({ page, db, problem });
    if (this.damage.length >= this.#maxDamage) throw new WalkStop();
  }

  /**
   * LMDB opens from the meta page with the larger transaction id, and checks only page 0's type,
   * magic and version before it does (mdb_env_read_header); the chosen one must be sound, or LMDB
   * would follow its roots wherever they point. lmdb-js (overlapping sync) also writes a third,
   * partial meta at half of page 0 (the last synced state), from another thread and outside the
   * open guard; LMDB opens from it only with MDB_PREVSNAPSHOT, which seenstore never sets, so it
   * is not checked (a check refused a store two processes were creating at once).
   */
  #pickMeta(): Meta | undefined {
    const head = Buffer.alloc(PAGE_HEADER_BYTES + META_BYTES);
    if (this.#read(head, 0) < head.length) {
      this.#report(0, 'file', `the file has ${this.#fileBytes} bytes, too short for an LMDB meta page`);
      return undefined;
    }
    const first = this.#readMeta(head, 0);
    if (first.valid !== undefined) {
      this.#report(0, 'file', `meta page 0 ${first.valid}`);
      return undefined;
    }
    this.#pageBytes = first.pageBytes;
    const second = this.#readMetaAt(1, this.#pageBytes);
    if (second === undefined) return undefined;
    const newest = second.txnId > first.txnId ? second : first;
    if (newest.valid !== undefined) {
      this.#report(newest.page, 'file', `meta page ${newest.page}, the newest (txn ${newest.txnId}), ${newest.valid}`);
      return undefined;
    }
    // The older meta page is the one the next commit overwrites (from its map size on, never its
    // header): damage there is not followed, but it is damage.
    if (second.valid !== undefined) {
      this.#report(1, 'file', `meta page 1 ${second.valid}`);
      return undefined;
    }
    if (second.pageBytes !== first.pageBytes) this.#report(1, 'file', `meta page 1 has page size ${second.pageBytes}, meta page 0 ${first.pageBytes}`);
    return this.#txnIdsAgree(first, second) ? newest : undefined;
  }

  /**
   * Commit T writes meta page T % 2 (mdb_env_write_meta), so the two pages hold consecutive txnids,
   * or 0 beside the first (a new file, or a compacting copy: it writes txn T | 1 to page 1 only).
   * A txnid off that pattern would make LMDB open an older snapshot, silently dropping commits.
   */
  #txnIdsAgree(first: Meta, second: Meta): boolean {
    for (const meta of [first, second]) {
      if (meta.txnId !== 0n && Number(meta.txnId & 1n) !== meta.page) {
        this.#report(meta.page, 'file', `meta page ${meta.page} holds txn ${meta.txnId}, which LMDB writes to meta page ${meta.txnId & 1n}`);
        return false;
      }
    }
    const gap = first.txnId > second.txnId ? first.txnId - second.txnId : second.txnId - first.txnId;
    if (first.txnId !== 0n && second.txnId !== 0n && gap !== 1n) {
      this.#report(0, 'file', `the meta pages hold txns ${first.txnId} and ${second.txnId}, not consecutive ones`);
      return false;
    }
    return true;
  }

  #readMetaAt(page: number, offset: number): Meta | undefined {
    const head = Buffer.alloc(PAGE_HEADER_BYTES + META_BYTES);
    if (this.#read(head, offset) < head.length) {
      if (page >= 0) this.#report(page, 'file', `the file has ${this.#fileBytes} bytes: meta page ${page} is missing`);
      return undefined;
    }
    return this.#readMeta(head, page);
  }

  /** The meta record in `head` (a page header and the meta), and what is wrong with it, if anything. */
  #readMeta(head: Buffer, page: number): Meta {
    const at = META_OFFSET;
    const pageBytes = head.readUInt32LE(at + META_FREE_DB);
    const lastPage = head.readBigUInt64LE(at + META_LAST_PAGE);
    const txnId = head.readBigUInt64LE(at + META_TXNID);
    let valid: string | undefined;
    // The synced copy at half a page carries no page header, magic or version (only the fields
    // from the map size on are written there).
    if (page >= 0) {
      if (head.readBigUInt64LE(0) !== BigInt(page)) valid = `carries page number ${head.readBigUInt64LE(0)}`;
      else if ((head.readUInt16LE(18) & P_META) === 0) valid = `is not a meta page (flags 0x${head.readUInt16LE(18).toString(16)})`;
      else if (head.readUInt32LE(at) !== LMDB_MAGIC) valid = 'does not carry LMDB\'s magic number';
      else if ((head.readUInt32LE(at + 4) & 0xffff) !== LMDB_DATA_VERSION) valid = `has LMDB data version ${head.readUInt32LE(at + 4) & 0xffff}, not ${LMDB_DATA_VERSION}`;
    }
    if (valid === undefined && !PAGE_SIZES.includes(pageBytes)) valid = `has an impossible page size ${pageBytes}`;
    // The free DB's flags double as the environment's persistent flags (mm_flags): LMDB writes
    // MDB_INTEGERKEY, plus MDB_OVERLAPPINGSYNC on commits not yet synced; any other bit changes
    // how LMDB reads the file.
    const envFlags = head.readUInt16LE(at + META_FREE_DB + 4);
    if (valid === undefined && (envFlags & ~MDB_OVERLAPPINGSYNC) !== MDB_INTEGERKEY) valid = `has environment flags 0x${envFlags.toString(16)}`;
    if (valid === undefined && (lastPage < 1n || lastPage > BigInt(Number.MAX_SAFE_INTEGER) / BigInt(pageBytes))) {
      valid = `has an impossible last page ${lastPage}`;
    }
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

  #walkAll(meta: Meta): void {
    this.#lastPage = Number(meta.lastPage);
    this.#txnId = meta.txnId;
    // Measured after the meta page was read: every page of its snapshot was written before it.
    this.#fileBytes = fstatSync(this.#fd).size;
    this.#filePages = Math.floor(this.#fileBytes / this.#pageBytes);
    if (this.#fileBytes % this.#pageBytes !== 0) {
      this.#report(-1, 'file', `the file size ${this.#fileBytes} bytes is not a whole number of ${this.#pageBytes}-byte pages`);
    }
    this.#walkTree(meta.free, false);
    const named = this.#walkTree(meta.main, true);
    for (const tree of named) this.#walkTree(tree, false);
    this.#checkRuns();
    if (this.#highestUsed >= this.#filePages) {
      this.#report(
        this.#highestUsed,
        'file',
        `the file is cut short: it has ${this.#filePages} pages, the databases use page ${this.#highestUsed} (the meta page's last page is ${this.#lastPage})`,
      );
    }
  }

  /** Walks one B-tree; for the main DB, returns the named databases its leaves hold. */
  #walkTree(tree: Tree, collectNamed: boolean): Tree[] {
    const named: Tree[] = [];
    if (tree.root === P_INVALID) {
      if (tree.depth !== 0 || tree.entries !== 0n) this.#report(-1, tree.db, `empty, but its record says depth ${tree.depth} and ${tree.entries} entries`);
      return named;
    }
    if (tree.db !== 'free' && tree.flags !== 0) {
      this.#report(-1, tree.db, `its record has flags 0x${tree.flags.toString(16)}; seenstore's databases have none`);
      return named;
    }
    if (tree.depth < 1 || tree.depth > MAX_DEPTH) {
      this.#report(-1, tree.db, `its record says depth ${tree.depth}`);
      return named;
    }
    const counts = { branch: 0n, leaf: 0n, overflow: 0n, entries: 0n };
    const root = this.#childPage(tree.root, tree.db, -1);
    if (root !== undefined) this.#walkPage(tree, root, 1, counts, collectNamed ? named : undefined);
    if (this.damage.length === 0) {
      const expected = `${tree.branchPages}/${tree.leafPages}/${tree.overflowPages}/${tree.entries}`;
      const found = `${counts.branch}/${counts.leaf}/${counts.overflow}/${counts.entries}`;
      if (expected !== found) this.#report(Number(tree.root), tree.db, `its record counts ${expected} branch/leaf/overflow pages/entries, the walk found ${found}`);
    }
    return named;
  }

  /** A page number taken from a pointer: inside the pages the meta page accounts for. */
  #childPage(pgno: bigint, db: string, from: number): number | undefined {
    if (pgno < 2n || pgno > BigInt(this.#lastPage)) {
      this.#report(from, db, `points to page ${pgno}, outside pages 2..${this.#lastPage}`);
      return undefined;
    }
    return Number(pgno);
  }

  #walkPage(tree: Tree, pgno: number, level: number, counts: { branch: bigint; leaf: bigint; overflow: bigint; entries: bigint }, named: Tree[] | undefined): void {
    if (this.#seen.has(pgno)) {
      this.#report(pgno, tree.db, 'is reached twice (a page shared by two parents, or a cycle)');
      return;
    }
    this.#seen.add(pgno);
    const page = this.#readPage(pgno, tree.db, 1, this.#levelBuffer(level));
    if (page === undefined) return;
    const flags = page.readUInt16LE(18);
    const leaf = level === tree.depth;
    // seenstore's databases hold no duplicates, so no LEAF2 or sub-pages: exactly one type bit.
    if (flags !== (leaf ? P_LEAF : P_BRANCH)) {
      this.#report(pgno, tree.db, `has flags 0x${flags.toString(16)}, expected a ${leaf ? 'leaf' : 'branch'} page at level ${level} of ${tree.depth}`);
      return;
    }
    const nodes = this.#nodeOffsets(page, pgno, tree.db);
    if (nodes === undefined) return;
    this.#visit?.(pgno, tree.db, leaf ? 'leaf' : 'branch');
    if (leaf) {
      counts.leaf++;
      for (const at of nodes) this.#leafNode(tree, page, pgno, at, counts, named);
      return;
    }
    counts.branch++;
    for (const at of nodes) {
      const child = BigInt(page.readUInt16LE(at)) | (BigInt(page.readUInt16LE(at + 2)) << 16n) | (BigInt(page.readUInt16LE(at + 4)) << 32n);
      const next = this.#childPage(child, tree.db, pgno);
      if (next !== undefined) this.#walkPage(tree, next, level + 1, counts, named);
    }
  }

  /** mdb.c's me_nodemax: the largest node kept on its page; bigger values go to overflow pages. */
  #nodeMaxBytes(): number {
    return (Math.floor((this.#pageBytes - PAGE_HEADER_BYTES) / 2) & ~1) - 2;
  }

  /** mdb.c's me_maxkey: the longest key LMDB writes. */
  #maxKeyBytes(): number {
    return this.#nodeMaxBytes() - (NODE_HEADER_BYTES + DB_RECORD_BYTES);
  }

  /** The byte offsets of the page's nodes, each checked to lie, with its key, inside the page. */
  #nodeOffsets(page: Buffer, pgno: number, db: string): number[] | undefined {
    const lower = page.readUInt16LE(20);
    const upper = page.readUInt16LE(22);
    const end = this.#pageBytes - PAGE_HEADER_BYTES;
    if (lower % 2 !== 0 || lower === 0 || lower > upper || upper > end) {
      this.#report(pgno, db, `has free-space bounds lower ${lower}, upper ${upper} (the page holds ${end} bytes after its header)`);
      return undefined;
    }
    const offsets: number[] = [];
    for (let i = 0; i < lower / 2; i++) {
      const ptr = page.readUInt16LE(PAGE_HEADER_BYTES + 2 * i);
      const at = PAGE_HEADER_BYTES + ptr;
      if (ptr < upper || ptr % 2 !== 0 || ptr + NODE_HEADER_BYTES > end) {
        this.#report(pgno, db, `node ${i} starts at offset ${ptr}, outside the node area ${upper}..${end}`);
        return undefined;
      }
      const keyBytes = page.readUInt16LE(at + 6);
      if (keyBytes > this.#maxKeyBytes() || ptr + NODE_HEADER_BYTES + keyBytes > end) {
        this.#report(pgno, db, `node ${i} has a ${keyBytes}-byte key (at most ${this.#maxKeyBytes()}, and inside the page)`);
        return undefined;
      }
      offsets.push(at);
    }
    return offsets;
  }

  #leafNode(tree: Tree, page: Buffer, pgno: number, at: number, counts: { overflow: bigint; entries: bigint }, named: Tree[] | undefined): void {
    const flags = page.readUInt16LE(at + 4);
    const keyBytes = page.readUInt16LE(at + 6);
    const dataBytes = page.readUInt16LE(at) + page.readUInt16LE(at + 2) * 0x10000;
    const data = at + NODE_HEADER_BYTES + keyBytes;
    const where = `node at offset ${at - PAGE_HEADER_BYTES}`;
    if ((flags & ~(F_BIGDATA | F_SUBDATA | F_DUPDATA)) !== 0 || (flags & F_BIGDATA && flags & (F_SUBDATA | F_DUPDATA))) {
      this.#report(pgno, tree.db, `${where} has unknown flags 0x${flags.toString(16)}`);
      return;
    }
    const inline = flags & F_BIGDATA ? OVERFLOW_REF_BYTES : dataBytes;
    if (data + inline > this.#pageBytes || (!(flags & F_BIGDATA) && NODE_HEADER_BYTES + keyBytes + dataBytes > this.#nodeMaxBytes())) {
      this.#report(pgno, tree.db, `${where} has ${inline} bytes of data that run past the page end or belong on overflow pages`);
      return;
    }
    counts.entries++;
    if (tree.db === 'free') this.#freeRecord(page, pgno, keyBytes, data, flags & F_BIGDATA ? undefined : dataBytes, dataBytes);
    if (flags & F_BIGDATA) {
      counts.overflow += this.#overflowRun(tree.db, pgno, page, data, dataBytes);
    } else if (flags & F_SUBDATA) {
      if (dataBytes !== DB_RECORD_BYTES) {
        this.#report(pgno, tree.db, `${where} names a database with a ${dataBytes}-byte record, not ${DB_RECORD_BYTES}`);
        return;
      }
      if (named !== undefined && (flags & F_DUPDATA) === 0) named.push(readTree(page, data, page.toString('utf8', at + NODE_HEADER_BYTES, data).replace(/\0+$/, '')));
      else this.#report(pgno, tree.db, `${where} holds a database where seenstore keeps none`);
    } else if (flags & F_DUPDATA) {
      this.#report(pgno, tree.db, `${where} holds duplicate values, which seenstore's databases never have`);
    }
  }

  /**
   * A free-DB record: an 8-byte transaction id, then a list of page numbers (a u64 count, then the
   * page entries), which LMDB's writers take pages from.
   */
  #freeRecord(page: Buffer, pgno: number, keyBytes: number, at: number, inlineBytes: number | undefined, dataBytes: number): void {
    if (keyBytes !== 8 || dataBytes % 8 !== 0 || dataBytes < 8) {
      this.#report(pgno, 'free', `a free-page record has a ${keyBytes}-byte key and ${dataBytes} bytes of data (8, and a whole number of page numbers)`);
      return;
    }
    if (inlineBytes === undefined) return;
    const count = page.readBigUInt64LE(at);
    // LMDB reserves a record's room before it knows the final list, which may come out shorter.
    if (count > BigInt(inlineBytes / 8 - 1)) {
      this.#report(pgno, 'free', `a free-page record says it lists ${count} pages in ${inlineBytes} bytes`);
      return;
    }
    // The entries themselves are in lmdb-js's sparse list encoding (midl-sparse.c: runs, zero
    // separators), which readers never follow: they are not checked one by one.
  }

  /** Checks the run a big value points to (its first page's header, its place); returns its page count. */
  #overflowRun(db: string, from: number, page: Buffer, at: number, dataBytes: number): bigint {
    const first = page.readBigUInt64LE(at);
    const pages = page.readBigUInt64LE(at + 16);
    const needed = BigInt(Math.floor((PAGE_HEADER_BYTES - 1 + dataBytes) / this.#pageBytes) + 1);
    if (pages !== needed) {
      this.#report(from, db, `a ${dataBytes}-byte value is said to take ${pages} overflow pages, it needs ${needed}`);
      return 0n;
    }
    const start = this.#childPage(first, db, from);
    if (start === undefined) return 0n;
    const count = Number(pages);
    if (start + count - 1 > this.#lastPage) {
      this.#report(from, db, `the overflow run at page ${start} of ${count} pages ends past the last page ${this.#lastPage}`);
      return 0n;
    }
    const head = this.#readPage(start, db, count, this.#runHead);
    if (head === undefined) return 0n;
    const flags = head.readUInt16LE(18);
    const stored = head.readUInt32LE(20);
    if (flags !== P_OVERFLOW || stored !== count) {
      this.#report(start, db, `should start an overflow run of ${count} pages, has flags 0x${flags.toString(16)} and a count of ${stored}`);
      return 0n;
    }
    this.#runs.push([start, count]);
    this.#visit?.(start, db, 'overflow');
    return pages;
  }

  /** Overflow runs and tree pages must not overlap (each page is used once). */
  #checkRuns(): void {
    const spans: [number, number][] = [...this.#runs];
    for (const pgno of this.#seen) spans.push([pgno, 1]);
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) {
      const [start, count] = spans[i - 1]!;
      if (spans[i]![0] < start + count) this.#report(spans[i]![0], 'file', `page ${spans[i]![0]} is used twice: it lies inside the run of ${count} pages at page ${start}`);
    }
  }

  /** Page `pgno` (its first page when it starts a run of `count`), or undefined when the file lacks it. */
  /**
   * The page buffer of tree level `level`: a page's buffer stays valid while its children (one
   * level down) are read. An overflow run's head needs only its header (#runHead).
   */
  #levelBuffer(level: number): Buffer {
    let buffer = this.#levels[level];
    if (buffer === undefined) {
      buffer = Buffer.allocUnsafe(this.#pageBytes);
      this.#levels[level] = buffer;
    }
    return buffer;
  }

  #readPage(pgno: number, db: string, count: number, page: Buffer): Buffer | undefined {
    this.#highestUsed = Math.max(this.#highestUsed, pgno + count - 1);
    if (pgno + count > this.#filePages) {
      this.#report(pgno, db, `lies beyond the end of the file (${this.#filePages} pages): the file is cut short`);
      return undefined;
    }
    if (this.#read(page, pgno * this.#pageBytes) < page.length) {
      this.#report(pgno, db, 'could not be read whole');
      return undefined;
    }
    this.#pagesRead++;
    if (page.readBigUInt64LE(0) !== BigInt(pgno)) {
      this.#report(pgno, db, `carries page number ${page.readBigUInt64LE(0)}`);
      return undefined;
    }
    // A page's txnid is the commit that wrote it. One newer than the snapshot would make a writer
    // take the mapped page for its own dirty copy and write into the read-only map (SIGSEGV).
    if (page.readBigUInt64LE(8) > this.#txnId) {
      this.#report(pgno, db, `was written by txn ${page.readBigUInt64LE(8)}, after the snapshot's txn ${this.#txnId}`);
      return undefined;
    }
    return page;
  }

  #read(buffer: Buffer, position: number): number {
    let done = 0;
    while (done < buffer.length) {
      const n = readSync(this.#fd, buffer, done, buffer.length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }
}
