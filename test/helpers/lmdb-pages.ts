import { readFileSync } from 'node:fs';
import { walkPages } from '../../src/store/lmdb/page-walk.js';

/** A structural byte of an LMDB data file: where it is and what it holds. */
export interface StructuralPlace {
  readonly offset: number;
  readonly what: string;
}

const PAGE_BYTES = 4096;
const HEADER_BYTES = 24;

/**
 * Structural places of an LMDB data file (24-byte page headers, as the lmdb bundled with lmdb-js
 * writes them) on the pages the newest snapshot uses (as the page walker finds them): meta fields,
 * the headers of branch, leaf and overflow pages, node offsets, key sizes, branch child pointers,
 * the page numbers of overflow references and the roots of named databases.
 */
export function structuralPlaces(path: string): StructuralPlace[] {
  const data = readFileSync(path);
  const used = new Map<number, string>();
  walkPages(path, { visit: (page, db) => used.set(page, db) });
  const places: StructuralPlace[] = [];
  for (const [field, at] of [
    ['txnid', 24 + 128],
    ['last page', 24 + 120],
    ['main DB root', 24 + 72 + 40],
    ['free DB root', 24 + 24 + 40],
    ['main DB depth', 24 + 72 + 6],
  ] as const) {
    for (const meta of [0, 1]) places.push({ offset: meta * PAGE_BYTES + at, what: `meta page ${meta} ${field}` });
  }
  for (let pgno = 2; pgno < data.length / PAGE_BYTES; pgno++) {
    const base = pgno * PAGE_BYTES;
    const db = used.get(pgno);
    if (db === undefined) continue;
    const flags = data.readUInt16LE(base + 18);
    const kind = flags === 1 ? 'branch' : flags === 2 ? 'leaf' : 'overflow';
    places.push({ offset: base, what: `${kind} page ${pgno} (${db}) page number` });
    places.push({ offset: base + 18, what: `${kind} page ${pgno} (${db}) flags` });
    places.push({
      offset: base + 20,
      what: `${kind} page ${pgno} (${db}) ${kind === 'overflow' ? 'page count' : 'lower bound'}`,
    });
    if (kind === 'overflow') continue;
    places.push({ offset: base + 23, what: `${kind} page ${pgno} (${db}) upper bound` });
    const lower = data.readUInt16LE(base + 20);
    for (let i = 0; i < lower / 2; i++) {
      places.push({
        offset: base + HEADER_BYTES + 2 * i + 1,
        what: `${kind} page ${pgno} (${db}) offset of node ${i}`,
      });
      const node = base + HEADER_BYTES + data.readUInt16LE(base + HEADER_BYTES + 2 * i);
      if (kind === 'branch') {
        places.push({ offset: node, what: `branch page ${pgno} (${db}) child pointer ${i}` });
        continue;
      }
      places.push({ offset: node + 6, what: `leaf page ${pgno} (${db}) key size of node ${i}` });
      const nodeFlags = data.readUInt16LE(node + 4);
      const value = node + 8 + data.readUInt16LE(node + 6);
      if (nodeFlags & 0x01)
        places.push({ offset: value, what: `leaf page ${pgno} (${db}) overflow page number of node ${i}` });
      if (nodeFlags & 0x02)
        places.push({ offset: value + 40, what: `leaf page ${pgno} (${db}) root of the named DB in node ${i}` });
    }
  }
  return places;
}
