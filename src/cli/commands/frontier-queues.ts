import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import type { QueueStats } from '../../epochs/frontier.js';
import { QUEUE_KEY_MODES } from '../../url/queue-key.js';
import { holdsControlString } from '../../url/url-shape.js';
import {
  batchOptions,
  openStore,
  parseCount,
  requireScope,
  scopeName,
  warn,
  type GlobalOptions,
  type InputOptions,
} from '../context.js';
import { parseDuration } from '../duration.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, writeAll } from '../output.js';
import { parseChoice } from '../parse.js';

/**
 * The frontier's queues from the command line: politeness settings per scope and per queue,
 * listing and deleting queues, revisits (docs/frontier.md "Queues and politeness", "Revisits").
 */

type ConfigOptions = GlobalOptions & {
  readonly queueKey?: string;
  readonly delayMs?: string;
  readonly maxInFlight?: string;
};

/** `frontier config [--queue-key K] [--delay-ms MS] [--max-in-flight N]`: changes what is given, prints the settings. */
export async function frontierConfig(command: Command): Promise<void> {
  const options = command.optsWithGlobals<ConfigOptions>();
  const queueKey = parseChoice('queue-key', options.queueKey, QUEUE_KEY_MODES);
  const delayMs = parseCount('delay-ms', options.delayMs, 0);
  const maxInFlightPerQueue = parseCount('max-in-flight', options.maxInFlight, 0);
  const store = await openStore(options, true);
  try {
    const frontier = store.scope(scopeName(options)).frontier();
    const change = {
      ...(queueKey === undefined ? {} : { queueKey }),
      ...(delayMs === undefined ? {} : { delayMs }),
      ...(maxInFlightPerQueue === undefined ? {} : { maxInFlightPerQueue }),
    };
    const settings = Object.keys(change).length === 0 ? await frontier.settings() : await frontier.configure(change);
    process.stdout.write(
      options.json
        ? `${JSON.stringify(settings)}\n`
        : `queue key ${settings.queueKey}, delay ${settings.delayMs} ms, in flight per queue ${settings.maxInFlightPerQueue === 0 ? 'unlimited' : settings.maxInFlightPerQueue}\n`,
    );
  } finally {
    await store.close();
  }
}

/** The queue admin commands: one queue key, one value. */
export type QueueAction = 'set-delay' | 'block' | 'crawl-limit' | 'delete-queue' | 'queue';

/**
 * `frontier set-delay KEY MS|default`, `frontier block KEY DURATION|0`, `frontier crawl-limit KEY
 * N|none`, `frontier delete-queue KEY`, `frontier queue KEY`.
 */
export async function frontierQueue(
  action: QueueAction,
  key: string,
  value: string | undefined,
  command: Command,
): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const apply = queueChange(action, value);
  const store = await openStore(options, false);
  try {
    const frontier = (await requireScope(store, options)).frontier();
    if (action === 'delete-queue') {
      const removed = await frontier.deleteQueue(key);
      process.stderr.write(
        options.json
          ? `${JSON.stringify({ queue: key, removed })}\n`
          : `deleted queue ${JSON.stringify(key)}: ${formatCount(removed)} URLs\n`,
      );
      return;
    }
    const existed = apply === undefined || (await frontier.queue(key)) !== undefined;
    await apply?.(frontier, key);
    // A setting on a queue that holds nothing makes the queue: a mistyped key would otherwise leave the real one as it was, in silence.
    if (!existed)
      warn(
        `warning: the frontier had no queue ${JSON.stringify(key)}: made it, empty, with this setting (frontier queues lists the queues that hold URLs)`,
      );
    const stats = await frontier.queue(key);
    if (stats === undefined) throw new SeenStoreError('NOT_FOUND', `the frontier has no queue ${JSON.stringify(key)}`);
    process.stdout.write(`${options.json ? JSON.stringify(stats) : queueLine(stats)}\n`);
  } finally {
    await store.close();
  }
}

type Frontier = ReturnType<Awaited<ReturnType<typeof requireScope>>['frontier']>;

