import type { Command } from 'commander';
import {
  DEFAULT_PUSH_BATCH_SIZE,
  batchOptions,
  inform,
  openStore,
  warn,
  parseCount,
  requireScope,
  scopeName,
  scopeOptions,
  type GlobalOptions,
  type InputOptions,
  type PlanOptions,
} from '../context.js';
import { forEachBatch, openInputChunks, type InputCounts } from '../input.js';
import { Delivery } from '../../epochs/delivery.js';
import { closeKeepingError, deliver, deliveringBatches, redeliver, stoppedRun } from '../delivered-output.js';
import { stopOnSignals } from '../interrupt.js';
import { formatCount, summaryText, withoutZero, writeAll } from '../output.js';
import { addingScope } from '../scope-notes.js';
import { parseDuration } from '../duration.js';

type PushOptions = GlobalOptions & InputOptions & PlanOptions & { readonly redeliver?: boolean };
type TakeOptions = GlobalOptions & {
  readonly count?: string;
  readonly leaseMs?: string;
  readonly perQueue?: string;
  readonly maxQueues?: string;
  readonly queue?: string;
  readonly owner?: string;
  readonly affinity?: boolean;
};

/**
 * `frontier push [FILE]`: the URLs not seen before join the scope's frontier (and are recorded as
 * seen) in one step per batch; prints the queued URLs, like filter-new, so pipes compose, and as
 * filter-new does, at least once (the frontier holds them whatever the printing met).
 */
export async function frontierPush(file: string | undefined, command: Command): Promise<void> {
  const startMs = Date.now();
  const options = command.optsWithGlobals<PushOptions>();
  const input = openInputChunks(file);
  const signal = stopOnSignals();
  const store = await openStore(options, true, file);
  let failing = false;
  let delivery: Delivery | undefined;
  let handled = 0;
  let queued = 0;
  let redelivered = 0;
  let counts: InputCounts;
  try {
    const { scope, ready } = await addingScope(store, options, scopeOptions(options));
    delivery = await Delivery.begin(scope, { redeliver: options.redeliver !== false, enqueue: true });
    const run = delivery;
    redelivered = await redeliver(run, signal);
    counts = await forEachBatch(
      input,
      { ...deliveringBatches(batchOptions(options, await scope.normalizeMode(), DEFAULT_PUSH_BATCH_SIZE)), signal },
      async (lines) => {
        await ready();
        handled += lines.length;
        const { batch } = await run.addIfAbsent(lines, {}, true);
        await deliver(run, batch);
        queued += batch.urls;
      },
    );
    // An input read whole without a batch (empty) still creates the scope with the plan given.
    await ready();
    if (!(await run.finish()))
      warn(
        'warning: another run claimed some of the URLs this run printed while it waited on its reader: they will be printed again',
      );
  } catch (error) {
    failing = true;
    throw await stoppedRun(
      error,
      delivery,
      `${formatCount(handled)} lines recorded, ${formatCount(queued)} URLs queued and written`,
    );
  } finally {
    input.destroy();
    await closeKeepingError(store, failing);
  }
  const summary = { read: counts.read, queued, seen: counts.read - queued, invalid: counts.invalid, redelivered };
  if (options.json) process.stderr.write(`${JSON.stringify(summary)}\n`);
  else inform(options, `frontier push: ${summaryText(withoutZero(summary, 'redelivered'), Date.now() - startMs)}`);
}

/**
 * `frontier take [--count N] [--per-queue N] [--max-queues N] [--queue KEY] [--lease-ms MS] [--owner NAME [--affinity]]`:
 * prints `ID<TAB>URL` per leased URL (JSON lines with --json), of queues their politeness lets out.
 */
export async function frontierTake(command: Command): Promise<void> {
  const options = command.optsWithGlobals<TakeOptions>();
  const count = parseCount('count', options.count) ?? 1;
  const leaseMs = parseCount('lease-ms', options.leaseMs);
  const perQueue = parseCount('per-queue', options.perQueue);
  const maxQueues = parseCount('max-queues', options.maxQueues);
  const store = await openStore(options, false);
  try {
    const frontier = (await requireScope(store, options)).frontier();
    const leased = await frontier.take(count, {
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(perQueue === undefined ? {} : { perQueue }),
      ...(maxQueues === undefined ? {} : { maxQueues }),
      ...(options.queue === undefined ? {} : { queue: options.queue }),
      ...(options.owner === undefined ? {} : { owner: options.owner }),
      ...(options.affinity === true ? { affinity: true } : {}),
    });
    const lines = leased.map((entry) => (options.json ? JSON.stringify(entry) : `${entry.id}\t${entry.url}`));
    if (lines.length > 0) await writeAll(process.stdout, `${lines.join('\n')}\n`);
  } finally {
    await store.close();
  }
}

/**
 * `frontier done|release [IDS...]`: ids from the arguments, else the first field of each stdin line
 * (take's output). `done --refetch-in DURATION`: the URLs are scheduled again instead of finished;
 * `done --failed`: they were given up on, counted as failed.
 */
export async function frontierFinish(which: 'done' | 'release', ids: string[], command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { readonly refetchIn?: string; readonly failed?: boolean }>();
  const refetchInMs = options.refetchIn === undefined ? undefined : parseDuration('refetch-in', options.refetchIn);
  const given = ids.length > 0 ? ids : await idsFromStdin();
  const store = await openStore(options, false);
  try {
    const frontier = (await requireScope(store, options)).frontier();
    const refetch = refetchInMs === undefined ? {} : { refetchAtMs: given.map(() => Date.now() + refetchInMs) };
    const failed = which === 'done' && options.failed === true;
    const changed =
      which === 'done' ? await frontier.done(given, { ...refetch, failed }) : await frontier.release(given);
    const verb = which === 'release' ? 'released' : failed ? 'failed' : 'done';
    const summary = { given: given.length, [verb]: changed };
    process.stderr.write(
      options.json
        ? `${JSON.stringify(summary)}\n`
        : `${verb} ${formatCount(changed)} of ${formatCount(given.length)}\n`,
    );
  } finally {
    await store.close();
  }
}

/** `frontier reclaim OWNER`: every running lease of OWNER is given back, to be taken again at once. */
export async function frontierReclaim(owner: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(options, false);
  try {
    const reclaimed = await (await requireScope(store, options)).frontier().reclaim(owner);
    process.stderr.write(
      options.json
        ? `${JSON.stringify({ owner, reclaimed })}\n`
        : `reclaimed ${formatCount(reclaimed)} ${reclaimed === 1 ? 'lease' : 'leases'} of ${owner}\n`,
    );
  } finally {
    await store.close();
  }
}

/** `frontier stats`: pending, leased, done and failed. */
export async function frontierStats(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(options, false);
  try {
    const stats = await (await requireScope(store, options)).frontier().stats();
    process.stdout.write(
      options.json
        ? `${JSON.stringify({ scope: scopeName(options), ...stats })}\n`
        : `pending ${formatCount(stats.pending)}, leased ${formatCount(stats.leased)}, done ${formatCount(stats.done)}, failed ${formatCount(stats.failed)}, queues ${formatCount(stats.queues)}\n`,
    );
  } finally {
    await store.close();
  }
}

async function idsFromStdin(): Promise<string[]> {
  let text = '';
  for await (const chunk of process.stdin) text += (chunk as Buffer).toString('utf8');
  return text
    .split('\n')
    .map((line) => line.split('\t')[0]!.trim())
    .filter((id) => id.length > 0);
}
