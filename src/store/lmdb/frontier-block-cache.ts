import { SeenStoreError } from '../../errors.js';
import { addItem, before, encodeBlock, hasRoom, removeItem, type Block } from './frontier-blocks.js';
import type { FrontierDb, FrontierLookup } from './frontier-lookup.js';
import type { BlockId } from './frontier-records.js';

const idText = (id: BlockId): string => `${id.q}:${id.dueMs}:${id.blockSeq}`;
const idOf = (block: Block): BlockId => ({ q: block.q, dueMs: block.dueMs, blockSeq: block.blockSeq });

/**
 * The waiting blocks one write transaction changes (frontier-blocks.ts): read once, changed in
 * memory, written back by `flush` (a queue's before a read of a range of its blocks; all at settle), so an
 * enqueue of many URLs to one queue writes each block once. The last block this transaction
 * started for a queue is remembered: a URL after every entry of the queue in take order (a new
 * URL, due no earlier than the others) joins it while it has room.
 */
export class BlockCache {
  readonly #db: FrontierDb;
  readonly #lookup: FrontierLookup;
  readonly #blocks = new Map<string, Block>();
  /** The changed blocks, by queue number. */
  readonly #dirty = new Map<number, Set<string>>();
  /** Each queue's last block, where this transaction started it. */
  readonly #tails = new Map<number, Block>();

  constructor(db: FrontierDb, lookup: FrontierLookup) {
    this.#db = db;
    this.#lookup = lookup;
  }

  /** A block by its id (this transaction's copy when it has one). */
  get(id: BlockId): Block | undefined {
    const text = idText(id);
    let block = this.#blocks.get(text);
    if (block === undefined) {
      block = this.#lookup.block(id);
      if (block !== undefined) this.#blocks.set(text, block);
    }
    return block;
  }

  /** A block read from a range (this transaction's copy when it has one). */
  fromRange(key: Buffer, value: Buffer): Block {
    const { q, dueMs, seq } = this.#lookup.parts.waiting(key);
    const text = idText({ q, dueMs, blockSeq: seq });
    let block = this.#blocks.get(text);
    if (block === undefined) {
      block = this.#lookup.blockOf(key, value);
      this.#blocks.set(text, block);
    }
    return block;
  }

  /**
   * Puts an entry of queue q due at dueMs in its block (by take order); returns the block's id.
   * `afterAll`: the entry comes after every waiting entry of the queue (the caller knows it from
   * the queue's record): it joins the queue's last block if this transaction wrote it and it has
   * room, else starts a block, with no read; a broad crawl's enqueue touches each queue once.
   */
  add(q: number, dueMs: number, seq: number, bytes: Buffer, afterAll: boolean): BlockId {
    const item = { dueMs, seq, bytes };
    let block: Block | undefined;
    if (afterAll) {
      const tail = this.#tails.get(q);
      if (
        tail !== undefined &&
        tail.items.length > 0 &&
        before(tail.items[tail.items.length - 1]!, item) &&
        hasRoom(tail, bytes.length)
      )
        block = tail;
    } else {
      // Among the queue's entries: the block with the greatest key at or before (due, seq).
      const found = this.#before(q, dueMs, seq);
      // Inside its range it must go in it (ranges stay disjoint); after it, while it has room.
      if (found !== undefined && (before(item, found.items[found.items.length - 1]!) || hasRoom(found, bytes.length)))
        block = found;
    }
    if (block === undefined) {
      block = { q, dueMs, blockSeq: seq, items: [], size: 0 };
      this.#blocks.set(idText(block), block);
      if (afterAll) this.#tails.set(q, block);
    }
    addItem(block, item);
    this.#changed(block);
    return idOf(block);
  }

  /** Takes entry `seq` out of its block. */
  remove(id: BlockId, seq: number): void {
    const block = this.get(id);
    if (block === undefined || !removeItem(block, seq))
      throw new SeenStoreError('STORE_CORRUPT', `frontier block ${id.blockSeq} does not hold entry ${seq}`);
    this.#changed(block);
    if (this.#tails.get(id.q) === block) this.#tails.delete(id.q);
  }

  /** Entry `seq`'s bytes changed (its payload). */
  replace(id: BlockId, seq: number, bytes: Buffer): void {
    const block = this.get(id);
    const i = block?.items.findIndex((item) => item.seq === seq) ?? -1;
    if (i < 0) throw new SeenStoreError('STORE_CORRUPT', `frontier block ${id.blockSeq} does not hold entry ${seq}`);
    const old = block!.items[i]!;
    block!.size += bytes.length - old.bytes.length;
    block!.items[i] = { ...old, bytes };
    this.#changed(block!);
  }

  /** Writes the changed blocks (an emptied block is deleted): all, or those of queue q. */
  flush(q?: number): void {
    for (const queue of q === undefined ? [...this.#dirty.keys()] : [q]) {
      for (const text of this.#dirty.get(queue) ?? []) {
        const block = this.#blocks.get(text)!;
        const key = this.#lookup.keys.waiting(block.q, block.dueMs, block.blockSeq);
        if (block.items.length === 0) {
          this.#db.removeSync(key);
          this.#blocks.delete(text);
        } else {
          this.#db.putSync(key, encodeBlock(block));
        }
      }
      this.#dirty.delete(queue);
    }
  }

  #changed(block: Block): void {
    let texts = this.#dirty.get(block.q);
    if (texts === undefined) this.#dirty.set(block.q, (texts = new Set()));
    texts.add(idText(block));
  }

  #before(q: number, dueMs: number, seq: number): Block | undefined {
    this.flush(q);
    const keys = this.#lookup.keys;
    const start = keys.copy(keys.waiting(q, dueMs, seq));
    const end = keys.waitingRange(q, Infinity).start;
    for (const { key, value } of this.#db.getRange({ start, end, reverse: true, limit: 1 }))
      return this.fromRange(key as Buffer, value);
    return undefined;
  }
}
