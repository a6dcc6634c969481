import { isUtf8 } from 'node:buffer';
import type { ScopeOptions } from '../index.js';
import { argInteger, argKeyword, argLength, argNumber, argText, argTexts, wrongArity } from './args.js';
import type { CommandSpec } from './command-table.js';
import { ReplyError, type ClientState, type ScopeHandle, type ServerContext } from './context.js';
import { errorReply } from './errors.js';
import { array, bool, boolArray, double, integer, map, OK, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';

/** The largest URL the library takes, in UTF-8 bytes (longer ones are INVALID_URL). */
const ITEM_BYTES_MAX = 64 * 1024;
/** RedisBloom's EXPANSION is any whole number >= 1; seenstore's growth factor (scalable:F,T) goes up to 8. */
const EXPANSION_MAX = 8;
/** The error tightening of each new slice: RedisBloom's and seenstore's default. */
const TIGHTENING = 0.5;

/**
 * RedisBloom's Bloom commands over seenstore scopes: a key is a scope, its filter the scope's open
 * epoch. Syntax, reply types and the error strings clients match on follow RedisBloom 2.x;
 * docs/server.md lists where seenstore differs.
 */
export function bloomCommands(): CommandSpec[] {
  const bf = (
    name: string,
    arity: number,
    kind: CommandSpec['kind'],
    summary: string,
    syntax: string,
    run: CommandSpec['run'],
  ): CommandSpec => ({
    name,
    arity,
    flags: kind === 'write' ? ['write', 'denyoom'] : ['readonly', 'fast'],
    firstKey: 1,
    group: 'bf',
    summary,
    syntax,
    kind,
    run,
  });
  return [
    bf(
      'BF.RESERVE',
      -4,
      'ordered',
      'Creates a scope sized for capacity at error_rate',
      'BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]',
      reserve,
    ),
    bf(
      'BF.ADD',
      3,
      'write',
      'Adds an item; 1 if it was new (durable when answered)',
      'BF.ADD key item',
      (server, _client, request, proto) => addItems(server, request, 2, (answers, from) => bool(answers[from]!, proto)),
    ),
    bf(
      'BF.MADD',
      -3,
      'write',
      'Adds items; per item 1 if it was new (durable when answered)',
      'BF.MADD key item [item ...]',
      (server, _client, request, proto) =>
        addItems(server, request, 2, (answers, from, count) => boolArray(answers, from, count, proto)),
    ),
    bf(
      'BF.INSERT',
      -4,
      'write',
      'Adds items, creating the scope with the given plan if needed',
      'BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE] [NONSCALING] ITEMS item [item ...]',
      insert,
    ),
    bf(
      'BF.EXISTS',
      3,
      'ordered',
      'Whether the item is (probably) in the open epoch',
      'BF.EXISTS key item',
      async (server, _client, request, proto) => bool((await exists(server, request, 2))[0]!, proto),
    ),
    bf(
      'BF.MEXISTS',
      -3,
      'ordered',
      'Per item, whether it is (probably) in the open epoch',
      'BF.MEXISTS key item [item ...]',
      async (server, _client, request, proto) => {
        const answers = await exists(server, request, 2);
        return boolArray(answers, 0, answers.length, proto);
      },
    ),
    bf(
      'BF.INFO',
      -2,
      'ordered',
      "The open epoch's capacity, size, slices, items and expansion",
      'BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]',
      bloomInfo,
    ),
    bf(
      'BF.CARD',
      2,
      'ordered',
      'Items added to the open epoch (0 when the key does not exist)',
      'BF.CARD key',
      async (server, _client, request) => {
        const stats = await (await server.scope(argText(request, 1))).scope.stats();
        return integer(stats.epochs.find((epoch) => epoch.epoch === stats.openEpoch)?.added ?? 0);
      },
    ),
  ];
}

interface Plan {
  capacityUrls?: number;
  fprTarget?: number;
  expansion?: number;
  nonScaling: boolean;
}

function planOptions(plan: Plan): ScopeOptions {
  return {
    keys: 'raw',
    ...(plan.capacityUrls === undefined ? {} : { capacityUrls: plan.capacityUrls }),
    ...(plan.fprTarget === undefined ? {} : { fprTarget: plan.fprTarget }),
    ...(plan.expansion === undefined ? {} : { strategy: `scalable:${plan.expansion},${TIGHTENING}` }),
  };
}

function errorRate(request: Request, i: number): number {
  const rate = argNumber(request, i, 'ERR bad error rate');
  if (!(rate > 0 && rate < 1)) throw new ReplyError('ERR (0 < error rate range < 1)');
  return rate;
}

function capacity(request: Request, i: number): number {
  const value = argInteger(request, i, 'ERR bad capacity');
  if (value <= 0) throw new ReplyError('ERR (capacity should be larger than 0)');
  return value;
}

function expansion(request: Request, i: number): number {
  const value = argInteger(request, i, 'ERR bad expansion');
  if (value < 1) throw new ReplyError('ERR expansion should be greater or equal to 1');
  if (value > EXPANSION_MAX)
    throw new ReplyError(
      `ERR expansion above ${EXPANSION_MAX} is not supported by seenstore (each new slice is EXPANSION times larger)`,
    );
  return value;
}

function checkPlan(plan: Plan): void {
  if (plan.nonScaling && plan.expansion !== undefined) throw new ReplyError('ERR Nonscaling filters cannot expand');
}

async function reserve(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  const plan: Plan = { fprTarget: errorRate(request, 2), capacityUrls: capacity(request, 3), nonScaling: false };
  for (let i = 4; i < request.argc; i++) {
    const option = argKeyword(request, i);
    if (option === 'EXPANSION' && i + 1 < request.argc) plan.expansion = expansion(request, ++i);
    else if (option === 'NONSCALING') plan.nonScaling = true;
    else throw new ReplyError('ERR syntax error');
  }
  checkPlan(plan);
  const created = await (await server.scope(argText(request, 1))).scope.create(planOptions(plan));
  if (!created) throw new ReplyError('ERR item exists');
  return OK;
}

/** Items firstArg.. of a command: at most --max-items. */
export function checkItemCount(server: ServerContext, request: Request, firstArg: number): void {
  const count = request.argc - firstArg;
  if (count > server.limits.itemsMax)
    throw new ReplyError(
      `ERR ${count} items in one command, over the limit of ${server.limits.itemsMax} (--max-items)`,
    );
}

/**
 * Checks items firstArg.. of a write before it joins a batch, so one bad command never fails the
 * batch it would share: not empty, at most 64 KiB, valid UTF-8. The span from the first item to
 * the last is valid UTF-8 exactly when every item is (the RESP headers between them are ASCII and
 * would break any sequence cut at an item's edge), so one check covers them all.
 */
function checkItems(server: ServerContext, request: Request, firstArg: number): void {
  checkItemCount(server, request, firstArg);
  for (let i = firstArg; i < request.argc; i++) {
    const length = argLength(request, i);
    if (length === 0 || length > ITEM_BYTES_MAX)
      throw new ReplyError(
        `INVALID_URL item ${i - firstArg + 1} is ${length === 0 ? 'empty' : `${length} bytes, over 64 KiB`}`,
      );
  }
  const { buf, offsets } = request;
  if (!isUtf8(buf.subarray(offsets[2 * firstArg], offsets[2 * request.argc - 1])))
    throw new ReplyError('INVALID_URL an item is not valid UTF-8');
}

/** Joins the items to their scope's group commit; resolves with `encode`'s reply once the batch is durable. */
async function addItems(
  server: ServerContext,
  request: Request,
  firstArg: number,
  encode: (answers: readonly boolean[], from: number, count: number) => Encoded,
  known?: ScopeHandle,
): Promise<Encoded> {
  checkItems(server, request, firstArg);
  const handle = known ?? (await server.scope(argText(request, 1)));
  const count = request.argc - firstArg;
  return new Promise((resolve) => {
    handle.commit.add({
      request,
      firstArg,
      count,
      settle: (answers, from, error) =>
        resolve(answers === undefined ? errorReply(server, error, argText(request, 0)) : encode(answers, from, count)),
    });
  });
}

async function insert(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  const plan: Plan = { nonScaling: false };
  let noCreate = false;
  let i = 2;
  for (; i < request.argc; i++) {
    const option = argKeyword(request, i);
    if (option === 'ITEMS') break;
    if (option === 'CAPACITY' && i + 1 < request.argc) plan.capacityUrls = capacity(request, ++i);
    else if (option === 'ERROR' && i + 1 < request.argc) plan.fprTarget = errorRate(request, ++i);
    else if (option === 'EXPANSION' && i + 1 < request.argc) plan.expansion = expansion(request, ++i);
    else if (option === 'NOCREATE') noCreate = true;
    else if (option === 'NONSCALING') plan.nonScaling = true;
    else throw new ReplyError('ERR syntax error');
  }
  if (i + 1 >= request.argc) throw wrongArity('bf.insert');
  checkPlan(plan);
  checkItems(server, request, i + 1);
  const handle = await server.scope(argText(request, 1));
  if ((await handle.scope.openEpoch()) === null) {
    if (noCreate) throw new ReplyError('ERR not found');
    const options = planOptions(plan);
    await handle.scope.create({
      capacityUrls: server.autoCreate.capacityUrls,
      fprTarget: server.autoCreate.fprTarget,
      ...options,
    });
  }
  return addItems(server, request, i + 1, (answers, from, count) => boolArray(answers, from, count, proto), handle);
}

async function exists(server: ServerContext, request: Request, firstArg: number): Promise<boolean[]> {
  checkItemCount(server, request, firstArg);
  const urls = argTexts(request, firstArg);
  server.metrics.urls.inc({ op: 'queried' }, urls.length);
  return (await server.scope(argText(request, 1))).scope.has(urls);
}

const INFO_FIELDS: Readonly<Record<string, string>> = {
  CAPACITY: 'Capacity',
  SIZE: 'Size',
  FILTERS: 'Number of filters',
  ITEMS: 'Number of items inserted',
  EXPANSION: 'Expansion rate',
};

async function bloomInfo(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  if (request.argc > 3) throw wrongArity('bf.info');
  const field = request.argc === 3 ? INFO_FIELDS[argKeyword(request, 2)] : undefined;
  if (request.argc === 3 && field === undefined) throw new ReplyError('ERR Invalid information value');
  const scope = (await server.scope(argText(request, 1))).scope;
  const openEpoch = await scope.openEpoch();
  if (openEpoch === null) throw new ReplyError('ERR not found');
  const epoch = await scope.epoch(openEpoch);
  let bits = 0;
  for (const slice of epoch.sliceDetails) bits += slice.mBits * slice.filters;
  const factor = epoch.growth.factor;
  const values: Record<string, Encoded> = {
    Capacity: integer(epoch.capacityUrls),
    Size: integer(Math.ceil(bits / 8)),
    'Number of filters': integer(epoch.slices),
    'Number of items inserted': integer(epoch.added),
    'Expansion rate': Number.isInteger(factor) ? integer(factor) : double(factor, proto),
  };
  if (field !== undefined) return array([values[field]!]);
  return map(Object.entries(values), proto, 'simple');
}
