import { SeenStoreError } from '../errors.js';
import type { Keying } from '../filters/keying.js';
import { isPartitioning, PARTITIONED_LAYOUT, type Partitioning } from '../filters/partitions.js';
import { HASH_SCHEMES, isHashScheme, isSeedHex } from '../hash/scheme.js';
import { CHUNK_PAYLOAD_BYTES } from './chunks.js';

/**
 * Meta records, stored as msgpack maps. Every record carries `v`, its record version; a reader
 * accepts the versions it knows, refuses newer ones with FORMAT_UNSUPPORTED and malformed ones
 * with STORE_CORRUPT. Field names are part of the on-disk format (docs/format.md), not code names.
 */

/** Scope names are also file names (lock files) and CLI arguments: keep them plain. */
export const SCOPE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** On-disk format of the whole store. Bumped with a migration whenever any record or key changes. */
export const FORMAT_VERSION = 7;

export interface ScopeRecord {
  readonly v: 1;
  readonly name: string;
  /** Number of the epoch that accepts adds. */
  readonly openEpoch: number;
  readonly createdAtMs: number;
}

/**
 * One slice of an epoch: a group of filters (one for the classic strategy, S for spatial) with its
 * own seeds and geometry. An epoch starts with one slice and, when more distinct URLs arrive than
 * the newest slice was sized for, appends a larger slice with a tighter error (a scalable Bloom
 * filter), so the epoch's false-positive rate stays within its target. Slices never change once
 * written; the list only grows.
 */
export interface SliceSpec {
  readonly layout: string;
  readonly mBits: number;
  readonly k: number;
  /** New URLs this slice takes before the next slice is started. */
  readonly capacityUrls: number;
  readonly fprTarget: number;
  /** One 64-bit xxh64 seed per filter, 16 lower-case hex digits each, from a CSPRNG. */
  readonly seeds: readonly string[];
  /** Format 3: what the filters hash besides the whole URL (eigen, multilayer); absent: the URL. */
  readonly keying?: Keying;
  readonly createdAtMs: number;
}

export interface SizingDecision {
  /** Which rule chose the capacity: `explicit`, `default` or `history-v1` (docs/epochs.md). */
  readonly policy: string;
  readonly reason: string;
  readonly inputs: Readonly<Record<string, number | string | null>>;
}

/** Counts frozen when an epoch is sealed. */
export interface EpochFinal {
  readonly submitted: number;
  readonly added: number;
  readonly estimatedDistinct: number;
  readonly fillRatio: number;
  readonly estimatedFpr: number;
}

export interface EpochHeader {
  readonly v: 1;
  readonly scope: string;
  readonly epoch: number;
  readonly state: 'open' | 'sealed';
  readonly createdAtMs: number;
  readonly sealedAtMs: number | null;
  readonly hashScheme: string;
  readonly normalize: string;
  readonly chunkBytes: number;
  /** The plan: URLs expected and the false-positive rate promised for the whole epoch. */
  readonly capacityUrls: number;
  readonly fprTarget: number;
  /** Slice j has capacity capacityUrls * factor^j and FPR fprTarget * (1 - tightening) * tightening^j. */
  readonly growth: { readonly factor: number; readonly tightening: number };
  readonly slices: readonly SliceSpec[];
  readonly sizing: SizingDecision;
  readonly final: EpochFinal | null;
  /**
   * Present exactly when the slices have the `partitioned-blocked` layout: the epoch's partition
   * count and partition seed (filters/partitions.ts, docs/format.md "Partitioned epochs").
   */
  readonly partitions?: Partitioning;
}

/**
 * The header of `open` sealed at `atMs` with its final counts: the one way every backend seals an
 * epoch, so that a sealed header reads the same wherever it was stored.
 */
export function sealHeader(open: EpochHeader, counts: EpochFinal, atMs: number): EpochHeader {
  const { submitted, added, estimatedDistinct, fillRatio, estimatedFpr } = counts;
  return {
    ...open,
    state: 'sealed',
    sealedAtMs: atMs,
    final: { submitted, added, estimatedDistinct, fillRatio, estimatedFpr },
  };
}

export type Shape = Record<string, 'number' | 'string' | 'object' | 'numberOrNull'>;

/** Checks a record read back: its version and the types of its fields (STORE_CORRUPT / FORMAT_UNSUPPORTED). */
export function checkRecord<T>(what: string, value: unknown, shape: Shape, version = 1): T {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${what}: expected a record, found ${value === null ? 'null' : typeof value}`,
    );
  }
  const record = value as Record<string, unknown>;
  if (typeof record.v !== 'number') throw new SeenStoreError('STORE_CORRUPT', `${what}: record has no version`);
  if (record.v > version) {
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${what}: record version ${record.v} is newer than this seenstore understands`,
    );
  }
  if (record.v !== version) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `${what}: record version ${record.v} in a format ${FORMAT_VERSION} store (expected ${version}; an interrupted manual change?)`,
    );
  }
  for (const [field, type] of Object.entries(shape)) {
    const actual = record[field];
    const ok =
      type === 'numberOrNull'
        ? actual === null || typeof actual === 'number'
        : typeof actual === type && actual !== null;
    if (!ok) throw new SeenStoreError('STORE_CORRUPT', `${what}: field ${field} should be ${type}`);
  }
  return value as T;
}

