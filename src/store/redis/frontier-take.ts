import { SeenStoreError } from '../../errors.js';
import type { LeasedUrl, TakeRequest } from '../backend.js';
import { faultPoint } from '../faults.js';
import type { Reply } from './connection.js';
import { list, text, type RedisContext } from './context.js';
import { range, type FrontierPartitions } from './frontier-partitions.js';
import type { Settings } from './frontier-settings.js';
import { pickQueues, type Candidate } from './queue-picks.js';
import { readyQueues, takeQueues } from './queue-functions.js';

/** Most rounds of one take (a round reads ready queues, then takes them; racing takers may leave it short). */
const MAX_TAKE_ROUNDS = 16;
/** Most ready queues read from one partition per round. */
const CANDIDATES_PER_PARTITION = 1_000;

/**
 * Reads the ready queues of every partition (or of the requested queue's), picks queues across
 * them oldest ready first (queue-picks.ts), and takes them, each partition's picks in one call
 * that checks their gates again; racing takers leave a round short, and the next round picks
 * among the queues still ready.
 */
export async function takeUrls(p: FrontierPartitions, s: Settings, request: TakeRequest): Promise<LeasedUrl[]> {
  const partitions = request.queue === undefined ? range(s.partitions) : [p.route(request.queue, s)];
  const out: LeasedUrl[] = [];
  const tried = new Set<string>();
  const skipped = new Map<number, number>();
  let queuesOut = 0;
  for (let round = 0; round < MAX_TAKE_ROUNDS && out.length < request.count; round++) {
    const limit = candidateLimit(request, partitions.length);
    const read = await Promise.all(
      partitions.map((i) =>
        candidates(p, i, s, skipped.get(i) ?? 0, limit, request.queue === undefined ? '' : `=${request.queue}`),
      ),
    );
    const more = read.some((found) => found.length >= limit);
    const picked = pickQueues(read.flat(), request, out.length, queuesOut, tried, skipped);
    if (picked.size === 0) {
      if (!more) break;
      continue;
    }
    const taken = await Promise.all([...picked].map(([i, picks]) => takeFrom(p, i, s, request, picks)));
    const byQueue = new Map<string, LeasedUrl[]>();
    for (const entry of taken.flat()) byQueue.set(entry.queue, [...(byQueue.get(entry.queue) ?? []), entry]);
    const order = [...picked.values()].flat().sort((a, b) => a.order - b.order);
    for (const pick of order) {
      tried.add(pick.key);
      const leased = byQueue.get(pick.key);
      if (leased === undefined) continue;
      out.push(...leased);
      queuesOut++;
    }
  }
  return out.slice(0, request.count);
}

async function candidates(
  p: FrontierPartitions,
  i: number,
  s: Settings,
  offset: number,
  limit: number,
  only: string,
): Promise<Candidate[]> {
  const reply = list(
    await readyQueues(p.ctx, p.keys(i), s, offset, limit, only, p.doing('reading the ready queues of')),
  );
  const out: Candidate[] = [];
  for (let at = 1; at + 3 < reply.length; at += 4) {
    out.push({
      partition: i,
      key: text(reply[at]),
      readyAtMs: Number(reply[at + 1]),
      lastTakeMs: Number(reply[at + 2]),
      available: Number(reply[at + 3]),
    });
  }
  return out;
}

async function takeFrom(
  p: FrontierPartitions,
  i: number,
  s: Settings,
  request: TakeRequest,
  picks: readonly { key: string; quota: number }[],
): Promise<LeasedUrl[]> {
  const sentAtMs = p.ctx.now();
  const reply = list(
    await p.answered(i, (answer) =>
      takeQueues(p.ctx, p.keys(i), answer, s, request.leaseMs, request.owner ?? '', picks, p.doing('taking from')),
    ),
  );
  faultPoint('frontier:take-after-commit');
  if (leaseOutlived(sentAtMs, request.leaseMs, reply.length, p.ctx)) return [];
  return reply.map((entry) => leased(p, i, list(entry)));
}

/** A take's entry (`take_queue` in lua/queue-take.lua: id, URL, queue, epoch, attempts, lease end, data or ''), checked right after reading. */
function leased(p: FrontierPartitions, i: number, entry: Reply[]): LeasedUrl {
  const id = `${i}-${text(entry[0])}`;
  const url = text(entry[1]);
  const epoch = Number(entry[3]);
  const leasedUrl = {
    id,
    url,
    queue: text(entry[2]),
    epoch,
    attempts: Number(entry[4]),
    leaseUntilMs: Number(entry[5]),
  };
  const data = text(entry[6]);
  if (data === '') return leasedUrl;
  try {
    return { ...leasedUrl, data: JSON.parse(data) as unknown };
  } catch (error) {
    throw new SeenStoreError(
      'STORE_CORRUPT',
      `the frontier of ${p.scope}, entry ${id} (${url}): its data is not JSON`,
      { cause: error },
    );
  }
}

/**
 * Ready queues read from each partition per round: twice a partition's share of the queues a take
 * may hand out (at least 8), so that a take reads about as many queues as it hands out whatever
 * the frontier holds; a round that reads a full list from some partition is followed by another.
 */
function candidateLimit(request: TakeRequest, partitions: number): number {
  const queues = Math.min(request.count, request.maxQueues || request.count);
  return Math.min(CANDIDATES_PER_PARTITION, queues, Math.max(8, Math.ceil((2 * queues) / partitions)));
}

/**
 * Whether a take's answer came too late to hand out: its leases began after `sentAtMs` (Redis ran
 * the call after it was sent) and last `leaseMs`, so once that much time has passed since the
 * send, they may have run out and another taker may hold the same URLs (a take held behind a
 * WAIT for a stalled replica). Such entries are not returned: their leases running out gives them
 * back. Redis's clock is never compared with this one; the time elapsed is the store's clock's
 * (RedisContext.now), which its calls pass as Redis's now when it has one: the clock of the lease.
 */
function leaseOutlived(sentAtMs: number, leaseMs: number, entries: number, ctx: RedisContext): boolean {
  const elapsedMs = ctx.now() - sentAtMs;
  if (elapsedMs < leaseMs || entries === 0) return false;
  ctx.warn(
    `a frontier take was answered after ${elapsedMs} ms, past its ${leaseMs} ms lease: its ${entries} URLs are not handed out, and come back as their leases have run out`,
  );
  return true;
}
