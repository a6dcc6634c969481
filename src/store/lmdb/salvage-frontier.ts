import { SeenStoreError } from '../../errors.js';
import type { FrontierSettings } from '../backend.js';
import { decodeBlock } from './frontier-blocks.js';
import { KeyReader, readScopeNumber, scopePrefix } from './frontier-keys.js';
import * as legacy from './frontier-legacy.js';
import { EntryCodec, readQueue, readState, type EntryRecord, type RecordDecoder } from './frontier-records.js';
import { decodeKey } from './keys.js';

/** A frontier's counters and settings as salvage found them. */
export interface SalvagedFrontierState {
  readonly nextSeq: number;
  /** Entries its counts held. */
  readonly entries: number;
  readonly done: number;
  readonly failed: number;
  readonly settings: FrontierSettings;
  readonly queueKeyPinned: boolean;
}

/** A queue's politeness and completed count. */
export interface SalvagedQueue {
  readonly completed: number;
  readonly blockedUntilMs: number;
  readonly delayMs?: number;
  readonly crawlLimit?: number;
  readonly lastTakeMs?: number;
}

export interface SalvagedFrontier {
  state: SalvagedFrontierState | undefined;
  readonly queues: Map<string, SalvagedQueue>;
  /** Entries by seq (format 6: by id). */
  readonly entries: Map<number, EntryRecord>;
}

export const emptyFrontier = (): SalvagedFrontier => ({ state: undefined, queues: new Map(), entries: new Map() });

interface RawRecord {
  readonly key: Buffer;
  readonly value: Buffer;
  readonly where: string;
}

/**
 * The frontier's records read from pages, in whatever order the pages gave them: format 7's byte
 * keys (the `queue` database) and format 6's records (the `frontier` database of an older store).
 * Only the state, queue records and entries are kept; the indexes are rebuilt by the copy. Format
 * 7's keys name their scope and queue by number, so its records are resolved once all are read.
 */
export class FrontierSalvage {
  readonly #decoder: RecordDecoder;
  readonly #onSkip: (where: string, problem: string) => void;
  readonly #scopeNames = new Map<number, string>();
  readonly #raw: RawRecord[] = [];

  constructor(decoder: RecordDecoder, onSkip: (where: string, problem: string) => void) {
    this.#decoder = decoder;
    this.#onSkip = onSkip;
  }