/** The change an action makes, checked before the store is opened. */
function queueChange(
  action: QueueAction,
  value: string | undefined,
): ((frontier: Frontier, key: string) => Promise<void>) | undefined {
  if (action === 'set-delay') {
    const delayMs = value === 'default' ? null : parseCount('delay', value, 0);
    if (delayMs === undefined) throw new SeenStoreError('USAGE', 'set-delay needs a delay in ms, or "default"');
    return (frontier, key) => frontier.setDelay(key, delayMs);
  }
  if (action === 'block') {
    if (value === undefined) throw new SeenStoreError('USAGE', 'block needs a duration (30s, 10m, 1h) or 0 to unblock');
    const forMs = value === '0' ? 0 : parseDuration('block', value, 'the DURATION of frontier block');
    return (frontier, key) => frontier.blockUntil(key, forMs === 0 ? 0 : Date.now() + forMs);
  }
  if (action === 'crawl-limit') {
    const limit = value === 'none' ? null : parseCount('crawl-limit', value, 0);
    if (limit === undefined) throw new SeenStoreError('USAGE', 'crawl-limit needs a number of URLs, or "none"');
    return (frontier, key) => frontier.setCrawlLimit(key, limit);
  }
  return undefined;
}

type ListOptions = GlobalOptions & { readonly after?: string; readonly limit?: string };

/** `frontier queues [--after KEY] [--limit N]`: one line per queue that holds URLs, in key order. */
export async function frontierQueues(command: Command): Promise<void> {
  const options = command.optsWithGlobals<ListOptions>();
  const limit = parseCount('limit', options.limit) ?? 1_000;
  const store = await openStore(options, false);
  try {
    const frontier = (await requireScope(store, options)).frontier();
    const queues = await frontier.listQueues({
      limit,
      ...(options.after === undefined ? {} : { after: options.after }),
    });
    const lines = queues.map((stats) => (options.json ? JSON.stringify(stats) : queueLine(stats)));
    if (lines.length > 0) await writeAll(process.stdout, `${lines.join('\n')}\n`);
  } finally {
    await store.close();
  }
}

/** `KEY<TAB>waiting N<TAB>leased N<TAB>completed N<TAB>ready ISO|never`, and the queue's own settings. */
function queueLine(stats: QueueStats): string {
  const ready = stats.readyAtMs === undefined ? 'never' : new Date(stats.readyAtMs).toISOString();
  const own = [
    stats.delayMs === undefined ? '' : `delay ${stats.delayMs} ms`,
    stats.blockedUntilMs > 0 ? `blocked until ${new Date(stats.blockedUntilMs).toISOString()}` : '',
    stats.crawlLimit === undefined ? '' : `crawl limit ${stats.crawlLimit}`,
  ].filter((part) => part !== '');
  return [
    stats.key,
    `waiting ${stats.waiting}`,
    `leased ${stats.leased}`,
    `completed ${stats.completed}`,
    `ready ${ready}`,
    ...own,
  ].join('\t');
}

type ScheduleOptions = GlobalOptions & InputOptions & { readonly in?: string };

/**
 * `frontier schedule [FILE] --in DURATION`: the URLs (one per line) wait until then, queued before
 * or not; `--in 0` finishes them. Prints how many wait.
 */
export async function frontierSchedule(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<ScheduleOptions>();
  if (options.in === undefined)
    throw new SeenStoreError('USAGE', 'schedule needs --in DURATION (0 to finish the URLs instead)');
  const inMs = options.in === '0' ? 0 : parseDuration('in', options.in);
  const store = await openStore(options, true, file);
  try {
    const scope = store.scope(scopeName(options));
    const frontier = scope.frontier();
    let waiting = 0;
    // A line is a URL as it is, not trimmed; with URL keys, not one with a control character.
    const urlKeys = (await scope.normalizeMode()) !== 'none';
    const batching = {
      ...batchOptions(options, 'none'),
      accept: (line: string) => !urlKeys || !holdsControlString(line, 0, line.length),
    };
    const counts = await forEachBatch(openInputChunks(file), batching, async (lines) => {
      waiting += await frontier.schedule(lines, inMs === 0 ? 0 : Date.now() + inMs);
    });
    const summary = { read: counts.read, waiting, invalid: counts.invalid };
    process.stderr.write(
      options.json
        ? `${JSON.stringify(summary)}\n`
        : `seenstore: frontier schedule: read ${formatCount(counts.read)}, ${formatCount(waiting)} scheduled\n`,
    );
  } finally {
    await store.close();
  }
}

/** `frontier status URL`: where the URL is in the frontier (waiting, scheduled, leased), or "not queued". */
export async function frontierStatus(url: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStore(options, false);
  try {
    const status = await (await requireScope(store, options)).frontier().urlStatus(url);
    if (options.json) process.stdout.write(`${JSON.stringify(status ?? { state: 'not-queued' })}\n`);
    else
      process.stdout.write(
        status === undefined
          ? 'not queued\n'
          : `${status.state} in queue ${JSON.stringify(status.queue)} ${status.state === 'leased' ? 'until' : 'from'} ${new Date(status.atMs).toISOString()}, attempts ${status.attempts}, id ${status.id}\n`,
      );
  } finally {
    await store.close();
  }
}
