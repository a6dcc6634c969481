import { fstatSync, readSync } from 'node:fs';
import { PAGE_HEADER_BYTES, NODE_HEADER_BYTES, DB_RECORD_BYTES, type Meta } from './page-format.js';
import { newestTxnId } from './meta-pages.js';

/** Where a page reader reports what it found wrong: a page, its database, the problem. */
export type PageReport = (page: number, db: string, problem: string) => void;

/**
 * The pages of one snapshot of an LMDB data file, for the page walk (page-walk.ts): read with
 * positional reads (never through a memory map, so a cut or damaged file cannot stop the process
 * with SIGBUS or SIGSEGV), each checked to be the page it should be: inside the pages the meta page
 * accounts for, in the file, carrying its own number, written no later than the snapshot. It
 * counts the pages read and the highest page used, and sizes what depends on the page size.
 */
export class PageReader {
  readonly #fd: number;
  readonly #report: PageReport;
  #fileBytes: number;
  #pageBytes = 4096;
  #lastPage = 0;
  #txnId = 0n;
  #filePages = 0;
  #pagesRead = 0;
  #highestUsed = 1;
  readonly #levels: Buffer[] = [];

  constructor(fd: number, fileBytes: number, report: PageReport) {
    this.#fd = fd;
    this.#fileBytes = fileBytes;
    this.#report = report;
  }

  get fileBytes(): number {
    return this.#fileBytes;
  }

  get pageBytes(): number {
    return this.#pageBytes;
  }

  get lastPage(): number {
    return this.#lastPage;
  }

  /** Branch, leaf and overflow-run head pages read. */
  get pagesRead(): number {
    return this.#pagesRead;
  }

  /** The highest page any database uses (overflow runs counted whole). */
  get highestUsed(): number {
    return this.#highestUsed;
  }

  /** Takes the snapshot of meta page `meta`: its page size, last page and transaction id. */
  useSnapshot(meta: Meta): void {
    this.#pageBytes = meta.pageBytes;
    this.#lastPage = Number(meta.lastPage);
    this.#txnId = meta.txnId;
    // Measured after the meta page was read: every page of its snapshot was written before it.
    this.#fileBytes = fstatSync(this.#fd).size;
    // A file that is not a whole number of pages is not damage by itself: a crash during the
    // extending write of a commit that never reached its meta page leaves a partial page past the
    // snapshot's pages. Only a used page past the whole pages is (checkHoldsUsed, and readPage).
    this.#filePages = Math.floor(this.#fileBytes / this.#pageBytes);
  }

  /** Reports a file too short for the highest page the walk found used. */
  checkHoldsUsed(): void {
    if (this.#highestUsed >= this.#filePages) {
      this.#report(
        this.#highestUsed,
        'file',
        `the file is cut short: it has ${this.#filePages} pages, the databases use page ${this.#highestUsed} (the meta page's last page is ${this.#lastPage})`,
      );
    }
  }

  /** The larger transaction id of the two meta pages as they are now. */
  newestTxnId(): bigint {
    return newestTxnId(this, this.#pageBytes);
  }

  /**
   * A page number taken from a pointer: inside the pages the meta page accounts for. mdb.c's page
   * header comment: each non-meta page up to mm_last_pg is reachable exactly once in the snapshot;
   * pages 0 and 1 are the meta pages; mdb_page_alloc hands out pages below mt_next_pgno, and
   * mdb_env_write_meta stores mm_last_pg = mt_next_pgno - 1.
   */
  childPage(pgno: bigint, db: string, from: number): number | undefined {
    if (pgno < 2n || pgno > BigInt(this.#lastPage)) {
      this.#report(from, db, `points to page ${pgno}, outside pages 2..${this.#lastPage}`);
      return undefined;
    }
    return Number(pgno);
  }

  /** mdb.c's me_nodemax: the largest node kept on its page; bigger values go to overflow pages. */
  nodeMaxBytes(): number {
    return (Math.floor((this.#pageBytes - PAGE_HEADER_BYTES) / 2) & ~1) - 2;
  }

  /** mdb.c's me_maxkey: the longest key LMDB writes. */
  maxKeyBytes(): number {
    return this.nodeMaxBytes() - (NODE_HEADER_BYTES + DB_RECORD_BYTES);
  }

  /**
   * The page buffer of tree level `level`: a page's buffer stays valid while its children (one
   * level down) are read. An overflow run's head needs only its header (PageWalk's #runHead).
   */
  levelBuffer(level: number): Buffer {
    let buffer = this.#levels[level];
    if (buffer === undefined) {
      buffer = Buffer.allocUnsafe(this.#pageBytes);
      this.#levels[level] = buffer;
    }
    return buffer;
  }

  /**
   * Page `pgno` (its first page when it starts a run of `count`), or undefined when the file lacks
   * it. A committed snapshot's pages are in the file: mdb_txn_commit writes them (mdb_page_flush,
   * a run whole, `psize * nump` bytes) before the meta page that reaches them.
   */
  readPage(pgno: number, db: string, count: number, page: Buffer): Buffer | undefined {
    this.#highestUsed = Math.max(this.#highestUsed, pgno + count - 1);
    if (pgno + count > this.#filePages) {
      this.#report(pgno, db, `lies beyond the end of the file (${this.#filePages} pages): the file is cut short`);
      return undefined;
    }
    if (this.read(page, pgno * this.#pageBytes) < page.length) {
      this.#report(pgno, db, 'could not be read whole');
      return undefined;
    }
    this.#pagesRead++;
    // mdb_page_alloc gives a new page its number (np->mp_pgno = pgno), mdb_page_touch keeps it on
    // the copy, and mdb_page_flush writes the page at pgno * psize: a page carries its own number.
    if (page.readBigUInt64LE(0) !== BigInt(pgno)) {
      this.#report(pgno, db, `carries page number ${page.readBigUInt64LE(0)}`);
      return undefined;
    }
    // A page's txnid is the commit that wrote it (mdb_page_flush: `dp->mp_txnid = txn->mt_txnid`
    // before the write; mdb_env_cwalk writes 1). One newer than the snapshot would make a writer
    // take the mapped page for its own dirty copy and write into the read-only map (SIGSEGV).
    if (page.readBigUInt64LE(8) > this.#txnId) {
      this.#report(pgno, db, `was written by txn ${page.readBigUInt64LE(8)}, after the snapshot's txn ${this.#txnId}`);
      return undefined;
    }
    return page;
  }

  read(buffer: Buffer, position: number): number {
    let done = 0;
    while (done < buffer.length) {
      const n = readSync(this.#fd, buffer, done, buffer.length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }
}
