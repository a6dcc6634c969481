/**
 * Part 9, checkpointers (stop 37): two processes add the same URLs to one epoch, each
 * checkpointing after every batch, so that each keeps loading the other's checkpoints while the
 * other compacts the journal. Rounds alternate a counting epoch (every URL must be counted exactly
 * twice) and a classic one whose writers set bits on a second thread (`threads: 2`, filters loaded
 * whole: every URL must be seen); in both, the epoch's `submitted` must be twice the URLs. Three
 * rounds run at once. Before stop 37's fix a load could take the other process's checkpointed
 * batches for holes: a scratch version of this part lost a batch in 3 of 54 runs under load.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeenStore } from '../src/index.js';
import type { SoakContext } from './context.js';

const URLS = 20_000;
const BATCH = '1000';
const AT_ONCE = 3;

export interface CheckpointersResult {
  readonly rounds: number;
  /** URLs not counted exactly twice (counting rounds) or not seen (classic rounds), summed. */
  readonly wrongUrls: number;
  /** Rounds whose epoch's `submitted` was not twice the URLs. */
  readonly wrongCounts: number;
  readonly seconds: number;
}

function addAndCheckpoint(
  ctx: SoakContext,
  crashChild: string,
  dir: string,
  file: string,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [crashChild, dir, 'default', file, BATCH, 'none', 'checkpoint-each'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('close', (code, signal) => {
      if (code !== 0) ctx.fail(`checkpointers: a writer exited ${code ?? signal}: ${stderr.trim().slice(0, 300)}`);
      done();
    });
  });
}

/** `crashChild`: test/helpers/crash-child.js, compiled (the writer of part 1 too). */
export async function checkpointers(
  ctx: SoakContext,
  crashChild: string,
  rounds: number,
): Promise<CheckpointersResult> {
  const started = Date.now();
  const urls = ctx.urls.slice(0, URLS);
  let wrongUrls = 0;
  let wrongCounts = 0;
  const one = async (round: number): Promise<void> => {
    const counting = round % 2 === 0;
    const dir = mkdtempSync(join(tmpdir(), 'soak-checkpointers-'));
    try {
      const file = join(dir, 'urls.txt');
      writeFileSync(file, `${urls.join('\n')}\n`);
      const env = counting
        ? { CHILD_CAPACITY: '1000000', CHILD_STRATEGY: 'counting' }
        : { CHILD_CAPACITY: '1000000', CHILD_THREADS: '2' };
      await Promise.all([
        addAndCheckpoint(ctx, crashChild, dir, file, env),
        addAndCheckpoint(ctx, crashChild, dir, file, env),
      ]);
      const store = await SeenStore.open(dir);
      try {
        const scope = store.scope();
        const wrong = counting
          ? (await scope.count(urls)).filter((n) => n !== 2).length
          : (await scope.has(urls)).filter((seen) => !seen).length;
        const submitted = (await scope.stats()).epochs[0]!.submitted;
        const what = `checkpointers: round ${round + 1} (${counting ? 'counting' : 'classic, threads 2'})`;
        if (wrong > 0) ctx.fail(`${what}: ${wrong} URLs ${counting ? 'not counted exactly twice' : 'not seen'}`);
        wrongUrls += wrong;
        if (submitted !== 2 * urls.length) {
          ctx.fail(`${what}: submitted ${submitted}, not ${2 * urls.length}`);
          wrongCounts++;
        }
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // Rounds AT_ONCE at a time: the writers then contend for the CPUs, which widens the windows.
  for (let round = 0; round < rounds; round += AT_ONCE) {
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, rounds - round) }, (_, i) => one(round + i)));
    ctx.note(`checkpointers: ${Math.min(rounds, round + AT_ONCE)}/${rounds} rounds checked`);
  }
  return { rounds, wrongUrls, wrongCounts, seconds: Math.round((Date.now() - started) / 1000) };
}
