/**
 * Named points where the fault-injection tests stop a process (kill -9 itself) to prove that a
 * crash there loses nothing acknowledged. Not part of the public API; a no-op unless a test
 * installs a hook.
 */
export type FaultPoint =
  | 'add:before-commit'
  | 'add:after-commit'
  | 'add:before-sync'
  | 'checkpoint:after-chunk-txn'
  | 'checkpoint:before-trim'
  | 'checkpoint:after-trim'
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
  | 'frontier:change-before-commit';

let hook: ((point: FaultPoint) => void) | undefined;

export function setFaultHook(fn: ((point: FaultPoint) => void) | undefined): void {
  hook = fn;
}

export function faultPoint(point: FaultPoint): void {
  if (hook !== undefined) hook(point);
}
