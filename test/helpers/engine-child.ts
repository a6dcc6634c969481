/**
 * A child process of test/engine-states.test.ts: opens the store at argv[2] with the clock set to
 * argv[3] (ms) and runs the plan in argv[4] (JSON), printing one JSON line per acknowledged
 * operation, so the parent counts as acknowledged only what was printed:
 *   { seen: scope, urls }       added to a seen-set scope (or counted, scope `c`)
 *   { pushed: urls }            enqueued new into the frontier of scope `f`
 *   { done: urls }              marked done (no refetch): out of the frontier, still seen
 *   { gone: host }              its queue deleted: its URLs left the frontier
 *   { ids: [[id, url], ...] }   taken (leased); { doneIds } after a planned done
 * Plans: { kind: 'mix', seed, steps, child } (a seeded random mix of every operation), or
 * { kind: 'steps', steps: [...] } (the repro of docs/format.md's overflow-reuse case).
 */
import { SeenStore } from '../../src/index.js';
import { mulberry32 } from '../../src/cli/commands/demo.js';

type Step =
  | {
      readonly op: 'push';
      readonly from: number;
      readonly count: number;
      readonly hosts: number;
      readonly batch: number;
    }
  | { readonly op: 'take'; readonly count: number; readonly leaseMs: number }
  | { readonly op: 'done'; readonly ids: readonly string[] };

type Plan =
  | { readonly kind: 'mix'; readonly seed: number; readonly steps: number; readonly child: number }
  | { readonly kind: 'steps'; readonly steps: readonly Step[] };

const [dir, clockText, planText] = process.argv.slice(2) as [string, string, string];
let nowMs = Number(clockText);
const plan = JSON.parse(planText) as Plan;
const print = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

const store = await SeenStore.open(dir, { clock: () => nowMs });
try {
  if (plan.kind === 'steps') await runSteps(plan.steps);
  else await runMix(plan.seed, plan.steps, plan.child);
} finally {
  await store.close();
}

async function runSteps(steps: readonly Step[]): Promise<void> {
  // The CLI's scope, which the reproduction's push and take used.
  const frontier = store.scope('default');
  for (const step of steps) {
    if (step.op === 'push') {
      for (let at = step.from; at < step.from + step.count; at += step.batch) {
        const urls = Array.from(
          { length: Math.min(step.batch, step.from + step.count - at) },
          (_, i) => `http://h${(at + i) % step.hosts}.example/p${at + i}`,
        );
        const fresh = await frontier.enqueue(urls);
        print({ pushed: urls.filter((_, i) => fresh[i]) });
      }
    } else if (step.op === 'take') {
      const taken = await frontier.frontier().take(step.count, { leaseMs: step.leaseMs });
      print({ ids: taken.map((entry) => [entry.id, entry.url]) });
    } else {
      await frontier.frontier().done(step.ids);
      print({ doneIds: step.ids });
    }
  }
}

async function runMix(seed: number, steps: number, child: number): Promise<void> {
  const rand = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const int = (n: number): number => Math.floor(rand() * n);
  const seen = store.scope('s', { capacityUrls: 200_000, fprTarget: 1e-9 });
  const rotating = store.scope('r', { capacityUrls: 20_000, fprTarget: 1e-9 });
  const churn = store.scope('p', { capacityUrls: 50_000, fprTarget: 1e-6 });
  const counting = store.scope('c', { strategy: 'counting', capacityUrls: 20_000 });
  const scope = store.scope('f', { capacityUrls: 1_000_000, fprTarget: 1e-9 });
  const frontier = scope.frontier();
  let urlNo = 0;
  const url = (host: string): string => `http://${host}/c${child}s${seed}/${urlNo++}`;
  const host = (): string => `h${int(200)}.example`;
  const taken: [string, string][] = [];
  const pushed: string[] = [];
  for (let step = 0; step < steps; step++) {
    const op = rand();
    if (op < 0.14) {
      const urls = Array.from({ length: 20 + int(400) }, () => url(host()));
      await seen.add(urls);
      print({ seen: 's', urls });
    } else if (op < 0.2) {
      const urls = Array.from({ length: 10 + int(200) }, () => url(host()));
      await rotating.add(urls);
      print({ seen: 'r', urls });
      if (rand() < 0.3) await rotating.rotate();
    } else if (op < 0.26) {
      await churn.add(Array.from({ length: 100 + int(3_000) }, () => url(host())));
      if (rand() < 0.4) await churn.rotate();
      if (rand() < 0.4) await churn.prune(rand() < 0.5 ? { keepLast: 1 + int(2) } : { sealedWithinMs: int(60_000) });
    } else if (op < 0.31) {
      const keep = Array.from({ length: 5 + int(50) }, () => url(host()));
      const drop = Array.from({ length: 5 + int(50) }, () => url(`gone${child}.example`));
      await counting.add([...keep, ...drop]);
      print({ seen: 'c', urls: keep });
      await counting.delete(drop);
    } else if (op < 0.45) {
      const own = rand() < 0.1 ? `del-${child}-${seed}-${int(3)}.example` : undefined;
      const urls = Array.from({ length: 50 + int(own === undefined ? 2_500 : 50) }, () => url(own ?? host()));
      const fresh = await scope.enqueue(urls);
      const queued = urls.filter((_, i) => fresh[i]);
      pushed.push(...queued);
      print({ pushed: queued });
    } else if (op < 0.58) {
      const out = await frontier.take(1 + int(3_000), {
        leaseMs: pick([1_000, 60_000, 600_000]),
        perQueue: 1 + int(50),
      });
      taken.push(...out.map((entry): [string, string] => [entry.id, entry.url]));
    } else if (op < 0.7) {
      const batch = taken.splice(0, int(taken.length + 1));
      const refetch = rand() < 0.2;
      await frontier.done(
        batch.map(([id]) => id),
        refetch ? { refetchAtMs: batch.map(() => nowMs + 1 + int(100_000)) } : {},
      );
      // A done of a lease that ran out and was taken again may not count: the parent allows either.
      if (!refetch) print({ done: batch.map(([, u]) => u) });
    } else if (op < 0.76) {
      const batch = taken.splice(0, int(Math.min(taken.length, 200) + 1));
      await frontier.release(
        batch.map(([id]) => id),
        rand() < 0.5 ? batch.map((_, i) => ({ retry: i })) : undefined,
      );
    } else if (op < 0.8) {
      const urls = Array.from({ length: 1 + int(100) }, () =>
        pushed.length > 0 && rand() < 0.5 ? pick(pushed) : url(host()),
      );
      await frontier.schedule(
        urls,
        urls.map(() => nowMs + int(200_000)),
      );
    } else if (op < 0.82) {
      const queue = `del-${child}-${seed}-${int(3)}.example`;
      await frontier.deleteQueue(queue);
      print({ gone: queue });
    } else if (op < 0.86) {
      await store.checkpoint();
    } else if (op < 0.88) {
      const name = `e${child}-${seed}-${step}`;
      await store.snapshot(name);
      await store.deleteSnapshot(name);
    } else {
      nowMs += pick([500, 5_000, 70_000, 700_000]);
    }
  }
}
