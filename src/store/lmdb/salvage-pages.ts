import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import {
  PAGE_HEADER_BYTES,
  NODE_HEADER_BYTES,
  DB_RECORD_BYTES,
  OVERFLOW_REF_BYTES,
  META_BYTES,
  P_BRANCH,
  P_LEAF,
  P_OVERFLOW,
  F_BIGDATA,
  F_SUBDATA,
  F_DUPDATA,
  P_INVALID,
  MAX_DEPTH,
  readTree,
  type Meta,
  type Tree,
} from './page-format.js';
import { readMeta } from './meta-pages.js';

/**
 * The records of an LMDB data file, read for salvage the way the page walk (page-walk.ts) reads
 * it: positional reads, never a memory map, so that a damaged file cannot stop the process with
 * SIGBUS or SIGSEGV. Where the walk refuses the file at its first fault, this reader skips what
 * fails a check and goes on: a page that fails is skipped with its subtree, and the keys that
 * subtree held are known to lie between the separator keys of its parent (a *lost range*), so
 * that a caller can tell "never written" from "written, and lost" (a chunk key in a lost range).
 *
 * Each page is checked as the walk checks it (its own number, a txnid not after the snapshot's,
 * a type, free-space bounds, node offsets and key sizes inside the page, overflow runs of the
 * right type and length inside the file), each check being something LMDB promises
 * (docs/format.md, "What the page walk checks"). Both meta pages are read: the newest sound one is
 * walked first, and the other one (the commit before) is walked too when the newest lost
 * something, so that a caller can take records in the lost ranges from it. A page a later commit
 * reused carries that commit's txnid, above the older snapshot's, and is refused as such.
 */

export interface RawRecord {
  readonly key: Buffer;
  readonly value: Buffer;
}

/** Keys of one database that were lost with a skipped page: from `from` (inclusive) up to `to` (exclusive); undefined: unbounded. */
export interface LostRange {
  readonly db: string;
  readonly from: Buffer | undefined;
  readonly to: Buffer | undefined;
  readonly page: number;
  readonly problem: string;
}

/** One database of one snapshot, as far as it could be read. */
export interface SalvagedDb {
  readonly records: RawRecord[];
  readonly lost: LostRange[];
}

export interface SalvagedSnapshot {
  readonly metaPage: number;
  readonly txnId: bigint;
  /** The named databases the main DB lists, by name (a lost main DB leaves none). */
  readonly dbs: Map<string, SalvagedDb>;
  /** Named databases whose record the main DB holds but whose tree could not be entered at all. */
  readonly mainLost: LostRange[];
  readonly pagesRead: number;
}

export interface SalvagedPages {
  /** The snapshots walked, newest first: the one LMDB would open, then (when it lost anything) the one before. */
  readonly snapshots: SalvagedSnapshot[];
  /** Why no meta page could be used (both damaged), or meta-page damage that was stepped over. */
  readonly metaProblems: string[];
  readonly fileBytes: number;
}

/** Whether `key` lies in the lost range. */
export function inLostRange(range: LostRange, key: Buffer): boolean {
  return (
    (range.from === undefined || Buffer.compare(key, range.from) >= 0) &&
    (range.to === undefined || Buffer.compare(key, range.to) < 0)
  );
}

/** Reads every record of the data file at `path` that can be read. Throws only for I/O errors. */
export function salvagePages(path: string): SalvagedPages {
  const fd = openSync(path, 'r');
  try {
    const fileBytes = fstatSync(fd).size;
    const read = (buffer: Buffer, position: number): number => readFully(fd, buffer, position);
    const metaProblems: string[] = [];
    const metas = readMetas(read, metaProblems);
    const snapshots: SalvagedSnapshot[] = [];
    for (const meta of metas) {
      const snapshot = new SnapshotReader(read, fileBytes, meta).run();
      snapshots.push(snapshot);
      const lostSomething = snapshot.mainLost.length > 0 || [...snapshot.dbs.values()].some((db) => db.lost.length > 0);
      if (!lostSomething) break;
    }
    return { snapshots, metaProblems, fileBytes };
  } finally {
    closeSync(fd);
  }
}

