import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { openStore, openStoreReadOnly, type GlobalOptions } from '../context.js';
import { formatCount } from '../output.js';

/** `scope list`: the names of the scopes in the store, one per line. */
export async function scopeList(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStoreReadOnly(options);
  try {
    const names = await store.scopeNames();
    process.stdout.write(
      options.json ? `${JSON.stringify({ scopes: names })}\n` : names.map((name) => `${name}\n`).join(''),
    );
  } finally {
    await store.close();
  }
}

/**
 * `scope delete NAME --yes`: removes the scope with its epochs, frontier and settings. Without
 * --yes nothing is opened: a command that cannot be undone is never one keystroke away.
 */
export async function scopeDelete(name: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { readonly yes?: boolean }>();
  if (options.yes !== true) {
    throw new SeenStoreError(
      'USAGE',
      `scope delete removes scope ${name} with every epoch and its frontier, and cannot be undone: add --yes (a snapshot first keeps a way back)`,
    );
  }
  const store = await openStore(options, false);
  try {
    const deleted = await store.deleteScope(name);
    if (deleted === undefined)
      throw new SeenStoreError(
        'NOT_FOUND',
        `scope ${name} does not exist in ${store.dir} (seenstore scope list lists them)`,
      );
    const message = `deleted scope ${name}: ${formatCount(deleted.epochs)} ${deleted.epochs === 1 ? 'epoch' : 'epochs'}, ${formatCount(deleted.queuedUrls)} queued URLs`;
    process.stdout.write(options.json ? `${JSON.stringify({ deleted: name, ...deleted })}\n` : `${message}\n`);
  } finally {
    await store.close();
  }
}
