import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { SeenStore } from '../../src/index.js';
import { walkPages } from '../../src/store/lmdb/page-walk.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

/**
 * The page walk and verify against the states LMDB really leaves (docs/format.md, "What the page
 * walk checks, and why LMDB promises it"): child processes drive an LMDB store through seeded
 * operation mixes — seen-sets (add, rotate, prune, retention), a counting scope (add, delete),
 * the frontier (push, take, done, release, schedule, lease expiry by the injected clock,
 * deleteQueue), checkpoints and snapshots — each a fresh process (its first commit loads the
 * free list afresh), sometimes two at once; after each round the page walk and verify must find
 * nothing, and a reopen must answer every acknowledged URL.
 */

const CHILD = join(import.meta.dirname, 'engine-child.js');
const START_MS = 1_700_000_000_000;

export interface Acks {
  readonly seen: Map<string, Set<string>>;
  readonly pushed: Set<string>;
  readonly done: Set<string>;
  readonly gone: Set<string>;
  ids: [string, string][];
}

export const newAcks = (): Acks => ({ seen: new Map(), pushed: new Set(), done: new Set(), gone: new Set(), ids: [] });

/** Runs one child on `dir` with its clock at `clockMs`; folds the acknowledgements it printed into `acks`. */
export function runChild(dir: string, clockMs: number, plan: object, acks: Acks): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, dir, String(clockMs), JSON.stringify(plan)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      for (const line of out.split('\n').filter((l) => l !== '')) fold(JSON.parse(line), acks);
      if (code === 0) resolve();
      else reject(new Error(`child ${JSON.stringify(plan).slice(0, 80)} exited ${code}: ${err}`));
    });
  });
}

function fold(
  line: { seen?: string; urls?: string[]; pushed?: string[]; done?: string[]; gone?: string; ids?: [string, string][] },
  acks: Acks,
): void {
  if (line.seen !== undefined) {
    const set = acks.seen.get(line.seen) ?? new Set<string>();
    for (const url of line.urls!) set.add(url);
    acks.seen.set(line.seen, set);
  }
  for (const url of line.pushed ?? []) acks.pushed.add(url);
  for (const url of line.done ?? []) acks.done.add(url);
  if (line.gone !== undefined) acks.gone.add(line.gone);
  if (line.ids !== undefined) acks.ids = line.ids;
}

/** The page walk finds nothing; returns its report. */
export function assertWalkSound(dir: string, where: string): ReturnType<typeof walkPages> {
  const report = walkPages(join(dir, 'data.mdb'));
  assert.deepEqual(report.damage, [], `${where}: the page walk refused a state LMDB left`);
  return report;
}

/** Reopens the store (the open walks the pages), runs verify and asks for every acknowledged URL. */
export async function assertStoreHolds(dir: string, acks: Acks, where: string, frontierScope = 'f'): Promise<void> {
  const store = await SeenStore.open(dir, { readOnly: true });
  try {
    const report = await store.verify();
    assert.ok(report.ok, `${where}: verify: ${JSON.stringify(report.damage.slice(0, 3))}`);
    for (const [name, urls] of acks.seen) {
      const list = [...urls];
      const has = await store.scope(name).has(list, { epochs: 'all' });
      const missing = list.filter((_, i) => !has[i]);
      assert.deepEqual(
        missing.slice(0, 3),
        [],
        `${where}: ${missing.length} acknowledged URLs of scope ${name} are gone`,
      );
    }
    if (acks.pushed.size > 0) {
      const scope = store.scope(frontierScope);
      const list = [...acks.pushed];
      const has = await scope.has(list);
      assert.equal(has.filter((h) => !h).length, 0, `${where}: pushed URLs no longer seen`);
      const frontier = scope.frontier();
      let lost = 0;
      // Every URL of a small frontier, an even spread of 3,000 of a large one (one lookup each).
      const stride = Math.max(1, Math.floor(list.length / 3_000));
      for (const url of list.filter((_, i) => i % stride === 0)) {
        if (acks.done.has(url) || acks.gone.has(new URL(url).host)) continue;
        if ((await frontier.urlStatus(url)) === undefined) lost++;
      }
      assert.equal(lost, 0, `${where}: ${lost} pushed URLs, neither done nor in a deleted queue, left the frontier`);
    }
  } finally {
    await store.close();
  }
}

/**
 * Rounds of fresh child processes on one store (two at once every third round), the clock moving
 * ten minutes a round so that leases of earlier rounds run out.
 */
export async function engineStates(seed: number, rounds: number, stepsPerChild: number): Promise<{ longRuns: number }> {
  // Not tempDir (tmp.ts): the soak imports this module outside node:test, whose after() would start a test run.
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-engine-states-'));
  try {
    return await engineRounds(dir, seed, rounds, stepsPerChild);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function engineRounds(
  dir: string,
  seed: number,
  rounds: number,
  stepsPerChild: number,
): Promise<{ longRuns: number }> {
  const acks = newAcks();
  let longRuns = 0;
  for (let round = 0; round < rounds; round++) {
    const clockMs = START_MS + round * 600_000;
    const children = round % 3 === 2 ? [0, 1] : [0];
    await Promise.all(
      children.map((child) =>
        runChild(dir, clockMs, { kind: 'mix', seed: seed * 1000 + round, steps: stepsPerChild, child }, acks),
      ),
    );
    longRuns += assertWalkSound(dir, `seed ${seed} round ${round}`).longRuns;
    if (round % 2 === 1 || round === rounds - 1) await assertStoreHolds(dir, acks, `seed ${seed} round ${round}`);
  }
  return { longRuns };
}
