import { SeenStoreError } from '../../errors.js';
import type { XxHash } from '../../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES, decodeChunk } from '../chunks.js';
import type { StoreEnv } from './env.js';

import { decodeJournalRecord } from './journal.js';
import { checkEpochSupported, readEpochHeader, readScopeRecord, type EpochHeader } from '../records.js';
import { readCheckpointRecord, readFenceRecord, type CheckpointRecord } from './records.js';
import { filterGeometries } from '../../filters/keying.js';
import { join } from 'node:path';
import { existsSync, statSync } from 'node:fs';
import { stableWalk } from './data-file.js';
import { verifyFrontier } from './frontier-verify.js';
import type { Damage, VerifyReport } from '../backend.js';

export type { Damage, VerifyReport };

interface EpochState {
  readonly header: EpochHeader;
  readonly checkpoint: CheckpointRecord | undefined;
  readonly filterBytes: number[];
  readonly sliceFilters: number[];
  nextSeq: number;
}

const epochId = (scope: string, epoch: number): string => `${scope}/${epoch}`;

/** The most page damage one walk reports: past it, the file is beyond a list of places anyway. */
const MAX_PAGE_DAMAGE = 100;

/**
 * The structural walk of the store's data file (page-walk.ts), as verify damage: each finding
 * with its page and database. Empty when the structure is sound (or writers kept moving the
 * snapshot under every walk, which a cut or damaged file does not do).
 */
export function verifyPages(dir: string): { pages: number; damage: Damage[] } {
  const path = join(dir, 'data.mdb');
  // A missing or empty data file is not a page structure: opening the store says what it is.
  if (!existsSync(path) || statSync(path).size === 0) return { pages: 0, damage: [] };
  const report = stableWalk(path, MAX_PAGE_DAMAGE);
  const damage = (report?.damage ?? []).map((d) => ({
    where: `${path}${d.page < 0 ? '' : ` page ${d.page}`}${d.db === 'file' ? '' : ` (database ${d.db})`}`,
    problem: d.problem,
    code: 'STORE_CORRUPT',
  }));
  return { pages: report?.pagesRead ?? 0, damage };
}

/**
 * Checks the store's page structure first (verifyPages); when it is sound, every record: headers,
 * checkpoint records, every chunk and journal record.
 */
export function verifyStore(env: StoreEnv, hash: XxHash): VerifyReport {
  const structure = verifyPages(env.dir);
  if (structure.damage.length > 0) {
    return {
      ok: false,
      pages: structure.pages,
      scopes: 0,
      epochs: 0,
      chunks: 0,
      journalRecords: 0,
      damage: structure.damage,
      notes: [],
    };
  }
  return { pages: structure.pages, ...verifyRecords(env, hash) };
}

