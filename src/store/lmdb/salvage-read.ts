import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { SeenStoreError } from '../../errors.js';
import type { SalvageSkip } from '../backend.js';
import type { XxHash } from '../../hash/xxhash.js';
import { readEpochHeader, readScopeRecord, type EpochHeader, type ScopeRecord } from '../records.js';
import type { RecordDecoder } from './frontier-records.js';
import { FrontierSalvage, emptyFrontier, type SalvagedFrontier } from './salvage-frontier.js';
import { decodeJournalRecord } from './journal.js';
import { JOURNAL_FILE } from './journal-file.js';
import { decodeKey } from './keys.js';
import { readCheckpointRecord, type CheckpointRecord } from './records.js';
import { salvageJournal } from './salvage-journal.js';
import { inLostRange, salvagePages, type LostRange, type RawRecord, type SalvagedSnapshot } from './salvage-pages.js';

/** Everything readable of one epoch. Chunks are raw records (checked when written); journal records checked. */
export interface SalvagedEpoch {
  readonly header: EpochHeader;
  checkpoint: CheckpointRecord | undefined;
  /** Chunk records by `filter/chunk`. */
  readonly chunks: Map<string, Buffer>;
  /** Journal records (LMDB's and the journal file's) by sequence number. */
  readonly journal: Map<number, Buffer>;
}

export type { SalvagedFrontier } from './salvage-frontier.js';

export interface SalvagedScope {
  record: ScopeRecord | undefined;
  readonly epochs: Map<number, SalvagedEpoch>;
  readonly frontier: SalvagedFrontier;
}

/** What could not be read, one each, by kind (`page`, `record`, `chunk`, `journal`, `frontier`, `delivery`: a run's delivery file). */
export type Skipped = SalvageSkip;

export interface SalvagedStore {
  readonly scopes: Map<string, SalvagedScope>;
  /** Lost key ranges of the chunks database: a chunk key inside one was written and is lost. */
  readonly lostChunks: LostRange[];
  readonly skipped: Skipped[];
  readonly notes: string[];
  readonly pagesRead: number;
}

/** The databases seenstore writes (env.ts). */
const KNOWN_DBS = ['meta', 'chunks', 'journal', 'queue', 'frontier'];

/**
 * Reads the store at `dir` without LMDB: its pages (salvage-pages.ts) and its journal file
 * (salvage-journal.ts), decoding each record with the store's own decoders. Never throws for
 * damage: what cannot be read is listed in `skipped`.
 */
export function readSalvage(dir: string, hash: XxHash): SalvagedStore {
  const pages = salvagePages(join(dir, 'data.mdb'));
  const skipped: Skipped[] = pages.metaProblems.map((problem) => ({
    kind: 'page',
    where: 'data.mdb meta pages',
    problem,
  }));
  const notes: string[] = [];
  if (pages.snapshots.length === 0)
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${join(dir, 'data.mdb')}: neither meta page can be read (${pages.metaProblems.join('; ')}): there is nothing to salvage`,
    );
  const reader = new RecordReader(hash, skipped);
  const [newest, ...older] = pages.snapshots;
  for (const lost of newest!.mainLost) skipped.push(lostPages(lost));
  const names = new Set([...newest!.dbs.keys(), ...older.flatMap((s) => [...s.dbs.keys()])]);
  let lostChunks: LostRange[] = [];
  for (const name of names) {
    if (!KNOWN_DBS.includes(name)) {
      notes.push(`database ${name} is not one seenstore writes: not copied`);
      continue;
    }
    const { records, lost, from } = chooseRecords(name, newest!, older);
    if (from !== newest)
      notes.push(
        `database ${name} was read from the commit before the newest (txn ${from.txnId}): the newest one's main database could not reach it`,
      );
    for (const range of lost) skipped.push(lostPages(range));
    if (name === 'chunks') lostChunks = lost;
    for (const record of records) reader.add(name, record);
  }
  reader.addJournalFile(join(dir, JOURNAL_FILE));
  reader.finishFrontier();
  return {
    scopes: reader.scopes,
    lostChunks,
    skipped,
    notes,
    pagesRead: pages.snapshots.reduce((n, s) => n + s.pagesRead, 0),
  };
}

/**
 * A database's records: the newest snapshot's, and in the key ranges it lost, the commit before's
 * (the same records one commit older, or ones that commit deleted). Chunks are never taken from
 * the older commit: a chunk there may lack bits whose journal records the newest checkpoint
 * deleted, and an older chunk would then answer "new" for URLs acknowledged as seen.
 */
