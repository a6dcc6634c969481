import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import type { ScopeStats } from '../../epochs/scope.js';
import { openStoreReadOnly, type GlobalOptions } from '../context.js';
import { table } from '../output.js';
import { EPOCH_COLUMNS, epochCells } from './epoch.js';

/** Per scope and epoch: capacity, adds, estimated distinct URLs, fill, estimated FPR, bytes. */
export async function stats(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStoreReadOnly(options);
  try {
    const existing = await store.scopeNames();
    const names = options.scope === undefined ? existing : [options.scope];
    if (options.scope !== undefined && !existing.includes(options.scope)) {
      throw new SeenStoreError('NOT_FOUND', `scope ${options.scope} does not exist in ${store.dir}`);
    }
    const all: ScopeStats[] = [];
    for (const name of names) all.push(await store.scope(name).stats());
    process.stdout.write(options.json ? `${JSON.stringify({ store: store.dir, scopes: all })}\n` : render(store.dir, all));
  } finally {
    await store.close();
  }
}

function render(dir: string, scopes: readonly ScopeStats[]): string {
  const rows = scopes.flatMap((scope) => scope.epochs.map((e) => [scope.scope, ...epochCells(e)]));
  if (rows.length === 0) return `store ${dir}: no scopes yet\n`;
  return table(['scope', ...EPOCH_COLUMNS], rows, 5);
}