export function readScopeRecord(value: unknown): ScopeRecord {
  return checkRecord('scope record', value, { name: 'string', openEpoch: 'number', createdAtMs: 'number' });
}

export function readEpochHeader(value: unknown): EpochHeader {
  const header = checkRecord<EpochHeader>('epoch header', value, {
    scope: 'string',
    epoch: 'number',
    state: 'string',
    createdAtMs: 'number',
    sealedAtMs: 'numberOrNull',
    hashScheme: 'string',
    normalize: 'string',
    chunkBytes: 'number',
    capacityUrls: 'number',
    fprTarget: 'number',
    growth: 'object',
    slices: 'object',
    sizing: 'object',
  });
  const where = `epoch header ${header.scope}/${header.epoch}`;
  if (!Array.isArray(header.slices) || header.slices.length === 0)
    throw new SeenStoreError('STORE_CORRUPT', `${where}: no slices`);
  for (const slice of header.slices) readSliceSpec(slice, where);
  if (header.partitions !== undefined && !isPartitioning(header.partitions))
    throw new SeenStoreError('STORE_CORRUPT', `${where}: malformed partitions`);
  return header;
}

/** Checks a slice spec read back (in an epoch header, or a Redis epoch's growth plan): STORE_CORRUPT when malformed. */
export function readSliceSpec(value: unknown, where: string): SliceSpec {
  const slice = value as Partial<SliceSpec> | null;
  const ok =
    typeof slice?.layout === 'string' &&
    Number.isSafeInteger(slice.mBits) &&
    Number.isInteger(slice.k) &&
    typeof slice.capacityUrls === 'number' &&
    Array.isArray(slice.seeds) &&
    slice.seeds.length > 0 &&
    slice.seeds.every(isSeedHex) &&
    keyingFits(slice.keying, slice.seeds.length);
  if (!ok) throw new SeenStoreError('STORE_CORRUPT', `${where}: malformed slice`);
  return slice as SliceSpec;
}

/** A slice's keying is absent, or a known kind whose filter count matches the seeds. */
function keyingFits(keying: unknown, seeds: number): boolean {
  if (keying === undefined) return true;
  const k = keying as Partial<Record<string, unknown>>;
  if (k.kind === 'eigen-v1')
    return (
      seeds === 2 &&
      Number.isSafeInteger(k.featureMBits) &&
      (k.featureMBits as number) > 0 &&
      (k.featureMBits as number) % 512 === 0 &&
      Number.isInteger(k.featureK) &&
      (k.featureK as number) >= 1
    );
  if (k.kind === 'counting-v1')
    return (
      seeds === 2 &&
      Number.isSafeInteger(k.secondaryCells) &&
      (k.secondaryCells as number) > 0 &&
      (k.secondaryCells as number) % 64 === 0
    );
  if (k.kind === 'multilayer-v1')
    return Number.isInteger(k.layers) && (k.layers as number) >= 2 && seeds === (k.layers as number) + 1;
  return false;
}

/**
 * Refuses an epoch header whose hash scheme, layout or chunk size this version does not know
 * (FORMAT_UNSUPPORTED): checked before any of its bits are read, from a store or an export file.
 */
export function checkEpochSupported(header: EpochHeader): void {
  const where = `epoch ${header.scope}/${header.epoch}`;
  if (!isHashScheme(header.hashScheme)) {
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where} uses hash scheme ${header.hashScheme}, this version knows ${HASH_SCHEMES.join(', ')}`,
    );
  }
  for (const slice of header.slices) {
    if (slice.layout !== 'classic' && slice.layout !== 'blocked' && slice.layout !== PARTITIONED_LAYOUT) {
      throw new SeenStoreError(
        'FORMAT_UNSUPPORTED',
        `${where} uses filter layout ${slice.layout}, unknown to this version`,
      );
    }
  }
  checkPartitions(header, where);
  if (header.chunkBytes !== CHUNK_PAYLOAD_BYTES) {
    throw new SeenStoreError(
      'FORMAT_UNSUPPORTED',
      `${where} has chunks of ${header.chunkBytes} bytes, expected ${CHUNK_PAYLOAD_BYTES}`,
    );
  }
}

/**
 * A partitioned epoch's slices are all `partitioned-blocked`, one filter each, no keying, with
 * whole blocks in each of its partitions; an epoch without `partitions` has no such slice.
 */
function checkPartitions(header: EpochHeader, where: string): void {
  const partitioned = header.slices.map((slice) => slice.layout === PARTITIONED_LAYOUT);
  const count = header.partitions?.count;
  if (count === undefined) {
    if (partitioned.some(Boolean))
      throw new SeenStoreError('STORE_CORRUPT', `${where}: ${PARTITIONED_LAYOUT} slices without partitions`);
    return;
  }
  for (const slice of header.slices) {
    const fits =
      slice.layout === PARTITIONED_LAYOUT &&
      slice.seeds.length === 1 &&
      slice.keying === undefined &&
      slice.mBits % (count * 512) === 0;
    if (!fits)
      throw new SeenStoreError(
        'STORE_CORRUPT',
        `${where}: a slice does not fit its ${count} partitions (layout ${slice.layout}, ${slice.mBits} bits)`,
      );
  }
}

/** True for an epoch of the counting strategy (its slices hold one-byte counters). */
export function isCountingEpoch(header: EpochHeader): boolean {
  return header.slices[0]?.keying?.kind === 'counting-v1';
}
