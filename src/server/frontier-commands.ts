import type { LeasedUrl } from '../index.js';
import { argInteger, argKeyword, argText, argTexts, wrongArity } from './args.js';
import { checkItemCount } from './bloom-commands.js';
import { seenCommand } from './epoch-commands.js';
import type { CommandSpec } from './command-table.js';
import { ReplyError, type ClientState, type ServerContext } from './context.js';
import { array, boolArray, bulk, integer, map, nil, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';

/**
 * Frontier commands (docs/frontier.md, docs/server.md): the scope's durable queue of URLs found new
 * and not yet finished, for crawlers in any language (the Scrapy scheduler of integrations/scrapy).
 * SEEN.ENQUEUE is an add-if-absent whose new URLs are queued in the same atomic step; take leases
 * URLs, done finishes them, release gives them back (with new data), reclaim gives back every
 * lease an owner holds. Data travels as JSON text.
 */
export function frontierCommands(): CommandSpec[] {
  const seen = seenCommand;
  return [
    seen(
      'SEEN.ENQUEUE',
      -3,
      true,
      'Adds the items; queues the new ones in the same step; 1 per queued item',
      'SEEN.ENQUEUE key item [item ...]',
      enqueue,
    ),
    seen(
      'SEEN.ENQUEUEDATA',
      -4,
      true,
      'As SEEN.ENQUEUE, each item with its JSON data',
      'SEEN.ENQUEUEDATA key item data [item data ...]',
      enqueueData,
    ),
    seen(
      'SEEN.TAKE',
      -3,
      true,
      'Leases up to count queued items of ready queues: [id, item, attempts, data] each',
      'SEEN.TAKE key count [LEASE ms] [OWNER name] [PERQUEUE n] [MAXQUEUES n]',
      take,
    ),
    seen('SEEN.DONE', -3, true, 'Finishes taken items by id; answers how many', 'SEEN.DONE key id [id ...]', done),
    seen(
      'SEEN.RELEASE',
      -3,
      true,
      'Gives taken items back by id; answers how many',
      'SEEN.RELEASE key id [id ...]',
      release,
    ),
    seen(
      'SEEN.RELEASEDATA',
      -4,
      true,
      "As SEEN.RELEASE, replacing each item's JSON data",
      'SEEN.RELEASEDATA key id data [id data ...]',
      releaseData,
    ),
    seen(
      'SEEN.RECLAIM',
      3,
      true,
      'Gives back every lease an owner holds; answers how many',
      'SEEN.RECLAIM key owner',
      reclaim,
    ),
    seen('SEEN.FRONTIER', 2, false, 'The frontier: pending, leased, done, failed', 'SEEN.FRONTIER key', stats),
  ];
}

async function enqueue(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  checkItemCount(server, request, 2);
  const urls = argTexts(request, 2);
  server.metrics.urls.inc({ op: 'enqueued' }, urls.length);
  const fresh = await (await server.scope(argText(request, 1))).scope.enqueue(urls);
  return boolArray(fresh, 0, fresh.length, proto);
}

async function enqueueData(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  if ((request.argc - 2) % 2 !== 0) throw wrongArity('seen.enqueuedata');
  checkItemCount(server, request, 2);
  const { keys, data } = pairs(request, 2);
  server.metrics.urls.inc({ op: 'enqueued' }, keys.length);
  const fresh = await (await server.scope(argText(request, 1))).scope.enqueue(keys, { data });
  return boolArray(fresh, 0, fresh.length, proto);
}

async function take(server: ServerContext, _client: ClientState, request: Request, proto: Protocol): Promise<Encoded> {
  const count = argInteger(request, 2, 'ERR count must be a whole number');
  const options: { leaseMs?: number; owner?: string; perQueue?: number; maxQueues?: number } = {};
  for (let i = 3; i < request.argc; i += 2) {
    const option = argKeyword(request, i);
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    if (option === 'LEASE')
      options.leaseMs = argInteger(request, i + 1, 'ERR LEASE must be a whole number of milliseconds');
    else if (option === 'OWNER') options.owner = argText(request, i + 1);
    else if (option === 'PERQUEUE')
      options.perQueue = argInteger(request, i + 1, 'ERR PERQUEUE must be a whole number');
    else if (option === 'MAXQUEUES')
      options.maxQueues = argInteger(request, i + 1, 'ERR MAXQUEUES must be a whole number');
    else throw new ReplyError('ERR syntax error');
  }
  const leased = await (await server.scope(argText(request, 1))).scope.frontier().take(count, options);
  return array(leased.map((entry) => leasedReply(entry, proto)));
}

function leasedReply(entry: LeasedUrl, proto: Protocol): Encoded {
  return array([
    bulk(entry.id),
    bulk(entry.url),
    integer(entry.attempts),
    entry.data === undefined ? nil(proto) : bulk(JSON.stringify(entry.data)),
  ]);
}

async function done(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  return integer(await (await server.scope(argText(request, 1))).scope.frontier().done(argTexts(request, 2)));
}

async function release(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  return integer(await (await server.scope(argText(request, 1))).scope.frontier().release(argTexts(request, 2)));
}

async function releaseData(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  if ((request.argc - 2) % 2 !== 0) throw wrongArity('seen.releasedata');
  const { keys, data } = pairs(request, 2);
  return integer(await (await server.scope(argText(request, 1))).scope.frontier().release(keys, data));
}

async function reclaim(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  return integer(await (await server.scope(argText(request, 1))).scope.frontier().reclaim(argText(request, 2)));
}

async function stats(server: ServerContext, _client: ClientState, request: Request, proto: Protocol): Promise<Encoded> {
  const s = await (await server.scope(argText(request, 1))).scope.frontier().stats();
  return map(
    [
      ['pending', integer(s.pending)],
      ['leased', integer(s.leased)],
      ['done', integer(s.done)],
      ['failed', integer(s.failed)],
    ],
    proto,
  );
}

/** Arguments from `from` as (text, JSON data) pairs. */
function pairs(request: Request, from: number): { keys: string[]; data: unknown[] } {
  const texts = argTexts(request, from);
  const keys: string[] = [];
  const data: unknown[] = [];
  for (let i = 0; i < texts.length; i += 2) {
    keys.push(texts[i]!);
    try {
      data.push(JSON.parse(texts[i + 1]!));
    } catch {
      throw new ReplyError(`ERR data of item ${i / 2 + 1} is not JSON`);
    }
  }
  return { keys, data };
}