function chooseRecords(
  name: string,
  newest: SalvagedSnapshot,
  older: readonly SalvagedSnapshot[],
): { records: RawRecord[]; lost: LostRange[]; from: SalvagedSnapshot } {
  const own = newest.dbs.get(name);
  if (own === undefined) {
    const from = older.find((s) => s.dbs.has(name))!;
    return { ...from.dbs.get(name)!, from };
  }
  const records = [...own.records];
  if (name !== 'chunks' && own.lost.length > 0) {
    const have = new Set(records.map((r) => r.key.toString('hex')));
    for (const snapshot of older) {
      for (const record of snapshot.dbs.get(name)?.records ?? []) {
        if (own.lost.some((range) => inLostRange(range, record.key)) && !have.has(record.key.toString('hex')))
          records.push(record);
      }
    }
  }
  return { records, lost: own.lost, from: newest };
}

function lostPages(range: LostRange): Skipped {
  const bound = (key: Buffer | undefined, none: string): string => (key === undefined ? none : showKey(key));
  return {
    kind: 'page',
    where: `data.mdb${range.page < 0 ? '' : ` page ${range.page}`} (database ${range.db})`,
    problem: `${range.problem}; ${exactKey(range) ? `its record ${bound(range.from, '')} is lost` : `its keys from ${bound(range.from, 'the first')} to ${bound(range.to, 'the last')} are lost`}`,
  };
}

/** A range of one key (a record whose value could not be read). */
function exactKey(range: LostRange): boolean {
  return (
    range.from !== undefined &&
    range.to !== undefined &&
    range.to.length === range.from.length + 1 &&
    range.to.subarray(0, range.from.length).equals(range.from)
  );
}

