/** What an open of a Redis store does before it serves: the function library loaded, the store's key layout and the masters' durability checked. */
import { SeenStoreError } from '../../errors.js';
import type { Reply } from './connection.js';
import { list, pairs, text, type RedisContext } from './context.js';
import { storeFormat } from './functions.js';
import { LIBRARY, libraryConflict, libraryOrder } from './library.js';

/**
 * Loads the function library on every master that has none or an earlier release's; a master
 * with a later release's, or another build of this release, is left as it is and the open refused
 * (FORMAT_UNSUPPORTED): during a rolling upgrade an old client never puts its library back over
 * the new one. (Two clients of different releases opening in the same instant can still race.)
 */
export async function loadLibrary(ctx: RedisContext): Promise<void> {
  let replace = false;
  for (const { node, reply } of await ctx.eachMaster(
    ['FUNCTION', 'LIST', 'LIBRARYNAME', 'seenstore'],
    'reading the function library',
  )) {
    const loaded = loadedVersion(reply);
    // None loaded, or one numbered by hand (1 to 13: builds before versions named the sources), with no description.
    const order = loaded === undefined || loaded === '' ? 'older' : libraryOrder(loaded);
    if (order === 'newer' || order === 'other') throw libraryConflict(node, loaded!, order);
    if (order === 'older') replace = true;
  }
  if (replace) await ctx.eachMaster(['FUNCTION', 'LOAD', 'REPLACE', LIBRARY], 'loading the function library');
}

/**
 * The version a FUNCTION LIST reply shows for the seenstore library (ss_version's description),
 * '' when it has none, undefined when the library is not loaded. The reply is a list of libraries,
 * each a flat list of field and value, its `functions` a list of such lists.
 */
function loadedVersion(reply: Reply): string | undefined {
  for (const library of list(reply)) {
    if (textOf(field(library, 'library_name')) !== 'seenstore') continue;
    for (const fn of list(field(library, 'functions') as Reply)) {
      if (textOf(field(fn, 'name')) === 'ss_version') return textOf(field(fn, 'description'));
    }
    return '';
  }
  return undefined;
}

/** A field of a map reply, which node-redis hands over as a flat list, a Map or an object depending on the protocol and command. */
function field(reply: unknown, name: string): unknown {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) if (textOf(reply[i]) === name) return reply[i + 1];
    return undefined;
  }
  if (reply instanceof Map) return reply.get(name);
  return reply !== null && typeof reply === 'object' ? (reply as Record<string, unknown>)[name] : undefined;
}

function textOf(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : '';
}

/**
 * The store's key layout (docs/redis.md "Store format"): 2 since epochs are kept by partition.
 * Set by the first open of an empty store; a store of another layout is refused, never misread.
 */
export const REDIS_STORE_FORMAT = '2';

/**
 * NOT_FOUND for an open that may not create the store (`--no-create`, the reading commands) when
 * nothing of a store is under the prefix: neither its format key nor a scope. A mistyped prefix or
 * host would otherwise be served as an empty store.
 */
export async function refuseMissingStore(ctx: RedisContext, location: string): Promise<void> {
  const keys = ctx.keys;
  const doing = 'looking for the store';
  if (
    Number(await ctx.call(keys.format(), ['EXISTS', keys.format()], doing)) > 0 ||
    Number(await ctx.call(keys.scopes(), ['SCARD', keys.scopes()], doing)) > 0
  )
    return;
  throw new SeenStoreError('NOT_FOUND', `no seenstore store at ${location} (nothing is stored under its prefix)`);
}

export async function checkFormat(ctx: RedisContext, location: string): Promise<void> {
  const keys = ctx.keys;
  const format = text(
    await storeFormat(ctx, keys.format(), keys.scopes(), REDIS_STORE_FORMAT, 'reading the store format'),
  );
  if (format === REDIS_STORE_FORMAT) return;
  const what =
    format === 'none'
      ? 'an earlier, unversioned key layout (a development build of the Redis backend)'
      : `key layout ${format}`;
  throw new SeenStoreError(
    'FORMAT_UNSUPPORTED',
    `${location}: the store (prefix) has ${what}; this seenstore reads layout ${REDIS_STORE_FORMAT}. Export its epochs with the seenstore that wrote them and import them here`,
  );
}

/**
 * An add is acknowledged once its function replied, and a master replies after writing its AOF:
 * durable only with appendonly yes and appendfsync always. Anything else is said on stderr.
 */
export async function checkDurability(ctx: RedisContext, location: string): Promise<void> {
  const replies = await ctx.eachMaster(['CONFIG', 'GET', 'append*'], "reading the masters' durability settings");
  for (const { node, reply } of replies) {
    const values = pairs(reply);
    if (values.get('appendonly') !== 'yes' || values.get('appendfsync') !== 'always') {
      ctx.warn(
        `warning: ${location}: Redis node ${node} has appendonly ${values.get('appendonly') ?? '?'}, appendfsync ${values.get('appendfsync') ?? '?'}: ` +
          'acknowledged adds can be lost in a crash of that node (set appendonly yes, appendfsync always; docs/redis.md)',
      );
    }
  }
}
