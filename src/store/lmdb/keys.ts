/**
 * Key layout (lmdb's ordered-binary encoding of arrays). Part of the on-disk format.
 *
 *   meta     'store'                      store header
 *            ['scope', scope]             scope record
 *            ['epoch', scope, epoch]      epoch header
 *            ['ckpt', scope, epoch]       checkpoint record
 *            ['fence', scope]             checkpoint fencing token
 *            ['drop', scope, epoch]       an epoch being pruned (its data is still being deleted)
 *   chunks   [scope, epoch, filter, chunkNo]
 *   journal  [scope, epoch, seq]
 */
export type MetaKey = string | (string | number)[];

export const scopeKey = (scope: string): MetaKey => ['scope', scope];
export const epochKey = (scope: string, epoch: number): MetaKey => ['epoch', scope, epoch];
export const checkpointKey = (scope: string, epoch: number): MetaKey => ['ckpt', scope, epoch];
export const fenceKey = (scope: string): MetaKey => ['fence', scope];
export const dropKey = (scope: string, epoch: number): MetaKey => ['drop', scope, epoch];

export const chunkKey = (scope: string, epoch: number, filter: number, chunkNo: number): (string | number)[] => [
  scope,
  epoch,
  filter,
  chunkNo,
];

export const journalKey = (scope: string, epoch: number, seq: number): (string | number)[] => [scope, epoch, seq];

/** Scope names are also file names (lock files) and CLI arguments: keep them plain. */
export const SCOPE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