function verifyRecords(env: StoreEnv, hash: XxHash): VerifyReport {
  const damage: Damage[] = [];
  const notes: string[] = [];
  const report = (where: string, error: unknown): void => {
    const code = error instanceof SeenStoreError ? error.code : 'STORE_CORRUPT';
    damage.push({ where, problem: error instanceof Error ? error.message : String(error), code });
  };
  env.refresh();
  const epochs = new Map<string, EpochState>();
  const openEpochs = new Map<string, number>();
  const dropping = new Set<string>();
  let scopes = 0;
  for (const { key, value } of env.metaDb.getRange({})) {
    const where = `meta ${JSON.stringify(key)}`;
    try {
      const record = env.decodeMeta(value, where);
      const parts = Array.isArray(key) ? key : [key];
      switch (parts[0]) {
        case 'store':
          break;
        case 'scope':
          openEpochs.set(parts[1] as string, readScopeRecord(record).openEpoch);
          scopes++;
          break;
        case 'epoch': {
          const header = readEpochHeader(record);
          checkEpochSupported(header);
          const ckpt = env.getMeta(['ckpt', header.scope, header.epoch]);
          const checkpoint = ckpt === undefined ? undefined : readCheckpointRecord(ckpt);
          if (checkpoint === undefined)
            damage.push({ where, problem: 'epoch has no checkpoint record', code: 'STORE_CORRUPT' });
          epochs.set(epochId(header.scope, header.epoch), {
            header,
            checkpoint,
            filterBytes: header.slices.flatMap((slice) => filterGeometries(slice).map((g) => g.mBits / 8)),
            sliceFilters: header.slices.map((slice) => slice.seeds.length),
            nextSeq: (checkpoint?.seq ?? 0) + 1,
          });
          break;
        }
        case 'ckpt':
          readCheckpointRecord(record);
          break;
        case 'fence':
          readFenceRecord(record);
          break;
        case 'drop':
          dropping.add(epochId(parts[1] as string, parts[2] as number));
          notes.push(
            `epoch ${parts[1]}/${parts[2]} is being pruned (a prune was interrupted; the next prune finishes it)`,
          );
          break;
        default:
          damage.push({ where, problem: 'unknown meta record', code: 'STORE_CORRUPT' });
      }
    } catch (error) {
      report(where, error);
    }
  }
  for (const [scope, open] of openEpochs) {
    const state = epochs.get(epochId(scope, open));
    if (state === undefined)
      damage.push({ where: `scope ${scope}`, problem: `its open epoch ${open} has no header`, code: 'STORE_CORRUPT' });
    else if (state.header.state !== 'open')
      damage.push({ where: `scope ${scope}`, problem: `its open epoch ${open} is sealed`, code: 'STORE_CORRUPT' });
    for (const other of epochs.values()) {
      if (other.header.scope === scope && other.header.state === 'open' && other.header.epoch !== open) {
        damage.push({
          where: `epoch ${epochId(scope, other.header.epoch)}`,
          problem: "open, but not the scope's open epoch",
          code: 'STORE_CORRUPT',
        });
      }
    }
  }
  let chunks = 0;
  for (const { key, value } of env.chunksDb.getRange({})) {
    chunks++;
    const [scope, epoch, filter, region] = key as [string, number, number, number];
    const where = `chunk ${scope}/${epoch}/filter ${filter}/#${region}`;
    const state = epochs.get(epochId(scope, epoch));
    if (state === undefined) {
      if (!dropping.has(epochId(scope, epoch)))
        damage.push({ where, problem: 'belongs to no epoch', code: 'STORE_CORRUPT' });
      continue;
    }
    const bytes = state.filterBytes[filter];
    const expected = bytes === undefined ? 0 : Math.min(CHUNK_PAYLOAD_BYTES, bytes - region * CHUNK_PAYLOAD_BYTES);
    if (!(expected > 0) || !Number.isInteger(region)) {
      damage.push({ where, problem: 'no such filter or chunk number in the epoch', code: 'STORE_CORRUPT' });
      continue;
    }
    try {
      decodeChunk(hash, value, where, expected);
    } catch (error) {
      report(where, error);
    }
  }
  const seqs = new Map<string, { readonly seq: number; readonly where: string }[]>();
  let journalRecords = 0;
  const check = (scope: string, epoch: number, seq: number, value: Uint8Array, where: string): void => {
    journalRecords++;
    const state = epochs.get(epochId(scope, epoch));
    if (state === undefined) {
      if (!dropping.has(epochId(scope, epoch)))
        damage.push({ where, problem: 'belongs to no epoch', code: 'STORE_CORRUPT' });
      return;
    }
    try {
      const record = decodeJournalRecord(hash, value, where);
      if (state.sliceFilters[record.slice] !== record.filterCount) {
        throw new SeenStoreError(
          'STORE_CORRUPT',
          `names slice ${record.slice} with ${record.filterCount} filters, which the epoch does not have`,
        );
      }
      if (seq >= state.nextSeq)
        seqs.set(epochId(scope, epoch), [...(seqs.get(epochId(scope, epoch)) ?? []), { seq, where }]);
    } catch (error) {
      report(where, error);
    }
  };
  for (const { key, value } of env.journalDb.getRange({})) {
    const [scope, epoch, seq] = key as [string, number, number];
    check(scope, epoch, seq, value, `journal record ${scope}/${epoch}/${seq}`);
  }
  const journal = env.useJournal(hash);
  try {
    journal.refresh();
    const { end, torn } = journal.readAll((scope, epoch, seq, value) => {
      check(scope.toString('utf8'), epoch, seq, value, `journal frame ${scope.toString('utf8')}/${epoch}/${seq}`);
      return true;
    });
    if (torn) {
      journal.checkTail(end);
      notes.push(
        `journal file: the bytes at byte ${end} are no frame (a torn tail a crash left, unacknowledged; the next writer clears it)`,
      );
    }
  } catch (error) {
    report(`journal file ${journal.path}`, error);
  }
  // After the checkpoint, LMDB's records and the file's frames together number 1, 2, 3 ... with no gap.
  for (const [id, found] of seqs) {
    let next = epochs.get(id)!.nextSeq;
    for (const { seq, where } of found.sort((a, b) => a.seq - b.seq)) {
      if (seq !== next)
        damage.push({
          where,
          problem: `expected sequence ${next} (records missing or left over)`,
          code: 'STORE_CORRUPT',
        });
      next = seq + 1;
    }
  }
  for (const { where, error } of verifyFrontier(env)) report(where, error);
  return { ok: damage.length === 0, scopes, epochs: epochs.size, chunks, journalRecords, damage, notes };
}
