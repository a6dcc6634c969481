import type { XxHash } from '../../hash/xxhash.js';
import { filterGeometries } from '../../filters/keying.js';
import { CHUNK_PAYLOAD_BYTES, decodeChunk, encodeChunk } from '../chunks.js';
import type { ScopeRecord } from '../records.js';
import type { StoreEnv } from './env.js';
import { FrontierTxn } from './frontier-txn.js';
import { checkpointKey, chunkKey, encodeKey, epochKey, journalKey, scopeKey } from './keys.js';
import { emptyCheckpoint } from './metadata.js';
import { inLostRange, type LostRange } from './salvage-pages.js';
import type { SalvagedEpoch, SalvagedFrontier, SalvagedScope, SalvagedStore, Skipped } from './salvage-read.js';

/** Chunks written per write transaction (as an import writes them). */
const CHUNKS_PER_TXN = 256;
/** Frontier entries put back per write transaction. */
const ENTRIES_PER_TXN = 2048;

/** What the copy holds, counted as it is written. */
export interface SalvageCounts {
  scopes: number;
  epochs: number;
  chunks: number;
  /** Chunks written but unreadable (lost pages, failed checksums), filled with ones in the copy. */
  chunksFilled: number;
  journalRecords: number;
  frontierUrls: number;
  /** Of them, URLs that were leased: they wait again in the copy. */
  leasesGivenBack: number;
  deliveryRecords: number;
}

/**
 * Writes what `readSalvage` found into the new store's environment `env`: per scope its epochs
 * (headers, checkpoint records, chunks, the journal records after each checkpoint) and its scope
 * record, then its frontier. Lists what it must leave out in `skipped`.
 */
export function writeSalvage(
  env: StoreEnv,
  hash: XxHash,
  store: SalvagedStore,
  skipped: Skipped[],
  notes: string[],
): SalvageCounts {
  const counts: SalvageCounts = {
    scopes: 0,
    epochs: 0,
    chunks: 0,
    chunksFilled: 0,
    journalRecords: 0,
    frontierUrls: 0,
    leasesGivenBack: 0,
    deliveryRecords: 0,
  };
  for (const [name, scope] of [...store.scopes].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const epochs = [...scope.epochs.values()].sort((a, b) => a.header.epoch - b.header.epoch);
    for (const epoch of epochs) writeEpoch(env, hash, epoch, store.lostChunks, counts, skipped);
    if (epochs.length > 0) {
      env.write(() => env.putMeta(scopeKey(name), scopeRecord(name, scope, epochs, notes)));
      counts.scopes++;
    } else if (scope.record !== undefined) {
      skipped.push({
        kind: 'record',
        where: `scope ${name}`,
        problem: 'none of its epoch headers could be read: its seen-set is not copied',
      });
    }
    writeFrontier(env, name, scope.frontier, counts, skipped, notes);
  }
  return counts;
}

/**
 * The scope record: the one read, when its open epoch was copied; else one made for the epochs
 * copied, opening the newest epoch whose header says it is open (else the newest).
 */
function scopeRecord(
  name: string,
  scope: SalvagedScope,
  epochs: readonly SalvagedEpoch[],
  notes: string[],
): ScopeRecord {
  const record = scope.record;
  if (record !== undefined && epochs.some((e) => e.header.epoch === record.openEpoch)) return record;
  const open = [...epochs].reverse().find((e) => e.header.state === 'open') ?? epochs[epochs.length - 1]!;
  notes.push(
    `scope ${name}: its record ${record === undefined ? 'was lost' : `names epoch ${record.openEpoch}, which was lost`}; made anew with epoch ${open.header.epoch} open`,
  );
  return { v: 1, name, openEpoch: open.header.epoch, createdAtMs: record?.createdAtMs ?? open.header.createdAtMs };
}

function writeEpoch(
  env: StoreEnv,
  hash: XxHash,
  epoch: SalvagedEpoch,
  lostChunks: readonly LostRange[],
  counts: SalvageCounts,
  skipped: Skipped[],
): void {
  const { header } = epoch;
  const id = `${header.scope}/${header.epoch}`;
  const chunks = chunkPayloads(hash, epoch, lostChunks, counts, skipped);
  for (let start = 0; start < chunks.length; start += CHUNKS_PER_TXN) {
    env.write(() => {
      for (const [filter, chunk, payload] of chunks.slice(start, start + CHUNKS_PER_TXN))
        env.chunksDb.putSync(chunkKey(header.scope, header.epoch, filter, chunk), encodeChunk(hash, payload));
    });
  }
  const checkpoint = epoch.checkpoint;
  if (checkpoint === undefined)
    skipped.push({
      kind: 'record',
      where: `checkpoint record of ${id}`,
      problem: 'lost: its counts start again from 0, and every journal record found is replayed',
    });
  // The copy's chunks hold what the old checkpoint held; the journal records after it are renumbered from 1.
  const afterSeq = checkpoint?.seq ?? 0;
  const tail = [...epoch.journal].filter(([seq]) => seq > afterSeq).sort(([a], [b]) => a - b);
  const missing = tail.length === 0 ? 0 : tail[tail.length - 1]![0] - afterSeq - tail.length;
  if (missing > 0) {
    skipped.push({
      kind: 'journal',
      where: `journal of ${id}`,
      problem: `${missing} of the records after the checkpoint (seq ${afterSeq + 1}..${tail[tail.length - 1]![0]}) were lost: the URLs their batches added may read as new`,
    });
  }
  env.write(() => {
    tail.forEach(([, record], i) => env.journalDb.putSync(journalKey(header.scope, header.epoch, i + 1), record));
    env.putMeta(epochKey(header.scope, header.epoch), header);
    env.putMeta(checkpointKey(header.scope, header.epoch), { ...(checkpoint ?? emptyCheckpoint(Date.now())), seq: 0 });
  });
  counts.epochs++;
  counts.journalRecords += tail.length;
}