/** The sound meta pages, newest first (mdb_pick_meta opens the one with the larger txnid). */
function readMetas(read: (buffer: Buffer, position: number) => number, problems: string[]): Meta[] {
  const metas: Meta[] = [];
  const head = Buffer.alloc(PAGE_HEADER_BYTES + META_BYTES);
  if (read(head, 0) < head.length) {
    problems.push('the file is too short for an LMDB meta page');
    return metas;
  }
  const first = readMeta(head, 0);
  if (first.valid === undefined) metas.push(first);
  else problems.push(`meta page 0 ${first.valid}`);
  // Page 1 lies one page in; with page 0 damaged its page size is unknown, so try each size LMDB allows.
  const sizes = first.valid === undefined ? [first.pageBytes] : [4096, 512, 1024, 2048, 8192, 16384, 32768, 65536, 256];
  for (const pageBytes of sizes) {
    const second = Buffer.alloc(PAGE_HEADER_BYTES + META_BYTES);
    if (read(second, pageBytes) < second.length) continue;
    const meta = readMeta(second, 1);
    if (meta.valid === undefined && meta.pageBytes === pageBytes) {
      metas.push(meta);
      break;
    }
    if (sizes.length === 1)
      problems.push(`meta page 1 ${meta.valid ?? `has page size ${meta.pageBytes}, meta page 0 ${pageBytes}`}`);
  }
  return metas.sort((a, b) => (a.txnId === b.txnId ? a.page - b.page : a.txnId > b.txnId ? -1 : 1));
}

