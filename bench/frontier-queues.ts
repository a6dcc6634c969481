/**
 * The LMDB frontier's take with 1,000 vs 50,000 queues (issue 28's target: within 1.5x), and the
 * frontier before issue 28 side by side in the same run. Both stores hold the same 50,000 queued
 * URLs; only the number of queues (hosts) they are spread over differs, so a take whose cost grew
 * with the queues would show it. Hosts: the distinct hosts of ../shared/data (3,503 real ones),
 * the first 1,000 for the small run; the large run adds 46,497 hosts made from them (`qN.HOST`).
 * Takes hand out 100 URLs, one per queue (perQueue 1), delay 0, so every take goes through the
 * ready index; the figures are the median and p90 of 100 takes in each of two stores per setup
 * (setups alternated), and the median enqueue rate.
 *
 * The old frontier is the code of OLD_FRONTIER_COMMIT (main before issue 28: one list per scope,
 * taken oldest first), extracted with `git archive` into a temporary directory and compiled there.
 *
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/frontier-queues.js
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SeenStore } from '../src/index.js';
import { queueKeyOf } from '../src/url/queue-key.js';
import { BENCH_DIR, readUrls } from './data.js';
import { recordTargets } from './targets.js';
import { oldBuild } from './old-build.js';

/** main before issue 28 (the frontier's one list per scope). */
const OLD_FRONTIER_COMMIT = '076b5f3';
const ENTRIES = 50_000;
const TAKES = 100;
const TAKE_URLS = 100;
const ENQUEUE_BATCH = 5_000;
const ROUNDS = 2;
const ROOT = resolve(BENCH_DIR, '..');
const SHARED = resolve(ROOT, '..', 'shared', 'data');

interface Figures {
  readonly label: string;
  readonly queues: number | string;
  readonly enqueuePerSec: number;
  readonly takeMedianMs: number;
  readonly takeP90Ms: number;
}

interface FrontierLike {
  take(count: number, options: object): Promise<unknown[]>;
}
interface StoreLike {
  scope(
    name: string,
    options: object,
  ): {
    enqueue(urls: string[]): Promise<unknown>;
    frontier(): FrontierLike & { configure?(change: object): Promise<unknown> };
  };
  close(): Promise<void>;
}

function realHosts(): string[] {
  const hosts = new Set<string>();
  for (const file of ['crawl-sitelist-15k.txt', 'crawl-benign-35k.txt']) {
    for (const url of readUrls(join(SHARED, file))) {
      const host = queueKeyOf(url, 'host');
      if (host !== undefined && host !== '') hosts.add(host);
    }
  }
  return [...hosts];
}

