import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import type { ScopeStats } from '../../epochs/scope.js';
import type { DiskUsage, SeenStore } from '../../index.js';
import { openStoreReadOnly, type GlobalOptions } from '../context.js';
import { checkScopes } from '../health.js';
import { table } from '../output.js';
import { renderPrometheus } from '../prometheus.js';
import { EPOCH_COLUMNS, epochCells } from './epoch.js';

/** Exit code of `stats --check` when it found something wrong (not an error: the check ran). */
export const CHECK_FAILED_EXIT = 1;

type StatsOptions = GlobalOptions & { readonly format?: 'text' | 'json' | 'prometheus'; readonly check?: boolean };

/**
 * Per scope and epoch: capacity, adds, new, estimated distinct URLs, fill, estimated FPR, bytes; in
 * text, JSON or Prometheus's format; or, with --check, what is wrong (exit 1) or that all is well.
 */
export async function stats(command: Command): Promise<void> {
  const options = command.optsWithGlobals<StatsOptions>();
  const format = options.format ?? (options.json ? 'json' : 'text');
  if (options.check && format === 'prometheus')
    throw new SeenStoreError(
      'USAGE',
      'stats --check prints findings, not metrics: leave out --format prometheus (the metrics carry the same checks as seenstore_epoch_past_capacity and seenstore_epoch_fpr_above_target)',
    );
  const store = await openStoreReadOnly(options);
  try {
    const existing = await store.scopeNames();
    const names = options.scope === undefined ? existing : [options.scope];
    if (options.scope !== undefined && !existing.includes(options.scope)) {
      throw new SeenStoreError('NOT_FOUND', `scope ${options.scope} does not exist in ${store.dir}`);
    }
    const all: ScopeStats[] = [];
    for (const name of names) all.push(await store.scope(name).stats());
    if (options.check) {
      check(all, format === 'json');
      return;
    }
    if (format === 'prometheus') process.stdout.write(renderPrometheus(store.dir, all, await fileUsage(store)));
    else
      process.stdout.write(
        format === 'json' ? `${JSON.stringify({ store: store.dir, scopes: all })}\n` : render(store.dir, all),
      );
  } finally {
    await store.close();
  }
}

function check(scopes: readonly ScopeStats[], json: boolean): void {
  const findings = checkScopes(scopes);
  const epochs = scopes.reduce((sum, s) => sum + s.epochs.length, 0);
  if (json)
    process.stdout.write(`${JSON.stringify({ ok: findings.length === 0, scopes: scopes.length, epochs, findings })}\n`);
  else if (findings.length === 0)
    process.stdout.write(
      `ok: ${scopes.length} scope${scopes.length === 1 ? '' : 's'}, ${epochs} epoch${epochs === 1 ? '' : 's'} checked\n`,
    );
  else
    for (const f of findings)
      process.stdout.write(`CHECK FAILED scope ${f.scope} epoch ${f.epoch} ${f.problem}: ${f.message}\n`);
  if (findings.length > 0) process.exitCode = CHECK_FAILED_EXIT;
}

function render(dir: string, scopes: readonly ScopeStats[]): string {
  const rows = scopes.flatMap((scope) => scope.epochs.map((e) => [scope.scope, ...epochCells(e)]));
  if (rows.length === 0) return `store ${dir}: no scopes yet\n`;
  return table(['scope', ...EPOCH_COLUMNS], rows, 5);
}

/** The store file's usage, or undefined for a backend without a file (Redis: UNSUPPORTED). */
async function fileUsage(store: SeenStore): Promise<DiskUsage | undefined> {
  try {
    return await store.diskUsage();
  } catch (error) {
    if (error instanceof SeenStoreError && error.code === 'UNSUPPORTED') return undefined;
    throw error;
  }
}
