import assert from 'node:assert/strict';
import { SeenStore, type Scope, type ScopeFrontier } from '../../src/index.js';
import { mulberry32 } from '../../src/cli/commands/demo.js';
import { memoryStore } from './memory.js';

/**
 * The seeded differential test of a frontier driver against the memory driver (the reference):
 * one random sequence of frontier operations, run on both on one injected clock, every answer
 * compared. test/lmdb-frontier.test.ts runs it on LMDB, test/redis-frontier-diff.test.ts on a
 * Redis Cluster.
 */
export interface DifferentialSubject {
  /** The driver's name, in failure messages. */
  readonly name: string;
  /** A fresh, empty store of the driver, on `clock`. */
  readonly open: (clock: () => number) => Promise<SeenStore>;
  /** A well-formed id of the driver that names no entry: what the reference's unpaired ids stand for. */
  readonly noId: string;
  /**
   * The driver keeps a URL queued once when an enqueue finds it new while it is still queued (a
   * URL scheduled, so never added to the filter): Redis, by design (docs/frontier.md "On Redis");
   * the reference queues it a second time. Such URLs are left out of the run's enqueues.
   */
  readonly queuesRediscoveredOnce?: boolean;
  /** The hosts of the run's URLs (default HOSTS: 12, one with a port). */
  readonly hosts?: readonly string[];
}

/**
 * SEENSTORE_DIFF_TRACE=1: the reads are compared after every step too (without drawing from the
 * seeded sequence, so the run is the same), to find the step where the drivers parted.
 */
const TRACE = process.env.SEENSTORE_DIFF_TRACE === '1';

export const HOSTS: readonly string[] = Array.from({ length: 12 }, (_, i) =>
  i === 11 ? 'h11.example:8080' : `h${i}.example`,
);

interface Pair {
  readonly memory: ScopeFrontier;
  readonly subject: ScopeFrontier;
  readonly memoryScope: Scope;
  readonly subjectScope: Scope;
  readonly noId: string;
  /**
   * Ids are each driver's own (memory numbers its entries, LMDB names them `SEQ-HASH`, Redis
   * `PARTITION-N`): the reference's id of an entry -> the subject's, paired as the two first hand
   * out or report the entry.
   */
  readonly ids: Map<string, string>;
}

/**
 * Runs `steps` random frontier operations on the memory driver and on `subject`, with one
 * injected clock, and asserts that every answer is the same: the subject's indexes must give
 * exactly what the reference's plain scans give.
 */