function readFully(fd: number, buffer: Buffer, position: number): number {
  let done = 0;
  while (done < buffer.length) {
    const n = readSync(fd, buffer, done, buffer.length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** Bounds of the keys a subtree may hold. */
interface Bounds {
  readonly from: Buffer | undefined;
  readonly to: Buffer | undefined;
}

class SnapshotReader {
  readonly #read: (buffer: Buffer, position: number) => number;
  readonly #meta: Meta;
  readonly #pageBytes: number;
  readonly #filePages: number;
  readonly #lastPage: number;
  readonly #seen = new Set<number>();
  #pagesRead = 0;

  constructor(read: (buffer: Buffer, position: number) => number, fileBytes: number, meta: Meta) {
    this.#read = read;
    this.#meta = meta;
    this.#pageBytes = meta.pageBytes;
    this.#filePages = Math.floor(fileBytes / meta.pageBytes);
    this.#lastPage = Number(meta.lastPage);
  }

  run(): SalvagedSnapshot {
    const main = this.#walkTree(this.#meta.main);
    const dbs = new Map<string, SalvagedDb>();
    const mainLost = [...main.lost];
    for (const { key, value } of main.records) {
      if (value.length !== DB_RECORD_BYTES) continue;
      const name = key.toString('utf8').replace(/\0+$/, '');
      // The main DB's leaves hold one 48-byte MDB_db per named DB (#leafNode keeps only those).
      const tree = readTree(value, 0, name);
      dbs.set(name, this.#walkTree(tree));
    }
    return { metaPage: this.#meta.page, txnId: this.#meta.txnId, dbs, mainLost, pagesRead: this.#pagesRead };
  }

  #walkTree(tree: Tree): SalvagedDb {
    const db: SalvagedDb = { records: [], lost: [] };
    if (tree.root === P_INVALID) return db;
    const all: Bounds = { from: undefined, to: undefined };
    // seenstore's databases have no persistent flags (page-walk.ts #walkTree): a flag would change how pages read.
    if (tree.db !== 'main' && tree.flags !== 0)
      this.#lose(db, tree.db, all, -1, `its record has flags 0x${tree.flags.toString(16)}`);
    else if (tree.depth < 1 || tree.depth > MAX_DEPTH)
      this.#lose(db, tree.db, all, -1, `its record says depth ${tree.depth}`);
    else this.#walkPage(db, tree.db, tree.root, 1, all);
    // LMDB keeps md_entries exact (page-walk.ts #walkTree). A tree read whole that disagrees was
    // entered at a page that is not its root (a damaged root pointer that reaches another sound
    // page): its records belong to something else, and the whole database is lost.
    if (db.lost.length === 0 && BigInt(db.records.length) !== tree.entries) {
      const found = db.records.length;
      db.records.length = 0;
      this.#lose(
        db,
        tree.db,
        all,
        Number(tree.root),
        `its record counts ${tree.entries} entries, the tree at its root page holds ${found}: the root is not its own`,
      );
    }
    return db;
  }

  #lose(db: SalvagedDb, name: string, bounds: Bounds, page: number, problem: string): void {
    db.lost.push({ db: name, from: bounds.from, to: bounds.to, page, problem });
  }

  #walkPage(db: SalvagedDb, name: string, pgno: bigint, level: number, bounds: Bounds): void {
    const page = this.#page(pgno, level);
    if (typeof page === 'string') {
      this.#lose(db, name, bounds, pgno > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(pgno), page);
      return;
    }
    const nodes = this.#nodeOffsets(page);
    if (typeof nodes === 'string') {
      this.#lose(db, name, bounds, Number(pgno), nodes);
      return;
    }
    // Follow the page's own type: a damaged depth in a DB record must not lose a sound tree.
    if (page.readUInt16LE(18) === P_BRANCH) {
      nodes.forEach((at, i) => {
        const child =
          BigInt(page.readUInt16LE(at)) |
          (BigInt(page.readUInt16LE(at + 2)) << 16n) |
          (BigInt(page.readUInt16LE(at + 4)) << 32n);
        // A branch's first key is empty (mdb.c: the leftmost child has no separator); its bound is the parent's.
        const from = i === 0 ? bounds.from : nodeKey(page, at);
        const to = i + 1 < nodes.length ? nodeKey(page, nodes[i + 1]!) : bounds.to;
        this.#walkPage(db, name, child, level + 1, { from, to });
      });
      return;
    }
    let previous: Buffer | undefined;
    for (const at of nodes) {
      const key = nodeKey(page, at);
      // Keys on a page are in order, inside the bounds its parent gives (mdb_cursor_put and
      // mdb_page_split keep both). A key out of place has a damaged size or offset: the real key of
      // that node is unknown, so the whole page's range counts as lost (its other records are kept).
      const inPlace =
        (previous === undefined || Buffer.compare(key, previous) > 0) &&
        (bounds.from === undefined || Buffer.compare(key, bounds.from) >= 0) &&
        (bounds.to === undefined || Buffer.compare(key, bounds.to) < 0);
      if (!inPlace) this.#lose(db, name, bounds, Number(pgno), `a key is out of order on page ${pgno}`);
      else this.#leafNode(db, name, page, Number(pgno), at, key, bounds);
      previous = key;
    }
  }

  /** One leaf node's record; a node that fails loses its page's range (`bounds`): its key may be damaged too. */
  #leafNode(db: SalvagedDb, name: string, page: Buffer, pgno: number, at: number, key: Buffer, bounds: Bounds): void {
    const flags = page.readUInt16LE(at + 4);
    const dataBytes = page.readUInt16LE(at) + page.readUInt16LE(at + 2) * 0x10000;
    const data = at + NODE_HEADER_BYTES + key.length;
    const exact = bounds;
    if (
      (flags & ~(F_BIGDATA | F_SUBDATA | F_DUPDATA)) !== 0 ||
      flags & F_DUPDATA ||
      (flags & F_BIGDATA && flags & F_SUBDATA)
    ) {
      this.#lose(db, name, exact, pgno, `a node has flags 0x${flags.toString(16)}`);
      return;
    }
    if (flags & F_SUBDATA) {
      if (name === 'main' && dataBytes === DB_RECORD_BYTES && data + DB_RECORD_BYTES <= this.#pageBytes)
        db.records.push({ key, value: Buffer.from(page.subarray(data, data + DB_RECORD_BYTES)) });
      else this.#lose(db, name, exact, pgno, 'a node names a database where seenstore keeps none');
      return;
    }
    if (!(flags & F_BIGDATA)) {
      if (data + dataBytes > this.#pageBytes)
        this.#lose(db, name, exact, pgno, `a node's ${dataBytes} bytes of data run past the page end`);
      else db.records.push({ key, value: Buffer.from(page.subarray(data, data + dataBytes)) });
      return;
    }
    const value =
      data + OVERFLOW_REF_BYTES <= this.#pageBytes
        ? this.#overflowValue(page.readBigUInt64LE(data), page.readBigUInt64LE(data + 16), dataBytes)
        : 'its overflow reference runs past the page end';
    if (typeof value === 'string') this.#lose(db, name, exact, pgno, value);
    else db.records.push({ key, value });
  }

  /** A big value: the run's head is checked as the walk checks it, then `dataBytes` are read after its header. */
  #overflowValue(first: bigint, pages: bigint, dataBytes: number): Buffer | string {
    const needed = BigInt(Math.floor((PAGE_HEADER_BYTES - 1 + dataBytes) / this.#pageBytes) + 1);
    if (pages < needed || first < 2n || first + pages - 1n > BigInt(this.#lastPage))
      return `an overflow run at page ${first} of ${pages} pages cannot hold ${dataBytes} bytes inside pages 2..${this.#lastPage}`;
    const start = Number(first);
    if (start + Number(pages) > this.#filePages)
      return `the overflow run at page ${start} lies beyond the end of the file`;
    const bytes = Buffer.alloc(PAGE_HEADER_BYTES + dataBytes);
    if (this.#read(bytes, start * this.#pageBytes) < bytes.length)
      return `the overflow run at page ${start} could not be read whole`;
    this.#pagesRead += Number(needed);
    const problem = this.#headerProblem(bytes, first);
    if (problem !== undefined) return `overflow page ${start} ${problem}`;
    if (bytes.readUInt16LE(18) !== P_OVERFLOW || BigInt(bytes.readUInt32LE(20)) !== pages)
      return `page ${start} does not start an overflow run of ${pages} pages`;
    return bytes.subarray(PAGE_HEADER_BYTES);
  }

  /** Page `pgno` read and checked, or what is wrong with it. */
  #page(pgno: bigint, level: number): Buffer | string {
    if (pgno < 2n || pgno > BigInt(this.#lastPage))
      return `a pointer to page ${pgno}, outside pages 2..${this.#lastPage}`;
    const n = Number(pgno);
    if (level > MAX_DEPTH) return `page ${n} lies deeper than LMDB's ${MAX_DEPTH} levels`;
    if (this.#seen.has(n)) return `page ${n} is reached twice`;
    this.#seen.add(n);
    if (n >= this.#filePages) return `page ${n} lies beyond the end of the file (${this.#filePages} pages)`;
    const page = Buffer.alloc(this.#pageBytes);
    if (this.#read(page, n * this.#pageBytes) < page.length) return `page ${n} could not be read whole`;
    this.#pagesRead++;
    const problem = this.#headerProblem(page, pgno);
    if (problem !== undefined) return `page ${n} ${problem}`;
    const flags = page.readUInt16LE(18);
    if (flags !== P_BRANCH && flags !== P_LEAF)
      return `page ${n} has flags 0x${flags.toString(16)}, neither a branch nor a leaf`;
    return page;
  }

  /** mdb_page_flush writes a page at pgno * psize with its own number and the committing txnid. */
  #headerProblem(page: Buffer, pgno: bigint): string | undefined {
    if (page.readBigUInt64LE(0) !== pgno) return `carries page number ${page.readBigUInt64LE(0)}`;
    if (page.readBigUInt64LE(8) > this.#meta.txnId)
      return `was written by txn ${page.readBigUInt64LE(8)}, after the snapshot's txn ${this.#meta.txnId}`;
    return undefined;
  }

  /** The node offsets of a branch or leaf page, each with its key inside the page (page-walk.ts #nodeOffsets). */
  #nodeOffsets(page: Buffer): number[] | string {
    const lower = page.readUInt16LE(20);
    const upper = page.readUInt16LE(22);
    const end = this.#pageBytes - PAGE_HEADER_BYTES;
    if (lower % 2 !== 0 || lower === 0 || lower > upper || upper > end)
      return `page ${page.readBigUInt64LE(0)} has free-space bounds lower ${lower}, upper ${upper}`;
    const offsets: number[] = [];
    for (let i = 0; i < lower / 2; i++) {
      const ptr = page.readUInt16LE(PAGE_HEADER_BYTES + 2 * i);
      if (ptr < upper || ptr % 2 !== 0 || ptr + NODE_HEADER_BYTES > end)
        return `page ${page.readBigUInt64LE(0)} node ${i} starts outside the node area`;
      const at = PAGE_HEADER_BYTES + ptr;
      if (ptr + NODE_HEADER_BYTES + page.readUInt16LE(at + 6) > end)
        return `page ${page.readBigUInt64LE(0)} node ${i} has a key past the page end`;
      offsets.push(at);
    }
    return offsets;
  }
}

function nodeKey(page: Buffer, at: number): Buffer {
  return Buffer.from(page.subarray(at + NODE_HEADER_BYTES, at + NODE_HEADER_BYTES + page.readUInt16LE(at + 6)));
}
