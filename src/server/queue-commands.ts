import { queueOf, type QueueStats } from '../epochs/frontier.js';
import { QUEUE_KEY_MODES, type QueueKeyMode } from '../url/queue-key.js';
import { argInteger, argKeyword, argText, argTexts, wrongArity } from './args.js';
import { checkItemCount } from './bloom-commands.js';
import type { CommandSpec } from './command-table.js';
import { ReplyError, type ClientState, type ServerContext } from './context.js';
import { seenCommand } from './epoch-commands.js';
import { array, boolArray, bulk, integer, map, nil, simple, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';

/**
 * The frontier's queues over RESP (docs/frontier.md "Queues and politeness", docs/server.md): the
 * scope's politeness defaults, a queue's own delay, block and crawl limit, listing and deleting
 * queues, and revisits. Times are ms since the Unix epoch; values are checked by the library
 * (a refusal is `ERR USAGE ...`).
 */
export function queueCommands(): CommandSpec[] {
  const seen = seenCommand;
  return [
    seen(
      'SEEN.QCONFIG',
      -2,
      true,
      "The frontier's settings, changed by the options given",
      'SEEN.QCONFIG key [QUEUEKEY host|domain|none] [DELAY ms] [MAXINFLIGHT n]',
      config,
    ),
    seen(
      'SEEN.QDELAY',
      4,
      true,
      "A queue's own delay between two takes, in ms (DEFAULT: the frontier's)",
      'SEEN.QDELAY key queue ms|DEFAULT',
      setDelay,
    ),
    seen(
      'SEEN.QBLOCK',
      4,
      true,
      'The queue hands out nothing before the time (ms since the Unix epoch; 0 unblocks)',
      'SEEN.QBLOCK key queue until-ms',
      block,
    ),
    seen(
      'SEEN.QLIMIT',
      4,
      true,
      'Once n URLs of the queue are done it hands out no more (NONE: no limit)',
      'SEEN.QLIMIT key queue n|NONE',
      crawlLimit,
    ),
    seen('SEEN.QINFO', 3, false, "One queue's counts and settings, nil when it has none", 'SEEN.QINFO key queue', info),
    seen(
      'SEEN.QLIST',
      -2,
      false,
      'Queues that hold URLs in key order: [key, waiting, leased, completed, ready-at-ms or -1] each',
      'SEEN.QLIST key [AFTER queue] [LIMIT n]',
      list,
    ),
    seen(
      'SEEN.QDELETE',
      3,
      true,
      'Removes a queue with its URLs; answers how many it held',
      'SEEN.QDELETE key queue',
      deleteQueue,
    ),
    seen(
      'SEEN.ENQUEUEFOR',
      -5,
      true,
      "As SEEN.ENQUEUEDATA, each item queued by its URL's host (the item can be any key: a fingerprint)",
      'SEEN.ENQUEUEFOR key item url data [item url data ...]',
      enqueueFor,
    ),
    seen(
      'SEEN.SCHEDULE',
      -4,
      true,
      'Revisits: the items wait until the time (ms since the Unix epoch; 0 finishes them); answers how many wait',
      'SEEN.SCHEDULE key at-ms item [item ...]',
      schedule,
    ),
  ];
}

/** Items whose key is not their URL (Scrapy's fingerprints): each joins the queue of its URL. */
async function enqueueFor(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  if ((request.argc - 2) % 3 !== 0) throw wrongArity('seen.enqueuefor');
  checkItemCount(server, request, 2);
  const texts = argTexts(request, 2);
  const served = (await server.scope(argText(request, 1))).scope;
  const mode = (await served.frontier().settings()).queueKey;
  const keys: string[] = [];
  const queues: string[] = [];
  const data: unknown[] = [];
  for (let i = 0; i < texts.length; i += 3) {
    keys.push(texts[i]!);
    queues.push(queueOf(texts[i + 1]!, mode));
    try {
      data.push(JSON.parse(texts[i + 2]!));
    } catch {
      throw new ReplyError(`ERR data of item ${i / 3 + 1} is not JSON`);
    }
  }
  server.metrics.urls.inc({ op: 'enqueued' }, keys.length);
  const fresh = await served.enqueue(keys, { data, queues });
  return boolArray(fresh, 0, fresh.length, proto);
}

async function frontierOf(server: ServerContext, request: Request) {
  return (await server.scope(argText(request, 1))).scope.frontier();
}

async function config(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  const change: { queueKey?: QueueKeyMode; delayMs?: number; maxInFlightPerQueue?: number } = {};
  for (let i = 2; i < request.argc; i += 2) {
    const option = argKeyword(request, i);
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    if (option === 'QUEUEKEY') {
      const mode = argText(request, i + 1);
      if (!(QUEUE_KEY_MODES as readonly string[]).includes(mode))
        throw new ReplyError(`ERR QUEUEKEY must be one of ${QUEUE_KEY_MODES.join(', ')}`);
      change.queueKey = mode as QueueKeyMode;
    } else if (option === 'DELAY')
      change.delayMs = argInteger(request, i + 1, 'ERR DELAY must be a whole number of milliseconds');
    else if (option === 'MAXINFLIGHT')
      change.maxInFlightPerQueue = argInteger(request, i + 1, 'ERR MAXINFLIGHT must be a whole number');
    else throw new ReplyError('ERR syntax error');
  }
  const frontier = await frontierOf(server, request);
  const settings = Object.keys(change).length === 0 ? await frontier.settings() : await frontier.configure(change);
  return map(
    [
      ['queuekey', bulk(settings.queueKey)],
      ['delay', integer(settings.delayMs)],
      ['maxinflight', integer(settings.maxInFlightPerQueue)],
    ],
    proto,
  );
}

async function setDelay(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  const delayMs =
    argKeyword(request, 3) === 'DEFAULT'
      ? null
      : argInteger(request, 3, 'ERR the delay must be a whole number of milliseconds, or DEFAULT');
  await (await frontierOf(server, request)).setDelay(argText(request, 2), delayMs);
  return simple('OK');
}

async function block(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  await (await frontierOf(server, request)).blockUntil(
    argText(request, 2),
    argInteger(request, 3, 'ERR the time must be a whole number of ms since the Unix epoch'),
  );
  return simple('OK');
}

async function crawlLimit(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  const limit =
    argKeyword(request, 3) === 'NONE'
      ? null
      : argInteger(request, 3, 'ERR the crawl limit must be a whole number, or NONE');
  await (await frontierOf(server, request)).setCrawlLimit(argText(request, 2), limit);
  return simple('OK');
}

async function info(server: ServerContext, _client: ClientState, request: Request, proto: Protocol): Promise<Encoded> {
  const stats = await (await frontierOf(server, request)).queue(argText(request, 2));
  if (stats === undefined) return nil(proto);
  return map(
    [
      ['waiting', integer(stats.waiting)],
      ['leased', integer(stats.leased)],
      ['completed', integer(stats.completed)],
      ['ready', integer(stats.readyAtMs ?? -1)],
      ['delay', integer(stats.delayMs ?? -1)],
      ['blocked', integer(stats.blockedUntilMs)],
      ['limit', integer(stats.crawlLimit ?? -1)],
    ],
    proto,
  );
}

async function list(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  let after: string | undefined;
  let limit = 1_000;
  for (let i = 2; i < request.argc; i += 2) {
    const option = argKeyword(request, i);
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    if (option === 'AFTER') after = argText(request, i + 1);
    else if (option === 'LIMIT') limit = argInteger(request, i + 1, 'ERR LIMIT must be a whole number');
    else throw new ReplyError('ERR syntax error');
  }
  const queues = await (await frontierOf(server, request)).listQueues({
    limit,
    ...(after === undefined ? {} : { after }),
  });
  return array(queues.map(queueRow));
}

function queueRow(stats: QueueStats): Encoded {
  return array([
    bulk(stats.key),
    integer(stats.waiting),
    integer(stats.leased),
    integer(stats.completed),
    integer(stats.readyAtMs ?? -1),
  ]);
}

async function deleteQueue(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  return integer(await (await frontierOf(server, request)).deleteQueue(argText(request, 2)));
}

async function schedule(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  checkItemCount(server, request, 3);
  const atMs = argInteger(request, 2, 'ERR the time must be a whole number of ms since the Unix epoch');
  return integer(await (await frontierOf(server, request)).schedule(argTexts(request, 3), atMs));
}