export async function differential(subject: DifferentialSubject, seed: number, steps: number): Promise<void> {
  let nowMs = 1_700_000_000_000;
  const clock = (): number => nowMs;
  const memoryStoreHandle = await SeenStore.open(memoryStore('frontier-diff'), { clock });
  const subjectStoreHandle = await subject.open(clock);
  try {
    const memoryScope = memoryStoreHandle.scope('d', { capacityUrls: 10_000, fprTarget: 1e-9 });
    const subjectScope = subjectStoreHandle.scope('d', { capacityUrls: 10_000, fprTarget: 1e-9 });
    const pair: Pair = {
      memory: memoryScope.frontier(),
      subject: subjectScope.frontier(),
      memoryScope,
      subjectScope,
      noId: subject.noId,
      ids: new Map(),
    };
    // Seeded: the same operations on every run, and on both drivers.
    const rand = mulberry32(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
    const taken: string[] = [];
    let urlNo = 0;
    const hosts = subject.hosts ?? HOSTS;
    const url = (): string => `https://${pick(hosts)}/p/${urlNo++}`;
    const known = (): string =>
      urlNo > 0 && rand() < 0.7 ? `https://${pick(hosts)}/p/${Math.floor(rand() * urlNo)}` : url();
    for (let step = 0; step < steps; step++) {
      const op = rand();
      const where = `${subject.name} seed ${seed} step ${step}`;
      if (op < 0.2) {
        const drawn = Array.from({ length: 1 + Math.floor(rand() * 20) }, () => (rand() < 0.1 ? known() : url()));
        const urls = subject.queuesRediscoveredOnce === true ? await unlessQueuedUnseen(pair, drawn) : drawn;
        await same(pair, (scope) => scope.enqueue(urls), true, `${where} enqueue`);
      } else if (op < 0.45) {
        const options = {
          leaseMs: pick([1, 500, 5_000, 60_000]),
          perQueue: 1 + Math.floor(rand() * 4),
          maxQueues: pick([0, 0, 1, 3]),
          ...(rand() < 0.3 ? { owner: pick(['c1', 'c2']) } : {}),
          ...(rand() < 0.1 ? { queue: pick(hosts) } : {}),
        };
        const count = 1 + Math.floor(rand() * 30);
        const out = await same(
          pair,
          (frontier) => frontier.take(count, options),
          false,
          `${where} take ${JSON.stringify(options)}`,
        );
        taken.push(...out.map((entry) => entry.id));
      } else if (op < 0.6) {
        const ids = Array.from({ length: Math.floor(rand() * 6) }, () => pick(taken.length > 0 ? taken : ['1']));
        if (taken.length === 0) await pairFirst(pair);
        const refetch =
          rand() < 0.3 ? ids.map(() => (rand() < 0.5 ? 0 : nowMs + Math.floor(rand() * 5_000))) : undefined;
        await same(
          pair,
          (frontier, id) => frontier.done(ids.map(id), refetch === undefined ? {} : { refetchAtMs: refetch }),
          false,
          `${where} done`,
        );
      } else if (op < 0.67) {
        const ids = Array.from({ length: Math.floor(rand() * 4) }, () => pick(taken.length > 0 ? taken : ['1']));
        if (taken.length === 0) await pairFirst(pair);
        const data = rand() < 0.5 ? ids.map((_, i) => ({ retry: i })) : undefined;
        await same(pair, (frontier, id) => frontier.release(ids.map(id), data), false, `${where} release`);
      } else if (op < 0.7) {
        const owner = pick(['c1', 'c2']);
        await same(pair, (frontier) => frontier.reclaim(owner), false, `${where} reclaim`);
      } else if (op < 0.78) {
        const urls = Array.from({ length: 1 + Math.floor(rand() * 4) }, known);
        const at = urls.map(() => (rand() < 0.2 ? 0 : nowMs + Math.floor(rand() * 4_000) - 1_000));
        await same(pair, (frontier) => frontier.schedule(urls, at), false, `${where} schedule`);
      } else if (op < 0.84) {
        const host = pick(hosts);
        const which = rand();
        const off = rand() < 0.3;
        const amount = rand();
        await same(
          pair,
          (frontier) =>
            which < 0.4
              ? frontier.setDelay(host, off ? null : Math.floor(amount * 3_000))
              : which < 0.7
                ? frontier.blockUntil(host, off ? 0 : nowMs + Math.floor(amount * 3_000))
                : frontier.setCrawlLimit(host, off ? null : Math.floor(amount * 10)),
          false,
          `${where} setQueue`,
        );
      } else if (op < 0.87) {
        const change = rand() < 0.5 ? { delayMs: pick([0, 200, 1_000]) } : { maxInFlightPerQueue: pick([0, 1, 2]) };
        await same(pair, (frontier) => frontier.configure(change), false, `${where} configure`);
      } else if (op < 0.89) {
        const host = pick(hosts);
        await same(pair, (frontier) => frontier.deleteQueue(host), false, `${where} deleteQueue`);
      } else {
        nowMs += pick([1, 100, 300, 1_000, 2_500]);
      }
      if (step % 10 === 0 || step === steps - 1) await sameReads(pair, hosts, known(), `${where} reads`);
      else if (TRACE) await sameReads(pair, hosts, `https://${hosts[0]}/p/0`, `${where} traced reads`);
    }
  } finally {
    await memoryStoreHandle.close();
    await subjectStoreHandle.close();
  }
}

/**
 * Runs one operation on both drivers (`id` gives the driver's id of the reference's); their
 * answers (or errors) must be equal, ids compared through the pairing.
 */
async function same<T>(
  pair: Pair,
  run: (target: ScopeFrontier & Scope, id: (id: string) => string) => Promise<T>,
  onScope: boolean,
  where: string,
): Promise<T> {
  const targets = onScope ? [pair.memoryScope, pair.subjectScope] : [pair.memory, pair.subject];
  const translate = [(id: string) => id, (id: string) => pair.ids.get(id) ?? pair.noId];
  const [expected, actual] = await Promise.all(
    targets.map((target, i) =>
      run(target as never, translate[i]!).then(
        (value) => ({ value }),
        (error: Error) => ({ error: error.message }),
      ),
    ),
  );
  assert.deepEqual(pairIds(pair, expected, actual), expected, where);
  if ('error' in expected!) throw new Error(`${where}: the reference failed: ${expected.error}`);
  return expected!.value as T;
}

async function sameReads(pair: Pair, hosts: readonly string[], url: string, where: string): Promise<void> {
  for (const [name, read] of [
    ['stats', (f: ScopeFrontier) => f.stats()],
    ['listQueues', (f: ScopeFrontier) => f.listQueues({ limit: 100 })],
    ['listQueues after', (f: ScopeFrontier) => f.listQueues({ after: hosts[3]!, limit: 3 })],
    ['queue', (f: ScopeFrontier) => f.queue(hosts[1]!)],
    ['urlStatus', (f: ScopeFrontier) => f.urlStatus(url)],
    ['owners', (f: ScopeFrontier) => f.settings()],
  ] as const) {
    const expected = await (read as (f: ScopeFrontier) => Promise<unknown>)(pair.memory);
    assert.deepEqual(
      pairIds(pair, expected, await (read as (f: ScopeFrontier) => Promise<unknown>)(pair.subject)),
      expected,
      `${where}: ${name}`,
    );
  }
}

/** `urls` but those the reference holds queued and has not seen (scheduled, never enqueued). */
async function unlessQueuedUnseen(pair: Pair, urls: readonly string[]): Promise<string[]> {
  const seen = await pair.memoryScope.has(urls);
  const queued = await Promise.all(urls.map((url) => pair.memory.urlStatus(url)));
  return urls.filter((_, i) => seen[i] || queued[i] === undefined);
}

/** Pairs the reference's id 1 (the first URL queued, if it is still there) with the subject's id of that URL. */
async function pairFirst(pair: Pair): Promise<void> {
  const first = (await pair.memory.entries({ limit: 65_536 })).entries.find((entry) => entry.id === '1');
  if (first === undefined || pair.ids.has('1')) return;
  const ours = await pair.subject.urlStatus(first.url);
  if (ours !== undefined) pair.ids.set('1', ours.id);
}

/**
 * The subject's answer with each id replaced by the reference's id of the same entry: where both
 * answers hold an id at the same place, the pair is recorded the first time either id is seen; an
 * id paired with another entry's stays as it is (and fails the comparison).
 */
function pairIds(pair: Pair, expected: unknown, actual: unknown): unknown {
  if (Array.isArray(actual))
    return actual.map((item, i) => pairIds(pair, Array.isArray(expected) ? expected[i] : undefined, item));
  if (actual === null || typeof actual !== 'object') return actual;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(actual))
    out[field] = pairIds(pair, (expected as Record<string, unknown> | undefined)?.[field], value);
  const theirs = (expected as { id?: unknown } | undefined)?.id;
  const ours = (actual as { id?: unknown }).id;
  if (typeof theirs === 'string' && typeof ours === 'string') {
    const known = pair.ids.get(theirs);
    if (known === undefined && ![...pair.ids.values()].includes(ours)) pair.ids.set(theirs, ours);
    if (pair.ids.get(theirs) === ours) out.id = theirs;
  }
  return out;
}
