import { SeenStoreError } from '../../errors.js';

/**
 * A queue's waiting URLs are kept in blocks (docs/format.md "The frontier"): one key
 * `P 'w' q due blockSeq` holds entries of queue q in take order (due time, then seq), all at or
 * after (due, blockSeq), so the queue's key and LMDB's per-key cost are paid once per block, not
 * per URL. A queue's blocks hold disjoint, increasing ranges of (due, seq): the blocks in key
 * order, and the entries of each in order, are the queue's take order. A block's key never changes
 * while it holds entries (its first entries may be taken: the key stays a lower bound), so the
 * location index can name it.
 *
 * Value: varint count, then per entry varint (due − the key's due), zigzag varint (seq − the
 * previous entry's seq, the first's from blockSeq), varint length, the entry's bytes (EntryCodec's
 * waiting form).
 */

/** A block holds at most this many entries... */
export const BLOCK_MAX_ENTRIES = 64;
/** ...and at most this many bytes of entries (LMDB keeps a page's values inline below ~2 KB). */
export const BLOCK_MAX_BYTES = 1_200;

export interface BlockItem {
  readonly dueMs: number;
  readonly seq: number;
  readonly bytes: Buffer;
}

/** Take order: due time, then seq. */
export function before(
  a: { readonly dueMs: number; readonly seq: number },
  b: { readonly dueMs: number; readonly seq: number },
): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq);
}

/** One block: where it is and what it holds, in seq order. */
export interface Block {
  readonly q: number;
  readonly dueMs: number;
  readonly blockSeq: number;
  readonly items: BlockItem[];
  /** Bytes of its entries. */
  size: number;
}

const unzig = (n: number): number => (n % 2 === 0 ? n / 2 : -(n + 1) / 2);

export function decodeBlock(q: number, dueMs: number, blockSeq: number, value: Buffer, where: string): Block {
  const items: BlockItem[] = [];
  let at = 0;
  const varint = (): number => {
    let n = 0;
    let scale = 1;
    for (;;) {
      if (at >= value.length) throw new SeenStoreError('STORE_CORRUPT', `${where}: cut short`);
      const b = value[at++]!;
      n += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return n;
      scale *= 128;
      if (scale > 2 ** 56) throw new SeenStoreError('STORE_CORRUPT', `${where}: a number over 2^53`);
    }
  };
  const count = varint();
  let seq = blockSeq;
  let size = 0;
  for (let i = 0; i < count; i++) {
    const item = { dueMs: dueMs + varint(), seq: seq + unzig(varint()) };
    seq = item.seq;
    if (i === 0 ? before(item, { dueMs, seq: blockSeq }) : !before(items[i - 1]!, item))
      throw new SeenStoreError('STORE_CORRUPT', `${where}: entries out of order`);
    const length = varint();
    if (at + length > value.length || length === 0) throw new SeenStoreError('STORE_CORRUPT', `${where}: cut short`);
    items.push({ ...item, bytes: value.subarray(at, at + length) });
    at += length;
    size += length;
  }
  if (at !== value.length || count === 0)
    throw new SeenStoreError('STORE_CORRUPT', `${where}: ${count === 0 ? 'an empty block' : 'bytes past its entries'}`);
  return { q, dueMs, blockSeq, items, size };
}

/** One reused buffer for encoding blocks (LMDB copies a value as it is put). */
let scratch = Buffer.allocUnsafe(8192);

/** The block's value: a view of a reused buffer, good until the next encode. */
export function encodeBlock(block: Block): Buffer {
  const need = 16 + block.items.length * 24 + block.size;
  if (scratch.length < need) scratch = Buffer.allocUnsafe(Math.max(need, scratch.length * 2));
  const out = scratch;
  let at = 0;
  const varint = (n: number): void => {
    let v = n;
    while (v >= 128) {
      out[at++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    out[at++] = v;
  };
  varint(block.items.length);
  let previous = block.blockSeq;
  for (const { dueMs, seq, bytes } of block.items) {
    varint(dueMs - block.dueMs);
    const delta = seq - previous;
    varint(delta >= 0 ? delta * 2 : -delta * 2 - 1);
    varint(bytes.length);
    bytes.copy(out, at);
    at += bytes.length;
    previous = seq;
  }
  return out.subarray(0, at);
}

/** Whether an entry of `bytes` fits in the block. */
export function hasRoom(block: Block, bytes: number): boolean {
  return block.items.length < BLOCK_MAX_ENTRIES && block.size + bytes <= BLOCK_MAX_BYTES;
}

/** Puts an entry in the block at its place in take order. */
export function addItem(block: Block, item: BlockItem): void {
  let i = block.items.length;
  while (i > 0 && before(item, block.items[i - 1]!)) i--;
  block.items.splice(i, 0, item);
  block.size += item.bytes.length;
}

/** Takes entry `seq` out of the block; false when it is not there. */
export function removeItem(block: Block, seq: number): boolean {
  const i = block.items.findIndex((item) => item.seq === seq);
  if (i < 0) return false;
  block.size -= block.items[i]!.bytes.length;
  block.items.splice(i, 1);
  return true;
}
