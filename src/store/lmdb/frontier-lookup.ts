import { SeenStoreError } from '../../errors.js';
import type { StoreEnv } from './env.js';
import { KeyReader, KeyWriter } from './frontier-keys.js';
import { decodeBlock, type Block, type BlockItem } from './frontier-blocks.js';
import {
  EntryCodec,
  readLocation,
  urlHash,
  type BlockId,
  type EntryRecord,
  type EntryRef,
} from './frontier-records.js';

export type FrontierDb = NonNullable<StoreEnv['frontierDb']>;

/** An entry and the id that names it; a waiting entry's block. */
export interface Found {
  readonly ref: EntryRef;
  readonly entry: EntryRecord;
  readonly block?: BlockId;
}

/**
 * Finding a scope's stored entries (frontier-keys.ts): a leased one by its seq, a waiting one
 * through its location, either by id or by URL; and the queue keys their numbers stand for. Reads
 * what is committed (or written so far by the transaction it runs in); the write transaction keeps
 * its own cache of what it changed on top (frontier-txn.ts).
 */
export class FrontierLookup {
  readonly keys: KeyWriter;
  readonly parts: KeyReader;
  readonly codec: EntryCodec;
  readonly #db: FrontierDb;
  readonly #scope: string;
  readonly #names = new Map<number, string>();

  constructor(env: StoreEnv, db: FrontierDb, scope: string, prefix: Buffer) {
    this.#db = db;
    this.#scope = scope;
    this.keys = new KeyWriter(prefix);
    this.parts = new KeyReader(prefix.length);
    this.codec = new EntryCodec(env);
  }

  /**
   * The entry an id names, or undefined when there is none. `blockOf` reads a waiting entry's
   * block: a write transaction passes its own copies, which hold the entries it added.
   */
  byRef(ref: EntryRef, blockOf: (id: BlockId) => Block | undefined = (id) => this.block(id)): Found | undefined {
    const leased = this.leased(ref.seq);
    if (leased !== undefined) return leased.ref.hash === ref.hash ? leased : undefined;
    const location = this.#db.getBinary(this.keys.location(ref.hash, ref.seq));
    if (location === undefined) return undefined;
    const where = `frontier location ${this.#scope}/${ref.seq}`;
    const id = readLocation(location, ref.seq, where);
    const block = blockOf(id);
    const item = block?.items.find((i) => i.seq === ref.seq);
    if (item === undefined)
      throw new SeenStoreError('STORE_CORRUPT', `${where} names a waiting entry that is not there`);
    return { ref, entry: this.entryOf(block!, item), block: id };
  }

  /** A block as stored, or undefined. */
  block(id: BlockId): Block | undefined {
    const value = this.#db.getBinary(this.keys.waiting(id.q, id.dueMs, id.blockSeq));
    return value === undefined
      ? undefined
      : decodeBlock(id.q, id.dueMs, id.blockSeq, value, this.#blockWhere(id.blockSeq));
  }

  /** A block from its key and value. */
  blockOf(key: Buffer, value: Buffer): Block {
    const { q, dueMs, seq } = this.parts.waiting(key);
    return decodeBlock(q, dueMs, seq, value, this.#blockWhere(seq));
  }

  /** Every entry of a block, in take order. */
  entriesOf(block: Block): Found[] {
    const id: BlockId = { q: block.q, dueMs: block.dueMs, blockSeq: block.blockSeq };
    return block.items.map((item) => {
      const entry = this.entryOf(block, item);
      return { ref: { seq: item.seq, hash: urlHash(entry.url) }, entry, block: id };
    });
  }

  /** One waiting entry of a block. */
  entryOf(block: Block, item: BlockItem): EntryRecord {
    return this.codec.decode(
      item.bytes,
      `frontier entry ${this.#scope}/${item.seq}`,
      { q: block.q, dueMs: item.dueMs },
      (q) => this.queueName(q),
    ).entry;
  }

  /** The seqs of the entries whose URL has this hash (one in almost every case). */
  seqsOfHash(hash: number): number[] {
    return [...this.#db.getKeys(this.keys.hashRange(hash))].map((key) => this.parts.location(key as Buffer).seq);
  }

  /** The entry of a URL as stored, if it is in the frontier. */
  byUrl(url: string): Found | undefined {
    const hash = urlHash(url);
    for (const seq of this.seqsOfHash(hash)) {
      const found = this.byRef({ seq, hash });
      if (found?.entry.url === url) return found;
    }
    return undefined;
  }

  /** A leased entry by its seq, or undefined when it is not leased. */
  leased(seq: number): Found | undefined {
    const value = this.#db.getBinary(this.keys.leased(seq));
    if (value === undefined) return undefined;
    const entry = this.#decode(value, seq, undefined);
    return { ref: { seq, hash: urlHash(entry.url) }, entry };
  }

  /** The key of queue number q. */
  queueName(q: number): string {
    let name = this.#names.get(q);
    if (name === undefined) {
      const bytes = this.#db.getBinary(this.keys.queueName(q));
      if (bytes === undefined)
        throw new SeenStoreError('STORE_CORRUPT', `frontier queue number ${q} of ${this.#scope} has no key`);
      name = Buffer.from(bytes).toString('utf8');
      this.#names.set(q, name);
    }
    return name;
  }

  /** Queue number q is the queue `name` (known from its record). */
  knowQueue(q: number, name: string): void {
    this.#names.set(q, name);
  }

  #blockWhere(blockSeq: number): string {
    return `frontier block ${this.#scope}/${blockSeq}`;
  }

  #decode(
    value: Buffer,
    seq: number,
    waiting: { readonly q: number; readonly dueMs: number } | undefined,
  ): EntryRecord {
    return this.codec.decode(value, `frontier entry ${this.#scope}/${seq}`, waiting, (q) => this.queueName(q)).entry;
  }
}