/**
 * The payload of every chunk the copy holds. A chunk that was written and cannot be read (its
 * record failed its check, or its key lies in a lost range of pages) is filled with ones: every
 * URL whose positions fall there reads as seen, so no URL the old store acknowledged is ever
 * taken for new (a Bloom filter's promise, no false negative), at the cost of new URLs there
 * being taken for seen until the epoch is rotated. A counting epoch's counters there saturate
 * (255), which the engine never changes again.
 */
function chunkPayloads(
  hash: XxHash,
  epoch: SalvagedEpoch,
  lostChunks: readonly LostRange[],
  counts: SalvageCounts,
  skipped: Skipped[],
): [number, number, Uint8Array][] {
  const { header } = epoch;
  const out: [number, number, Uint8Array][] = [];
  const filterBytes = header.slices.flatMap((slice) => filterGeometries(slice).map((g) => g.mBits / 8));
  const known = new Set<string>();
  filterBytes.forEach((bytes, filter) => {
    for (let chunk = 0; chunk * CHUNK_PAYLOAD_BYTES < bytes; chunk++) {
      const payloadBytes = Math.min(CHUNK_PAYLOAD_BYTES, bytes - chunk * CHUNK_PAYLOAD_BYTES);
      const where = `${header.scope}/${header.epoch}/filter ${filter}/#${chunk}`;
      known.add(`${filter}/${chunk}`);
      const value = epoch.chunks.get(`${filter}/${chunk}`);
      let problem: string | undefined;
      if (value !== undefined) {
        try {
          out.push([filter, chunk, decodeChunk(hash, value, where, payloadBytes)]);
          counts.chunks++;
          continue;
        } catch (error) {
          problem = error instanceof Error ? error.message : String(error);
        }
      } else {
        const key = encodeKey(chunkKey(header.scope, header.epoch, filter, chunk));
        if (!lostChunks.some((range) => inLostRange(range, key))) continue;
        problem = 'its page was lost';
      }
      skipped.push({ kind: 'chunk', where, problem: `${problem}; filled with ones in the copy` });
      out.push([filter, chunk, new Uint8Array(payloadBytes).fill(0xff)]);
      counts.chunks++;
      counts.chunksFilled++;
    }
  });
  for (const at of epoch.chunks.keys()) {
    if (!known.has(at))
      skipped.push({
        kind: 'chunk',
        where: `${header.scope}/${header.epoch} ${at}`,
        problem: 'no such filter or chunk in the epoch',
      });
  }
  return out;
}

/**
 * Puts the frontier's entries back under their own ids, with their queue, epoch, due time,
 * attempts and payload; a leased entry waits again (its lease is given back: its taker is gone
 * with the old store). Settings and each queue's politeness and completed count are kept; the
 * indexes are rebuilt as each entry goes in.
 */
function writeFrontier(
  env: StoreEnv,
  scope: string,
  frontier: SalvagedFrontier,
  counts: SalvageCounts,
  skipped: Skipped[],
  notes: string[],
): void {
  const entries = [...frontier.entries].sort(([a], [b]) => a - b);
  if (frontier.state === undefined && entries.length === 0 && frontier.queues.size === 0) return;
  if (frontier.state === undefined)
    skipped.push({
      kind: 'frontier',
      where: `frontier state of ${scope}`,
      problem: 'lost: the copy has the default settings and 0 URLs done',
    });
  const db = env.ensureFrontierDb();
  const state = frontier.state;
  for (let start = 0; start === 0 || start < entries.length; start += ENTRIES_PER_TXN) {
    env.write(() => {
      const txn = new FrontierTxn(env, db, scope, Date.now());
      if (start === 0) {
        if (state !== undefined) {
          txn.state.settings = state.settings;
          txn.state.done = state.done;
          txn.state.failed = state.failed;
          txn.state.nextSeq = Math.max(txn.state.nextSeq, state.nextSeq);
          if (state.queueKeyPinned) txn.state.queueKeyPinned = true;
        }
        for (const [key, old] of frontier.queues) {
          const queue = txn.queue(key);
          queue.completed = old.completed;
          queue.blockedUntilMs = old.blockedUntilMs;
          if (old.delayMs !== undefined) queue.delayMs = old.delayMs;
          if (old.crawlLimit !== undefined) queue.crawlLimit = old.crawlLimit;
          if (old.lastTakeMs !== undefined) queue.lastTakeMs = old.lastTakeMs;
        }
      }
      for (const [seq, entry] of entries.slice(start, start + ENTRIES_PER_TXN)) {
        const { owner: _owner, ...rest } = entry;
        if (entry.leaseUntilMs !== 0) counts.leasesGivenBack++;
        txn.restore({ ...rest, leaseUntilMs: 0 }, seq);
        counts.frontierUrls++;
      }
      txn.settle();
    });
  }
  if (state !== undefined && state.entries !== entries.length) {
    notes.push(`frontier of ${scope}: its state counted ${state.entries} URLs, ${entries.length} were read`);
  }
}
