import { checkRecord } from '../records.js';

/**
 * The LMDB backend's own meta records (docs/format.md): the store header, each epoch's checkpoint
 * record and each scope's checkpoint fencing token. Versioned like every record (records.ts).
 */

export interface StoreHeader {
  readonly v: 1;
  readonly formatVersion: number;
  readonly createdAtMs: number;
}

/**
 * What the stored chunks of an epoch hold: every journal record up to and including `seq`, and
 * every merge up to `merges`. Record version 2 (store format 2) added `merges` and `mergedSliceAdded`.
 */
export interface CheckpointRecord {
  readonly v: 2;
  readonly seq: number;
  /** URLs submitted to add / addIfAbsent, up to `seq`. */
  readonly submitted: number;
  /** URLs that were new when added, up to `seq`. */
  readonly added: number;
  /** New URLs per slice, up to `seq`. */
  readonly sliceAdded: readonly number[];
  readonly atMs: number;
  /**
   * Generation of changes that reached the chunks without the journal (merges): a process whose
   * copy was loaded at an older generation reloads the chunks.
   */
  readonly merges: number;
  /** New URLs per slice that merges brought in, estimated from the fill before and after each merge. */
  readonly mergedSliceAdded: readonly number[];
}

/** Record version of checkpoint records in this store format. */
export const CHECKPOINT_RECORD_VERSION = 2;

/** Fencing token of a scope's checkpointer: a checkpoint writes only while the token is its own. */
export interface FenceRecord {
  readonly v: 1;
  readonly token: number;
}

export function readStoreHeader(value: unknown): StoreHeader {
  return checkRecord('store header', value, { formatVersion: 'number', createdAtMs: 'number' });
}

export function readCheckpointRecord(value: unknown): CheckpointRecord {
  return checkRecord(
    'checkpoint record',
    value,
    {
      seq: 'number',
      submitted: 'number',
      added: 'number',
      sliceAdded: 'object',
      atMs: 'number',
      merges: 'number',
      mergedSliceAdded: 'object',
    },
    CHECKPOINT_RECORD_VERSION,
  );
}

export function readFenceRecord(value: unknown): FenceRecord {
  return checkRecord('fence record', value, { token: 'number' });
}