  /** A record of the format-7 database (`queue`). */
  add(key: Buffer, value: Buffer): void {
    if (key[0] === 0) {
      if (key[1] === 0x6e)
        this.#scopeNames.set(
          readScopeNumber(value, `frontier scope ${key.toString('utf8', 2)}`),
          key.toString('utf8', 2),
        );
      return;
    }
    this.#raw.push({ key, value, where: `queue ${key.toString('hex')}` });
  }

  /** A record of the format-6 database (`frontier`), into its scope's frontier. */
  addLegacy(rawKey: Buffer, value: Buffer, frontierOf: (scope: string) => SalvagedFrontier): void {
    const [scope, tag, id] = (Array.isArray(decodeKey(rawKey)) ? decodeKey(rawKey) : []) as [unknown, unknown, unknown];
    if (typeof scope !== 'string')
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `frontier ${rawKey.toString('hex')}: not a key of the frontier database`,
      );
    const frontier = frontierOf(scope);
    if (tag === 's') {
      const s = legacy.readState(this.#decoder, value, scope);
      frontier.state = {
        nextSeq: s.nextId,
        entries: s.entries,
        done: s.done,
        failed: s.failed ?? 0,
        settings: s.settings,
        queueKeyPinned: s.queueKeyPinned === true,
      };
    } else if (tag === 'e' && typeof id === 'number') {
      const { v: _v, ...entry } = legacy.readEntry(this.#decoder, value, scope, id);
      frontier.entries.set(id, { ...entry, createdMs: legacy.createdMsOf(entry as legacy.EntryRecord) });
    } else if (tag === 'q' && typeof id === 'string') {
      frontier.queues.set(id, politeness(legacy.readQueue(this.#decoder, value, scope, id)));
    }
  }

  /** Resolves the format-7 records into their scopes' frontiers. */
  finish(frontierOf: (scope: string) => SalvagedFrontier): void {
    const byScope = new Map<string, RawRecord[]>();
    for (const record of this.#raw) {
      const scope = this.#scopeOf(record.key);
      if (scope === undefined) {
        this.#onSkip(record.where, "its scope's number has no name (the record naming it was lost)");
        continue;
      }
      const list = byScope.get(scope.name) ?? [];
      list.push(record);
      byScope.set(scope.name, list);
    }
    for (const [name, records] of byScope) this.#scope(name, records, frontierOf(name));
  }

  #scope(scope: string, records: readonly RawRecord[], frontier: SalvagedFrontier): void {
    const prefixLength = scopePrefix(this.#numberOf(scope)).length;
    const parts = new KeyReader(prefixLength);
    const names = new Map<number, string>();
    const tagOf = (record: RawRecord): string => String.fromCharCode(record.key[prefixLength]!);
    for (const record of records) {
      this.#attempt(record, () => {
        const tag = tagOf(record);
        if (tag === 's') {
          const s = readState(this.#decoder, record.value, scope);
          frontier.state = {
            nextSeq: s.nextSeq,
            entries: s.entries,
            done: s.done,
            failed: s.failed,
            settings: s.settings,
            queueKeyPinned: s.queueKeyPinned === true,
          };
        } else if (tag === 'k') {
          const name = parts.text(record.key);
          const queue = readQueue(this.#decoder, record.value, scope, name);
          names.set(queue.no, name);
          frontier.queues.set(name, politeness(queue));
        }
      });
    }
    const codec = new EntryCodec({ decodeMeta: this.#decoder.decodeMeta, encodeRecord: () => Buffer.alloc(0) });
    const queueName = (q: number): string => {
      const name = names.get(q);
      if (name === undefined)
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `queue number ${q}'s record was lost: its key (and so its URLs' hosts) is unknown`,
        );
      return name;
    };
    for (const record of records) {
      this.#attempt(record, () => {
        const tag = tagOf(record);
        if (tag === 'w') {
          const { q, dueMs, seq } = parts.waiting(record.key);
          // Each entry's own due time is in the block (the key's is a lower bound).
          for (const item of decodeBlock(q, dueMs, seq, record.value, record.where).items) {
            frontier.entries.set(
              item.seq,
              codec.decode(item.bytes, `${record.where} entry ${item.seq}`, { q, dueMs: item.dueMs }, queueName).entry,
            );
          }
        } else if (tag === 'l') {
          frontier.entries.set(
            parts.leased(record.key),
            codec.decode(record.value, record.where, undefined, queueName).entry,
          );
        }
      });
    }
  }

  #attempt(record: RawRecord, read: () => void): void {
    try {
      read();
    } catch (error) {
      this.#onSkip(record.where, error instanceof Error ? error.message : String(error));
    }
  }

  /** The scope whose number the key starts with (LEB128), if its name was read. */
  #scopeOf(key: Buffer): { name: string } | undefined {
    let end = 0;
    while (end < key.length && (key[end]! & 0x80) !== 0) end++;
    if (end >= key.length - 1) return undefined;
    const name = this.#scopeNames.get(readScopeNumber(key.subarray(0, end + 1), 'a frontier key'));
    return name === undefined ? undefined : { name };
  }

  #numberOf(scope: string): number {
    for (const [no, name] of this.#scopeNames) if (name === scope) return no;
    throw new SeenStoreError('INTERNAL', `invariant broken: salvage has no number for scope ${scope}`);
  }
}

function politeness(queue: {
  completed: number;
  blockedUntilMs: number;
  delayMs?: number;
  crawlLimit?: number;
  lastTakeMs?: number;
}): SalvagedQueue {
  const { completed, blockedUntilMs, delayMs, crawlLimit, lastTakeMs } = queue;
  return {
    completed,
    blockedUntilMs,
    ...(delayMs === undefined ? {} : { delayMs }),
    ...(crawlLimit === undefined ? {} : { crawlLimit }),
    ...(lastTakeMs === undefined ? {} : { lastTakeMs }),
  };
}