/** A key as text for a report: decoded when it decodes (a damaged one may hold anything), else its bytes in hex. */
function showKey(key: Buffer): string {
  try {
    return (
      JSON.stringify(decodeKey(key), (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ??
      key.toString('hex')
    );
  } catch {
    return key.toString('hex');
  }
}

class RecordReader {
  readonly scopes = new Map<string, SalvagedScope>();
  readonly #hash: XxHash;
  readonly #skipped: Skipped[];
  readonly #packr = new Packr({ useRecords: false, mapsAsObjects: true });
  readonly #decoder: RecordDecoder = {
    decodeMeta: (bytes, where) => {
      try {
        return this.#packr.unpack(bytes);
      } catch (error) {
        throw new SeenStoreError('STORE_CORRUPT', `${where} is not valid msgpack`, { cause: error });
      }
    },
  };
  readonly #checkpoints: [string, number, CheckpointRecord][] = [];
  readonly #pendingChunks: [string, number, string, Buffer][] = [];
  readonly #pendingJournal: [string, number, number, Buffer, string][] = [];
  readonly #frontier: FrontierSalvage;

  constructor(hash: XxHash, skipped: Skipped[]) {
    this.#hash = hash;
    this.#skipped = skipped;
    this.#frontier = new FrontierSalvage(this.#decoder, (where, problem) =>
      skipped.push({ kind: 'frontier', where, problem }),
    );
  }

  #scope(name: string): SalvagedScope {
    let scope = this.scopes.get(name);
    if (scope === undefined) {
      scope = { record: undefined, epochs: new Map(), frontier: emptyFrontier() };
      this.scopes.set(name, scope);
    }
    return scope;
  }

  add(db: string, { key: rawKey, value }: RawRecord): void {
    if (db === 'queue') {
      this.#guarded('frontier', `queue ${rawKey.toString('hex')}`, () => this.#frontier.add(rawKey, value));
      return;
    }
    let key: unknown;
    try {
      key = decodeKey(rawKey);
    } catch (error) {
      this.#skipped.push({
        kind: 'record',
        where: `database ${db} key ${rawKey.toString('hex')}`,
        problem: `the key cannot be decoded (${String(error)})`,
      });
      return;
    }
    const where = `${db} ${showKey(rawKey)}`;
    try {
      if (db === 'meta') this.#meta(key, value, where);
      else if (db === 'chunks')
        this.#keyed(key, 4, where, ([scope, epoch, filter, chunk]) =>
          this.#pendingChunks.push([scope as string, epoch as number, `${filter}/${chunk}`, value]),
        );
      else if (db === 'journal')
        this.#keyed(key, 3, where, ([scope, epoch, seq]) =>
          this.#pendingJournal.push([scope as string, epoch as number, seq as number, value, where]),
        );
      else if (db === 'frontier') this.#frontier.addLegacy(rawKey, value, (scope) => this.#scope(scope).frontier);
    } catch (error) {
      this.#skipped.push({
        kind: db === 'frontier' ? 'frontier' : 'record',
        where,
        problem: error instanceof Error ? error.message : String(error),
      });
    }
  }

  #keyed(key: unknown, parts: number, where: string, use: (parts: unknown[]) => void): void {
    const ok =
      Array.isArray(key) &&
      key.length === parts &&
      typeof key[0] === 'string' &&
      key.slice(1).every((n) => Number.isSafeInteger(n) && (n as number) >= 0);
    if (!ok) throw new SeenStoreError('STORE_CORRUPT', `${where}: not a key of this database`);
    use(key);
  }

  #meta(key: unknown, value: Buffer, where: string): void {
    if (key === 'store') return;
    const parts = Array.isArray(key) ? key : [];
    const [tag, scope, epoch] = parts as [unknown, unknown, unknown];
    if (typeof scope !== 'string')
      throw new SeenStoreError('STORE_CORRUPT', `${where}: not a key of the meta database`);
    const record = this.#decoder.decodeMeta(value, where);
    if (tag === 'scope') this.#scope(scope).record = readScopeRecord(record);
    else if (tag === 'epoch' && typeof epoch === 'number') {
      const header = readEpochHeader(record);
      this.#scope(scope).epochs.set(epoch, { header, checkpoint: undefined, chunks: new Map(), journal: new Map() });
    } else if (tag === 'ckpt' && typeof epoch === 'number')
      this.#checkpoints.push([scope, epoch, readCheckpointRecord(record)]);
    // Fence tokens belong to the old store's checkpointers; drop markers name epochs being pruned, whose data is not copied.
  }

  /** The format-7 frontier records, resolved once every page was read. */
  finishFrontier(): void {
    this.#frontier.finish((scope) => this.#scope(scope).frontier);
  }

  #guarded(kind: 'frontier', where: string, read: () => void): void {
    try {
      read();
    } catch (error) {
      this.#skipped.push({ kind, where, problem: error instanceof Error ? error.message : String(error) });
    }
  }

  addJournalFile(path: string): void {
    const file = salvageJournal(this.#hash, path);
    for (const { from, to, problem } of file.skipped)
      this.#skipped.push({ kind: 'journal', where: `${path} bytes ${from}..${to}`, problem });
    for (const frame of file.frames) {
      const scope = frame.scope.toString('utf8');
      this.#pendingJournal.push([
        scope,
        frame.epoch,
        frame.seq,
        Buffer.from(frame.record),
        `${path} frame ${scope}/${frame.epoch}/${frame.seq}`,
      ]);
    }
    this.#settle();
  }

  /** Attaches checkpoint records, chunks and journal records to the epochs read (in any order of databases). */
  #settle(): void {
    const epochOf = (scope: string, epoch: number): SalvagedEpoch | undefined =>
      this.scopes.get(scope)?.epochs.get(epoch);
    for (const [scope, epoch, record] of this.#checkpoints) {
      const found = epochOf(scope, epoch);
      if (found !== undefined) found.checkpoint = record;
    }
    const orphans = new Map<string, number>();
    for (const [scope, epoch, at, value] of this.#pendingChunks) {
      const found = epochOf(scope, epoch);
      if (found === undefined) orphans.set(`${scope}/${epoch}`, (orphans.get(`${scope}/${epoch}`) ?? 0) + 1);
      else found.chunks.set(at, value);
    }
    for (const [scope, epoch, seq, value, where] of this.#pendingJournal) {
      const found = epochOf(scope, epoch);
      if (found === undefined) continue;
      try {
        decodeJournalRecord(this.#hash, value, where);
        found.journal.set(seq, value);
      } catch (error) {
        this.#skipped.push({ kind: 'journal', where, problem: error instanceof Error ? error.message : String(error) });
      }
    }
    for (const [epoch, chunks] of orphans) {
      this.#skipped.push({
        kind: 'chunk',
        where: `epoch ${epoch}`,
        problem: `${chunks} chunks belong to an epoch whose header was lost (or that was being pruned): without its geometry they cannot be used`,
      });
    }
  }
}
