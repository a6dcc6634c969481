import type { TakeRequest } from '../backend.js';
import { compareReady, takeAllowance } from '../politeness.js';

/** A ready queue as a partition reported it (ss_fq_ready). */
export interface Candidate {
  readonly partition: number;
  readonly key: string;
  readonly readyAtMs: number;
  /** -1: never taken. */
  readonly lastTakeMs: number;
  /** How many URLs it could hand out when read (due, within its limits). */
  readonly available: number;
}

/** A queue a take asks its partition for: at most `quota` URLs; `order` is its place in the take. */
export interface Pick {
  readonly key: string;
  readonly quota: number;
  readonly order: number;
}

/**
 * The queues of one round of a take, by partition: the ready queues of every partition merged,
 * in take order (politeness.ts's compareReady), leaving out those this take already asked for
 * (`tried`) and those `request.owns` refuses (counted per partition in `skipped`, so the next round reads past them); each gets
 * `perQueue` URLs of the count left (no more than it has available), up to `maxQueues` queues in
 * the take (`queuesOut` so far).
 */
export function pickQueues(
  candidates: readonly Candidate[],
  request: TakeRequest,
  taken: number,
  queuesOut: number,
  tried: ReadonlySet<string>,
  skipped: Map<number, number>,
): Map<number, Pick[]> {
  const sorted = candidates.filter((c) => !tried.has(c.key)).sort(compareReady);
  const out = new Map<number, Pick[]>();
  let budget = request.count - taken;
  let queues = queuesOut;
  let order = 0;
  for (const candidate of sorted) {
    if (budget <= 0 || (request.maxQueues > 0 && queues >= request.maxQueues)) break;
    if (request.owns !== undefined && !request.owns(candidate.key)) {
      skipped.set(candidate.partition, (skipped.get(candidate.partition) ?? 0) + 1);
      continue;
    }
    const quota = takeAllowance(request.perQueue, budget, Math.max(1, candidate.available));
    budget -= quota;
    queues++;
    out.set(candidate.partition, [
      ...(out.get(candidate.partition) ?? []),
      { key: candidate.key, quota, order: order++ },
    ]);
  }
  return out;
}
