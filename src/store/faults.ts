/**
 * Named points where the fault-injection tests stop a process (kill -9 itself) to prove that a
 * crash there loses nothing acknowledged. Not part of the public API; a no-op unless a test
 * installs a hook.
 */
export type FaultPoint =
  | 'create:before-link'
  | 'add:before-commit'
  | 'add:after-commit'
  | 'add:before-sync'
  | 'journal:after-sync'
  | 'checkpoint:after-chunk-txn'
  | 'checkpoint:before-trim'
  | 'checkpoint:after-trim'
  | 'load:before-replay'
  | 'replay:before-file'
  | 'rotate:before-commit'
  | 'rotate:after-commit'
  | 'prune:after-unlink'
  | 'prune:mid-delete'
  | 'import:mid-chunks'
  | 'merge:before-commit'
  | 'migrate:before-commit'
  | 'restore:before-swap'
  | 'export:mid-write'
  | 'export:mid-read'
  | 'snapshot:after-copy'
  | 'frontier:take-before-commit'
  | 'frontier:take-after-commit'
  | 'frontier:inbox-admitted'
  | 'frontier:migrate-batch'
  | 'frontier:change-before-commit';

/** `detail`: a number some points pass (journal:after-sync, the journal file's offset the sync covered). */
type FaultHook = (point: FaultPoint, detail?: number) => void;

let hook: FaultHook | undefined;

export function setFaultHook(fn: FaultHook | undefined): void {
  hook = fn;
}

export function faultPoint(point: FaultPoint, detail?: number): void {
  if (hook !== undefined) hook(point, detail);
}
