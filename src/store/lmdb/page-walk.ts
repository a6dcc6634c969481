import { closeSync, fstatSync, openSync } from 'node:fs';
import {
  PAGE_HEADER_BYTES,
  NODE_HEADER_BYTES,
  DB_RECORD_BYTES,
  OVERFLOW_REF_BYTES,
  P_BRANCH,
  P_LEAF,
  P_OVERFLOW,
  F_BIGDATA,
  F_SUBDATA,
  F_DUPDATA,
  P_INVALID,
  MAX_DEPTH,
  readTree,
  type Tree,
  type Meta,
} from './page-format.js';
import { pickMeta } from './meta-pages.js';
import { PageReader } from './page-reader.js';

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
 * The page layouts are in page-format.ts, the meta pages' checks in meta-pages.ts, the reads of
 * single pages and their checks in page-reader.ts. Every check names the lines of mdb.c that make
 * it a promise: a check LMDB does not promise refuses healthy stores (docs/format.md, "What the
 * page walk checks, and why LMDB promises it").
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
  /**
   * Overflow runs longer than their value needs (sound: mdb_cursor_put reuses a run in place
   * without shrinking it); counted so that tests can show they walked such a state.
   */
  readonly longRuns: number;
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
  readonly #pages: PageReader;
  readonly #maxDamage: number;
  readonly damage: PageDamage[] = [];
  #longRuns = 0;
  /** Tree pages seen, to catch a page used twice (and so a cycle). */
  readonly #seen = new Set<number>();
  /** Overflow runs seen, [first, count]: checked for overlaps at the end. */
  readonly #runs: [number, number][] = [];
  readonly #runHead = Buffer.alloc(PAGE_HEADER_BYTES);

  readonly #visit: PageWalkOptions['visit'];

  constructor(fd: number, fileBytes: number, maxDamage: number, visit: PageWalkOptions['visit']) {
    this.#pages = new PageReader(fd, fileBytes, (page, db, problem) => this.#report(page, db, problem));
    this.#visit = visit;
    this.#maxDamage = Math.max(1, maxDamage);
  }

  run(): PageWalkReport {
    let meta: Meta | undefined;
    try {
      meta = pickMeta({
        fileBytes: this.#pages.fileBytes,
        read: (buffer, position) => this.#pages.read(buffer, position),
        report: (page, db, problem) => this.#report(page, db, problem),
      });
      if (meta !== undefined) this.#walkAll(meta);
    } catch (error) {
      if (!(error instanceof WalkStop)) throw error;
    }
    const txnId = meta?.txnId ?? 0n;
    const pages = this.#pages;
    return {
      pageBytes: pages.pageBytes,
      metaPage: meta?.page ?? -1,
      txnId,
      lastPage: pages.lastPage,
      fileBytes: pages.fileBytes,
      pagesRead: pages.pagesRead,
      highestUsedPage: pages.highestUsed,
      longRuns: this.#longRuns,
      snapshotMoved: meta !== undefined && pages.newestTxnId() > txnId + 1n,
      damage: this.damage,
    };
  }

  #report(page: number, db: string, problem: string): void {
    this.damage.push({ page, db, problem });
    if (this.damage.length >= this.#maxDamage) throw new WalkStop();
  }

  #walkAll(meta: Meta): void {
    this.#pages.useSnapshot(meta);
    this.#walkTree(meta.free, false);
    const named = this.#walkTree(meta.main, true);
    for (const tree of named) this.#walkTree(tree, false);
    this.#checkRuns();
    this.#pages.checkHoldsUsed();
  }

  /** Walks one B-tree; for the main DB, returns the named databases its leaves hold. */
  #walkTree(tree: Tree, collectNamed: boolean): Tree[] {
    const named: Tree[] = [];
    // An empty tree: mdb_rebalance (root leaf of no keys) and mdb_drop0 set md_root = P_INVALID,
    // md_depth = 0, and md_entries counts down to 0 with each delete (mdb_cursor_del0).
    if (tree.root === P_INVALID) {
      if (tree.depth !== 0 || tree.entries !== 0n)
        this.#report(-1, tree.db, `empty, but its record says depth ${tree.depth} and ${tree.entries} entries`);
      return named;
    }
    // mdb_dbi_open stores a database's persistent flags when it creates it, and refuses other flags
    // later (MDB_INCOMPATIBLE); seenstore opens every database with none (env.ts: lmdb-js's
    // openDB({ encoding: 'binary' }) passes no MDB_DUPSORT, MDB_INTEGERKEY, ...). A flag would
    // change how LMDB reads the tree (MDB_DUPSORT follows data as sub-pages).
    if (tree.db !== 'free' && tree.flags !== 0) {
      this.#report(-1, tree.db, `its record has flags 0x${tree.flags.toString(16)}; seenstore's databases have none`);
      return named;
    }
    // md_depth grows only at a new root (mdb_page_split) and shrinks only there (mdb_rebalance),
    // so every leaf is at level md_depth; mdb_cursor_push refuses level CURSOR_STACK.
    if (tree.depth < 1 || tree.depth > MAX_DEPTH) {
      this.#report(-1, tree.db, `its record says depth ${tree.depth}`);
      return named;
    }
    const counts = { branch: 0n, leaf: 0n, overflow: 0n, entries: 0n };
    const root = this.#pages.childPage(tree.root, tree.db, -1);
    if (root !== undefined) this.#walkPage(tree, root, 1, counts, collectNamed ? named : undefined);
    // LMDB keeps these counts exact: mdb_page_new (++ by page type, + run length), mdb_ovpage_free
    // (- run length, the run's own count), mdb_page_merge and mdb_rebalance (--), mdb_cursor_put
    // and mdb_cursor_del0 (entries). A run reused in place keeps its length and its count. The
    // compacting copy (mdb_env_copyfd1) follows the free DB's counts to place the new last page.
    if (this.damage.length === 0) {
      const expected = `${tree.branchPages}/${tree.leafPages}/${tree.overflowPages}/${tree.entries}`;
      const found = `${counts.branch}/${counts.leaf}/${counts.overflow}/${counts.entries}`;
      if (expected !== found)
        this.#report(
          Number(tree.root),
          tree.db,
          `its record counts ${expected} branch/leaf/overflow pages/entries, the walk found ${found}`,
        );
    }
    return named;
  }

  #walkPage(
    tree: Tree,
    pgno: number,
    level: number,
    counts: { branch: bigint; leaf: bigint; overflow: bigint; entries: bigint },
    named: Tree[] | undefined,
  ): void {
    // "Reachable exactly once" (mdb.c, the MDB_page_header comment): a second parent is damage, and a cycle.
    if (this.#seen.has(pgno)) {
      this.#report(pgno, tree.db, 'is reached twice (a page shared by two parents, or a cycle)');
      return;
    }
    this.#seen.add(pgno);
    const page = this.#pages.readPage(pgno, tree.db, 1, this.#pages.levelBuffer(level));
    if (page === undefined) return;
    const flags = page.readUInt16LE(18);
    const leaf = level === tree.depth;
    // mdb_page_new sets one type bit; P_LOOSE pages are never flushed and P_KEEP is cleared before a
    // page is written (mdb_page_flush), P_DIRTY_OVF is never set; seenstore's databases hold no
    // duplicates (no MDB_DUPSORT, see #walkTree), so no P_LEAF2 or P_SUBP. Leaves are at md_depth.
    if (flags !== (leaf ? P_LEAF : P_BRANCH)) {
      this.#report(
        pgno,
        tree.db,
        `has flags 0x${flags.toString(16)}, expected a ${leaf ? 'leaf' : 'branch'} page at level ${level} of ${tree.depth}`,
      );
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
      const child =
        BigInt(page.readUInt16LE(at)) |
        (BigInt(page.readUInt16LE(at + 2)) << 16n) |
        (BigInt(page.readUInt16LE(at + 4)) << 32n);
      const next = this.#pages.childPage(child, tree.db, pgno);
      if (next !== undefined) this.#walkPage(tree, next, level + 1, counts, named);
    }
  }

  /**
   * The byte offsets of the page's nodes, each checked to lie, with its key, inside the page.
   * mdb_page_new sets lower = 0 and upper = page size - header; mdb_node_add puts each node at
   * `upper - EVEN(node size)` and lowers upper (2-byte aligned), one u16 pointer per node raising
   * lower; mdb_node_del moves nodes up by EVEN sizes. A page in a tree has keys: mdb_rebalance
   * merges or drops a page below minkeys (1 on a leaf, 2 on a branch) and empties a root to
   * P_INVALID. Keys are at most me_maxkey (mdb_env_open2: me_nodemax - (NODESIZE + sizeof(MDB_db)), as
   * MDB_MAXKEYSIZE=0 in lmdb-js's binding.gyp makes it).
   */
  #nodeOffsets(page: Buffer, pgno: number, db: string): number[] | undefined {
    const lower = page.readUInt16LE(20);
    const upper = page.readUInt16LE(22);
    const end = this.#pages.pageBytes - PAGE_HEADER_BYTES;
    if (lower % 2 !== 0 || lower === 0 || lower > upper || upper > end) {
      this.#report(
        pgno,
        db,
        `has free-space bounds lower ${lower}, upper ${upper} (the page holds ${end} bytes after its header)`,
      );
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
      if (keyBytes > this.#pages.maxKeyBytes() || ptr + NODE_HEADER_BYTES + keyBytes > end) {
        this.#report(
          pgno,
          db,
          `node ${i} has a ${keyBytes}-byte key (at most ${this.#pages.maxKeyBytes()}, and inside the page)`,
        );
        return undefined;
      }
      offsets.push(at);
    }
    return offsets;
  }

  #leafNode(
    tree: Tree,
    page: Buffer,
    pgno: number,
    at: number,
    counts: { overflow: bigint; entries: bigint },
    named: Tree[] | undefined,
  ): void {
    const flags = page.readUInt16LE(at + 4);
    const keyBytes = page.readUInt16LE(at + 6);
    const dataBytes = page.readUInt16LE(at) + page.readUInt16LE(at + 2) * 0x10000;
    const data = at + NODE_HEADER_BYTES + keyBytes;
    const where = `node at offset ${at - PAGE_HEADER_BYTES}`;
    // NODE_ADD_FLAGS (F_DUPDATA | F_SUBDATA; MDB_RESERVE and MDB_APPEND lie above mn_flags' 16
    // bits) plus F_BIGDATA, which mdb_node_add sets only on data it puts on overflow pages.
    if (
      (flags & ~(F_BIGDATA | F_SUBDATA | F_DUPDATA)) !== 0 ||
      (flags & F_BIGDATA && flags & (F_SUBDATA | F_DUPDATA))
    ) {
      this.#report(pgno, tree.db, `${where} has unknown flags 0x${flags.toString(16)}`);
      return;
    }
    // mdb_node_add keeps data inline only when NODESIZE + key + data <= me_nodemax; bigger data
    // goes to an overflow run and the node holds an MDB_ovpage. (The reverse does not hold: a run
    // reused in place may hold a value small enough to be inline, mdb_cursor_put.)
    const inline = flags & F_BIGDATA ? OVERFLOW_REF_BYTES : dataBytes;
    if (
      data + inline > this.#pages.pageBytes ||
      (!(flags & F_BIGDATA) && NODE_HEADER_BYTES + keyBytes + dataBytes > this.#pages.nodeMaxBytes())
    ) {
      this.#report(
        pgno,
        tree.db,
        `${where} has ${inline} bytes of data that run past the page end or belong on overflow pages`,
      );
      return;
    }
    counts.entries++;
    if (tree.db === 'free')
      this.#freeRecord(page, pgno, keyBytes, data, flags & F_BIGDATA ? undefined : dataBytes, dataBytes);
    if (flags & F_BIGDATA) {
      counts.overflow += this.#overflowRun(tree.db, pgno, page, data, dataBytes);
    } else if (flags & F_SUBDATA) {
      // mdb_dbi_open and mdb_txn_commit write a named DB's record as an inline sizeof(MDB_db).
      if (dataBytes !== DB_RECORD_BYTES) {
        this.#report(
          pgno,
          tree.db,
          `${where} names a database with a ${dataBytes}-byte record, not ${DB_RECORD_BYTES}`,
        );
        return;
      }
      if (named !== undefined && (flags & F_DUPDATA) === 0)
        named.push(readTree(page, data, page.toString('utf8', at + NODE_HEADER_BYTES, data).replace(/\0+$/, '')));
      else this.#report(pgno, tree.db, `${where} holds a database where seenstore keeps none`);
    } else if (flags & F_DUPDATA) {
      this.#report(pgno, tree.db, `${where} holds duplicate values, which seenstore's databases never have`);
    }
  }

  /**
   * A free-DB record: an 8-byte transaction id, then a list of page numbers (a u64 count, then the
   * page entries), which LMDB's writers take pages from. mdb_freelist_save writes every record
   * with an 8-byte key (sizeof(txnid_t)) and (n + 1) u64 of data: MDB_IDL_SIZEOF for the pages this
   * commit freed, `(len + 1 or 2) * sizeof(pgno_t)` for the reserved records of me_pghead.
   */
  #freeRecord(
    page: Buffer,
    pgno: number,
    keyBytes: number,
    at: number,
    inlineBytes: number | undefined,
    dataBytes: number,
  ): void {
    if (keyBytes !== 8 || dataBytes % 8 !== 0 || dataBytes < 8) {
      this.#report(
        pgno,
        'free',
        `a free-page record has a ${keyBytes}-byte key and ${dataBytes} bytes of data (8, and a whole number of page numbers)`,
      );
      return;
    }
    if (inlineBytes === undefined) return;
    const count = page.readBigUInt64LE(at);
    // LMDB reserves a record's room before it knows the final list, which may come out shorter
    // (mdb_freelist_save writes `mop[start] = len` with len <= the reserved length), never longer:
    // mdb_page_alloc and mdb_env_copyfd1 read idl[1..idl[0]] inside the record.
    if (count > BigInt(inlineBytes / 8 - 1)) {
      this.#report(pgno, 'free', `a free-page record says it lists ${count} pages in ${inlineBytes} bytes`);
      return;
    }
    // The entries themselves are in lmdb-js's sparse list encoding (midl-sparse.c: runs, zero
    // separators), which readers never follow: they are not checked one by one.
  }

  /**
   * Checks the run a big value points to (its first page's header, its place); returns its page
   * count. A run is never shorter than its value needs (OVPAGES): mdb_node_add allocates exactly
   * OVPAGES(size), and mdb_cursor_put overwrites a run in place only when `ovpages >= dpages`. It
   * may be longer: that overwrite ("overflow page overwrites", mdb_cursor_put) keeps the run and
   * only sets the node's data size ("we don't bother to try shrinking the page"), and
   * mdb_freelist_save re-puts its own records with MDB_RESERVE in one commit, smaller ones too.
   * The node's page count, the run's header (mdb_page_new: mp_pages = num) and md_overflow_pages
   * then agree on the longer run, which mdb_ovpage_free frees whole.
   */
  #overflowRun(db: string, from: number, page: Buffer, at: number, dataBytes: number): bigint {
    const first = page.readBigUInt64LE(at);
    const pages = page.readBigUInt64LE(at + 16);
    const needed = BigInt(Math.floor((PAGE_HEADER_BYTES - 1 + dataBytes) / this.#pages.pageBytes) + 1);
    if (pages < needed) {
      this.#report(
        from,
        db,
        `a ${dataBytes}-byte value is said to take ${pages} overflow pages, it needs at least ${needed}`,
      );
      return 0n;
    }
    const start = this.#pages.childPage(first, db, from);
    if (start === undefined) return 0n;
    if (pages > BigInt(this.#pages.lastPage)) {
      this.#report(
        from,
        db,
        `the overflow run at page ${start} of ${pages} pages ends past the last page ${this.#pages.lastPage}`,
      );
      return 0n;
    }
    const count = Number(pages);
    if (start + count - 1 > this.#pages.lastPage) {
      this.#report(
        from,
        db,
        `the overflow run at page ${start} of ${count} pages ends past the last page ${this.#pages.lastPage}`,
      );
      return 0n;
    }
    const head = this.#pages.readPage(start, db, count, this.#runHead);
    if (head === undefined) return 0n;
    const flags = head.readUInt16LE(18);
    const stored = head.readUInt32LE(20);
    if (flags !== P_OVERFLOW || stored !== count) {
      this.#report(
        start,
        db,
        `should start an overflow run of ${count} pages, has flags 0x${flags.toString(16)} and a count of ${stored}`,
      );
      return 0n;
    }
    if (pages > needed) this.#longRuns++;
    this.#runs.push([start, count]);
    this.#visit?.(start, db, 'overflow');
    return pages;
  }

  /** Overflow runs and tree pages must not overlap ("reachable exactly once", mdb.c's MDB_page_header comment). */
  #checkRuns(): void {
    const spans: [number, number][] = [...this.#runs];
    for (const pgno of this.#seen) spans.push([pgno, 1]);
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) {
      const [start, count] = spans[i - 1]!;
      if (spans[i]![0] < start + count)
        this.#report(
          spans[i]![0],
          'file',
          `page ${spans[i]![0]} is used twice: it lies inside the run of ${count} pages at page ${start}`,
        );
    }
  }
}