/** `ENTRIES` URLs spread round-robin over `queues` hosts. */
function urlsOver(hosts: readonly string[], queues: number): string[] {
  const all = [...hosts];
  for (let i = 0; all.length < queues; i++) all.push(`q${Math.floor(i / hosts.length)}.${hosts[i % hosts.length]}`);
  return Array.from({ length: ENTRIES }, (_, j) => `https://${all[j % queues]}/bench/${j}`);
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** One store: the URLs enqueued, then TAKES takes timed; the enqueue rate and every take's time. */
async function run(
  open: (dir: string) => Promise<StoreLike>,
  urls: readonly string[],
  takeOptions: object,
): Promise<{ enqueuePerSec: number; takesMs: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-bench-queues-'));
  const store = await open(dir);
  try {
    const scope = store.scope('b', { capacityUrls: 2 * ENTRIES, fprTarget: 1e-6 });
    const frontier = scope.frontier();
    await frontier.configure?.({ delayMs: 0 });
    let started = process.hrtime.bigint();
    for (let i = 0; i < urls.length; i += ENQUEUE_BATCH) await scope.enqueue(urls.slice(i, i + ENQUEUE_BATCH));
    const enqueueSec = Number(process.hrtime.bigint() - started) / 1e9;
    const takesMs: number[] = [];
    for (let t = 0; t < TAKES; t++) {
      started = process.hrtime.bigint();
      const got = await frontier.take(TAKE_URLS, { leaseMs: 600_000, ...takeOptions });
      takesMs.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (got.length !== TAKE_URLS) throw new Error(`take ${t} handed out ${got.length} URLs, not ${TAKE_URLS}`);
    }
    return { enqueuePerSec: urls.length / enqueueSec, takesMs };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Figures over runs: the median enqueue rate, and the median and p90 of all takes. */
function figures(
  label: string,
  queues: number | string,
  runs: readonly { enqueuePerSec: number; takesMs: number[] }[],
): Figures {
  const takesMs = runs.flatMap((r) => r.takesMs).sort((a, b) => a - b);
  const rates = runs.map((r) => r.enqueuePerSec).sort((a, b) => a - b);
  return {
    label,
    queues,
    enqueuePerSec: quantile(rates, 0.5),
    takeMedianMs: quantile(takesMs, 0.5),
    takeP90Ms: quantile(takesMs, 0.9),
  };
}

/** The seenstore of OLD_FRONTIER_COMMIT, compiled in a temporary directory; its SeenStore class. */
async function oldSeenStore(work: string): Promise<{ open(dir: string): Promise<StoreLike> }> {
  return (await oldBuild<{ SeenStore: { open(dir: string): Promise<StoreLike> } }>(OLD_FRONTIER_COMMIT, work)).module
    .SeenStore;
}

function row(f: Figures): string {
  return `| ${f.label} | ${f.queues} | ${Math.round(f.enqueuePerSec).toLocaleString('en')} | ${f.takeMedianMs.toFixed(2)} | ${f.takeP90Ms.toFixed(2)} | ${Math.round(TAKE_URLS / (f.takeMedianMs / 1000)).toLocaleString('en')} |`;
}

if (!existsSync(join(SHARED, 'crawl-sitelist-15k.txt'))) {
  console.log(`frontier queues bench skipped: ${SHARED} is absent (the real hosts come from it)`);
} else {
  const hosts = realHosts();
  const open = (dir: string): Promise<StoreLike> => SeenStore.open(dir) as unknown as Promise<StoreLike>;
  const smallUrls = urlsOver(hosts.slice(0, 1_000), 1_000);
  const largeUrls = urlsOver(hosts, 50_000);
  const smallRuns = [];
  const largeRuns = [];
  // Alternated, so that a change in the machine's load falls on both.
  for (let round = 0; round < ROUNDS; round++) {
    smallRuns.push(await run(open, smallUrls, { perQueue: 1 }));
    largeRuns.push(await run(open, largeUrls, { perQueue: 1 }));
  }
  const small = figures('v2 (this branch)', '1,000', smallRuns);
  const large = figures('v2 (this branch)', '50,000', largeRuns);
  const work = mkdtempSync(join(tmpdir(), 'seenstore-bench-old-'));
  let old: Figures;
  try {
    const before = await oldSeenStore(work);
    const oldRuns = [];
    for (let round = 0; round < ROUNDS; round++) oldRuns.push(await run((dir) => before.open(dir), largeUrls, {}));
    old = figures(`before (${OLD_FRONTIER_COMMIT}, one list)`, 'none (50,000 hosts)', oldRuns);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const ratio = large.takeMedianMs / small.takeMedianMs;
  console.log(
    `${ENTRIES.toLocaleString('en')} queued URLs; ${ROUNDS} x ${TAKES} takes of ${TAKE_URLS} URLs; ${hosts.length.toLocaleString('en')} real hosts\n`,
  );
  console.log('| frontier | queues | enqueue URLs/s | take median ms | take p90 ms | take URLs/s |');
  console.log('|---|---|---|---|---|---|');
  for (const f of [small, large, old]) console.log(row(f));
  console.log(
    `\ntake with 50,000 queues / 1,000 queues: ${ratio.toFixed(2)}x (target <= 1.5x: ${ratio <= 1.5 ? 'met' : 'missed'})`,
  );
  recordTargets('frontier-queues', [
    {
      issue: 28,
      order: 2,
      figure: '`take` with 50k queues ÷ 1k queues — LMDB',
      measured: `${ratio.toFixed(2)}× (${large.takeMedianMs.toFixed(1)} vs ${small.takeMedianMs.toFixed(1)} ms per take)`,
      target: '≤ 1.5×',
      met: ratio <= 1.5,
    },
  ]);
}
