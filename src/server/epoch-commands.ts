import {
  parseEpochSpec,
  SeenStoreError,
  type EpochSpec,
  type EpochStats,
  type MembershipMode,
  type RotateOptions,
} from '../index.js';
import { argInteger, argKeyword, argNumber, argText, argTexts, wrongArity } from './args.js';
import { checkItemCount } from './bloom-commands.js';
import type { CommandSpec } from './command-table.js';
import { ReplyError, type ClientState, type ServerContext } from './context.js';
import { array, boolArray, bulk, double, integer, map, nil, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';

/**
 * Epoch commands, which no Redis module has (docs/server.md): rotate a scope to a new epoch with
 * fresh seeds, list its epochs, membership over several epochs, new/revisit against the last crawl,
 * diff of two epochs, prune, stats, and a snapshot of the whole store.
 */
/** A seenstore command of the command table (group `seenstore`, run in request order). */
export function seenCommand(
  name: string,
  arity: number,
  write: boolean,
  summary: string,
  syntax: string,
  run: CommandSpec['run'],
  firstKey = 1,
): CommandSpec {
  return {
    name,
    arity,
    flags: write ? ['write'] : ['readonly'],
    firstKey,
    group: 'seenstore',
    summary,
    syntax,
    kind: 'ordered',
    run,
  };
}

export function epochCommands(): CommandSpec[] {
  const seen = seenCommand;
  return [
    seen(
      'SEEN.ROTATE',
      -2,
      true,
      'Seals the open epoch and opens the next with fresh seeds',
      'SEEN.ROTATE key [CAPACITY capacity] [ERROR error_rate] [IFEPOCH n]',
      rotate,
    ),
    seen(
      'SEEN.EPOCHS',
      2,
      false,
      'One map per epoch: state, times, capacity, adds, fill, estimated FPR',
      'SEEN.EPOCHS key',
      epochs,
    ),
    seen(
      'SEEN.MEXISTS',
      -4,
      false,
      'Per item, membership over an epoch spec with any/all',
      'SEEN.MEXISTS key [EPOCHS current|previous|all|N|N..M|last:K] [MODE any|all] ITEMS item [item ...]',
      mexists,
    ),
    seen(
      'SEEN.CLASSIFY',
      -3,
      false,
      'Per item: new, or revisit (in the previous epoch)',
      'SEEN.CLASSIFY key item [item ...]',
      classify,
    ),
    seen(
      'SEEN.DIFF',
      -8,
      false,
      'Per item: both, only-from, only-to or neither',
      'SEEN.DIFF key FROM epoch TO epoch ITEMS item [item ...]',
      diff,
    ),
    seen(
      'SEEN.PRUNE',
      -4,
      true,
      'Drops sealed epochs that neither option keeps; answers their numbers',
      'SEEN.PRUNE key [KEEPLAST n] [SEALEDWITHIN seconds]',
      prune,
    ),
    seen(
      'SEEN.STATS',
      2,
      false,
      "The scope's open epoch: capacity, adds, estimated distinct, fill, estimated FPR against target",
      'SEEN.STATS key',
      stats,
    ),
    seen(
      'SEEN.SNAPSHOT',
      -1,
      true,
      'A consistent copy of the whole store in STORE/snapshots/NAME',
      'SEEN.SNAPSHOT [name]',
      snapshot,
      0,
    ),
  ];
}

function epochArg(request: Request, i: number): EpochSpec {
  try {
    return parseEpochSpec(argText(request, i));
  } catch (error) {
    if (error instanceof SeenStoreError)
      throw new ReplyError(
        `ERR epoch spec must be current, previous, all, N, N..M or last:K, got '${argText(request, i)}'`,
      );
    throw error;
  }
}

function epochMap(epoch: EpochStats, proto: Protocol): Encoded {
  return map(
    [
      ['epoch', integer(epoch.epoch)],
      ['state', bulk(epoch.state)],
      ['created_ms', integer(epoch.createdAtMs)],
      ['sealed_ms', epoch.sealedAtMs === null ? nil(proto) : integer(epoch.sealedAtMs)],
      ['capacity', integer(epoch.capacityUrls)],
      ['fpr_target', double(epoch.fprTarget, proto)],
      ['strategy', bulk(epoch.strategy)],
      ['adds', integer(epoch.adds)],
      ['new', integer(epoch.new)],
      ['submitted', integer(epoch.adds)],
      ['added', integer(epoch.new)],
      ['estimated_distinct', integer(Math.round(epoch.estimatedDistinct))],
      ['fill_ratio', double(epoch.fillRatio, proto)],
      ['estimated_fpr', double(epoch.estimatedFpr, proto)],
      ['slices', integer(epoch.slices)],
      ['bytes_on_disk', integer(epoch.bytesOnDisk)],
    ],
    proto,
  );
}

async function rotate(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  const options: { -readonly [K in keyof RotateOptions]: RotateOptions[K] } = {};
  for (let i = 2; i < request.argc; i++) {
    const option = argKeyword(request, i);
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    if (option === 'CAPACITY') options.capacityUrls = argInteger(request, ++i, 'ERR bad capacity');
    else if (option === 'ERROR') options.fprTarget = argNumber(request, ++i, 'ERR bad error rate');
    else if (option === 'IFEPOCH') options.ifEpoch = argInteger(request, ++i, 'ERR bad epoch');
    else throw new ReplyError('ERR syntax error');
  }
  const key = argText(request, 1);
  const scope = (await server.scope(key)).scope;
  if ((await scope.openEpoch()) === null) throw new ReplyError('ERR not found');
  const result = await scope.rotate(options);
  if (result === null) return nil(proto);
  server.logger.log('rotation', {
    scope: key,
    sealed: result.sealed.epoch,
    opened: result.opened.epoch,
    capacity: result.opened.capacityUrls,
    reason: result.opened.sizing.reason,
  });
  return map(
    [
      ['sealed', integer(result.sealed.epoch)],
      ['opened', integer(result.opened.epoch)],
      ['capacity', integer(result.opened.capacityUrls)],
      ['fpr_target', double(result.opened.fprTarget, proto)],
      ['sizing', bulk(result.opened.sizing.reason)],
    ],
    proto,
  );
}

async function epochs(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  const stats = await (await server.scope(argText(request, 1))).scope.stats();
  return array(stats.epochs.map((epoch) => epochMap(epoch, proto)));
}

/** The position of ITEMS after options from `from`; each option a keyword and one value, read by `take`. */
function itemsAfterOptions(
  server: ServerContext,
  request: Request,
  from: number,
  take: (option: string, value: number) => void,
): number {
  let i = from;
  for (; i < request.argc; i += 2) {
    const option = argKeyword(request, i);
    if (option === 'ITEMS') break;
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    take(option, i + 1);
  }
  if (i + 1 >= request.argc) throw wrongArity(argText(request, 0));
  checkItemCount(server, request, i + 1);
  return i + 1;
}

async function mexists(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  let epochsSpec: EpochSpec = 'current';
  let mode: MembershipMode = 'any';
  const first = itemsAfterOptions(server, request, 2, (option, at) => {
    if (option === 'EPOCHS') epochsSpec = epochArg(request, at);
    else if (option === 'MODE') {
      const value = argText(request, at).toLowerCase();
      if (value !== 'any' && value !== 'all') throw new ReplyError('ERR MODE must be any or all');
      mode = value;
    } else throw new ReplyError('ERR syntax error');
  });
  const urls = argTexts(request, first);
  server.metrics.urls.inc({ op: 'queried' }, urls.length);
  const answers = await (await server.scope(argText(request, 1))).scope.has(urls, { epochs: epochsSpec, mode });
  return boolArray(answers, 0, answers.length, proto);
}

async function classify(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  checkItemCount(server, request, 2);
  const urls = argTexts(request, 2);
  server.metrics.urls.inc({ op: 'queried' }, urls.length);
  const classes = await (await server.scope(argText(request, 1))).scope.classify(urls);
  return array(classes.map((c) => bulk(c)));
}

async function diff(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  let from: EpochSpec | undefined;
  let to: EpochSpec | undefined;
  const first = itemsAfterOptions(server, request, 2, (option, at) => {
    if (option === 'FROM') from = epochArg(request, at);
    else if (option === 'TO') to = epochArg(request, at);
    else throw new ReplyError('ERR syntax error');
  });
  if (from === undefined || to === undefined) throw new ReplyError('ERR SEEN.DIFF needs FROM and TO');
  const urls = argTexts(request, first);
  server.metrics.urls.inc({ op: 'queried' }, urls.length);
  const result = await (await server.scope(argText(request, 1))).scope.diff(urls, from, to);
  return array(result.categories.map((c) => bulk(c)));
}

async function prune(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  const options: { keepLast?: number; sealedWithinMs?: number } = {};
  for (let i = 2; i < request.argc; i += 2) {
    const option = argKeyword(request, i);
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    const value = argInteger(request, i + 1, `ERR ${option} must be a whole number`);
    if (value < 1 && option === 'KEEPLAST') throw new ReplyError('ERR KEEPLAST must be at least 1');
    if (option === 'KEEPLAST') options.keepLast = value;
    else if (option === 'SEALEDWITHIN') options.sealedWithinMs = value * 1000;
    else throw new ReplyError('ERR syntax error');
  }
  if (options.keepLast === undefined && options.sealedWithinMs === undefined) throw wrongArity('seen.prune');
  const key = argText(request, 1);
  const dropped = await (await server.scope(key)).scope.prune(options);
  for (const { epoch } of dropped) server.logger.log('prune', { scope: key, epoch });
  return array(dropped.map(({ epoch }) => integer(epoch)));
}

async function stats(server: ServerContext, _client: ClientState, request: Request, proto: Protocol): Promise<Encoded> {
  const scopeStats = await (await server.scope(argText(request, 1))).scope.stats();
  const open = scopeStats.epochs.find((epoch) => epoch.epoch === scopeStats.openEpoch);
  if (open === undefined) throw new ReplyError('ERR not found');
  return epochMap(open, proto);
}

async function snapshot(
  server: ServerContext,
  _client: ClientState,
  request: Request,
  proto: Protocol,
): Promise<Encoded> {
  if (request.argc > 2) throw wrongArity('seen.snapshot');
  const info = await server.store.snapshot(request.argc === 2 ? argText(request, 1) : undefined);
  server.logger.log('snapshot', { name: info.name, bytes: info.bytes });
  return map(
    [
      ['name', bulk(info.name)],
      ['path', bulk(info.path)],
      ['bytes', integer(info.bytes)],
      ['created_ms', integer(info.createdAtMs)],
    ],
    proto,
  );
}
