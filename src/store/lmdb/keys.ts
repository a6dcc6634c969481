/**
 * Key layout (lmdb's ordered-binary encoding of arrays). Part of the on-disk format: no key is
 * built or taken apart anywhere else.
 *
 *   meta     'store'                      store header
 *            ['scope', scope]             scope record
 *            ['epoch', scope, epoch]      epoch header
 *            ['ckpt', scope, epoch]       checkpoint record
 *            ['fence', scope]             checkpoint fencing token
 *            ['drop', scope, epoch]       an epoch being pruned (its data is still being deleted)
 *   chunks   [scope, epoch, filter, chunkNo]
 *   journal  [scope, epoch, seq]
 *
 * The frontier database's keys are bytes of their own layout: frontier-keys.ts.
 */
import * as lmdb from 'lmdb';

export type MetaKey = string | (string | number)[];
type DataKey = (string | number)[];

/** A key range as lmdb-js's getKeys / getRange take it: from `start` up to, not including, `end`. */
export interface KeyRange {
  readonly start: DataKey;
  readonly end: DataKey;
}

export const scopeKey = (scope: string): MetaKey => ['scope', scope];
export const epochKey = (scope: string, epoch: number): MetaKey => ['epoch', scope, epoch];
export const checkpointKey = (scope: string, epoch: number): MetaKey => ['ckpt', scope, epoch];
export const fenceKey = (scope: string): MetaKey => ['fence', scope];
export const dropKey = (scope: string, epoch: number): MetaKey => ['drop', scope, epoch];

export const chunkKey = (scope: string, epoch: number, filter: number, chunkNo: number): DataKey => [
  scope,
  epoch,
  filter,
  chunkNo,
];
export const journalKey = (scope: string, epoch: number, seq: number): DataKey => [scope, epoch, seq];

/** Every scope record. */
export const scopeRange = (): KeyRange => ({ start: ['scope'], end: ['scope\u0000'] });
/** Every epoch header of a scope. */
export const epochRange = (scope: string): KeyRange => ({
  start: ['epoch', scope, 0],
  end: ['epoch', scope, Number.MAX_SAFE_INTEGER],
});
/** Every drop marker of a scope. */
export const dropRange = (scope: string): KeyRange => ({
  start: ['drop', scope, 0],
  end: ['drop', scope, Number.MAX_SAFE_INTEGER],
});
/** The chunks of an epoch's filters from filter `fromFilter` on. */
export const chunkEpochRange = (scope: string, epoch: number, fromFilter = 0): KeyRange => ({
  start: chunkKey(scope, epoch, fromFilter, 0),
  end: chunkKey(scope, epoch + 1, 0, 0),
});
/** The journal records of an epoch with sequence numbers from `fromSeq` up to, not including, `toSeq`. */
export const journalEpochRange = (scope: string, epoch: number, fromSeq = 0, toSeq?: number): KeyRange => ({
  start: journalKey(scope, epoch, fromSeq),
  end: toSeq === undefined ? [scope, epoch + 1] : journalKey(scope, epoch, toSeq),
});

/** The filter and chunk numbers of a chunk key (either may be malformed in a damaged store: callers check). */
export function chunkKeyParts(key: unknown): { readonly filter: number; readonly chunk: number } {
  const [, , filter, chunk] = key as [string, number, number, number];
  return { filter, chunk };
}

/** The sequence number of a journal key. */
export function journalKeySeq(key: unknown): number {
  return (key as [string, number, number])[2];
}

/**
 * A key as LMDB stores it (lmdb-js's ordered-binary encoding), and back: what salvage needs to
 * read keys from pages it read itself (salvage-pages.ts), and to tell whether a key lies in a
 * range of keys that was lost.
 */
export function decodeKey(bytes: Buffer): unknown {
  return keyCodec.bufferToKeyValue(bytes);
}

export function encodeKey(key: MetaKey | DataKey): Buffer {
  return keyCodec.keyValueToBuffer(key);
}

/** lmdb-js exports its key codec (ordered-binary's) without declaring it in its types. */
const keyCodec = lmdb as unknown as {
  bufferToKeyValue(bytes: Buffer): unknown;
  keyValueToBuffer(key: unknown): Buffer;
};
