/**
 * `npm run soak`: kill -9 at random moments and several writers at once, then check that nothing
 * acknowledged was lost and nothing was reported new twice. Not part of `npm test` (the fault-point
 * versions of these checks are, in test/crash.test.ts and test/concurrency.test.ts).
 *
 *   node dist/soak/run.js [--trials N] [--writers N] [--rounds N] [--lock-trials N] [--processes N]
 *     [--race-rounds N] [--race-writers N] [--race-openers N] [--race-library-openers N] [--race-round-ms MS]
 *     [--damaged-stores N] [--checkpointer-rounds N]
 *     [--engine-seeds N] [--engine-rounds N]
 *     [--only kills,writers,locks,disk,many,race,damage,corpus,checkpointers,engine]
 *
 * Part 1, random kills (N trials, default 100): a child adds the shared URL lists in batches,
 * printing "ack N" after each acknowledged batch, in one of six workloads (checkpoint after every
 * batch, checkpoint at the end, rotate, import of an export file, prune of two sealed epochs, a
 * counting epoch checkpointed after every batch); the parent SIGKILLs it after a random delay. Then: the store opens, verifies clean, and every acknowledged URL is seen (for an
 * import: the scope is absent or answers for all of the file).
 * Half the rounds of workloads that add plain batches do so with `threads: 2` (the bit thread).
 * Part 2, writers (default 4, 5 rounds; odd writers with `--threads 2`): `filter-new` processes on overlapping slices of the lists
 * share one store, each round on a fresh scope; in each round one of them is SIGKILLed at a random
 * moment. No URL may be printed twice in a round, and every acknowledged URL (printed, or in the input
 * of a writer that finished) must be seen.
 * Part 3, stale locks and fencing (default 6 trials): see staleLocks below.
 * Part 4, a full disk (root only, else reported as skipped): see diskFull below.
 * Part 5, many processes (default 200) open on one store at once: soak/many-processes.ts.
 * Part 6, openers during commits (default 4 rounds of 15 s, 3 writers, 2 `stats` loops, 2 library openers): soak/opener-race.ts.
 * Part 7, damaged data files (default 16: 8 flipped, 8 truncated) through every command: soak/damage.ts.
 * Part 8, the bad-input corpus, every input through every URL-reading command in both modes: soak/corpus.ts.
 * Part 9, two writers checkpointing after every batch (default 30 rounds, 3 at once): soak/checkpointers.ts.
 * Part 10, engine states: seeded operation mixes in fresh processes, the page walk and verify after
 * each round (default 4 seeds × 24 rounds): soak/engine-states.ts.
 * With the defaults the whole run took about six and a half minutes on a 2-core machine (382 s)
 * before part 8, which adds about a minute (162 runs of the CLI: 54 s on a loaded machine).
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SeenStore } from '../src/index.js';
import type { SoakContext } from './context.js';
import { checkpointers } from './checkpointers.js';
import { badInputCorpus } from './corpus.js';
import { damagedStores } from './damage.js';
import { engineStatesPart } from './engine-states.js';
import { firstAckMs, killAfter } from './kills.js';
import { manyProcesses } from './many-processes.js';
import { openerRace } from './opener-race.js';
import { parseCommandLine, type Part } from './options.js';
import { allSharedUrls } from '../test/helpers/data.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CRASH_CHILD = join(ROOT, 'dist', 'test', 'helpers', 'crash-child.js');
const CLI = join(ROOT, 'dist', 'src', 'cli', 'bin.cjs');
const LOCK_CHILD = join(ROOT, 'dist', 'soak', 'lock-child.js');

const { counts: option, only: ONLY } = parseCommandLine(process.argv.slice(2));
const TRIALS = option.trials;
const WRITERS = option.writers;
const ROUNDS = option.rounds;
const LOCK_TRIALS = option['lock-trials'];
const PROCESSES = option.processes;
const RACE = {
  rounds: option['race-rounds'],
  writers: option['race-writers'],
  openers: option['race-openers'],
  libraryOpeners: option['race-library-openers'],
  roundMs: option['race-round-ms'],
};
const DAMAGED_STORES = option['damaged-stores'];
const CHECKPOINTER_ROUNDS = option['checkpointer-rounds'];
/** Runs `part` if --only asks for it (every part by default); a skipped part is `null` in the summary. */
const run = <T>(part: Part, action: () => Promise<T>): Promise<T | null> =>
  ONLY.has(part) ? action() : Promise.resolve(null);
/** The soak runs its lock trials at the smallest staleness seenstore accepts, to keep them short. */
const LOCK_STALE_MS = 2000;
/**
 * The documented bound on a takeover is lockStaleMs + 1 s: proper-lockfile stamps a fresh lock up to
 * a second ahead (it probes the file system's mtime precision), so a holder killed before its first
 * refresh leaves a lock that turns stale up to a second late. Polls add 100 ms plus an add.
 */
const TAKEOVER_SLACK_MS = 1000 + 300;

// The shared URL lists, deduplicated; in a bare clone (no ../shared/data) the tests' generated
// crawl-like stand-ins, said on stderr.
const URLS = allSharedUrls();
const failures: string[] = [];
const fail = (message: string): void => {
  failures.push(message);
  process.stderr.write(`soak: FAILURE ${message}\n`);
};

async function check(dir: string, what: string, expectSeen: string[], scope: string): Promise<void> {
  let store: SeenStore;
  try {
    store = await SeenStore.open(dir);
  } catch (error) {
    fail(`${what}: the store does not open: ${(error as Error).message}`);
    return;
  }
  try {
    const report = await store.verify();
    if (!report.ok) fail(`${what}: verify: ${report.damage.map((d) => `${d.where}: ${d.problem}`).join('; ')}`);
    if (expectSeen.length > 0) {
      const seen = await store.scope(scope).has(expectSeen, { epochs: 'all' });
      const lost = seen.filter((s) => !s).length;
      if (lost > 0) fail(`${what}: ${lost} acknowledged URLs lost`);
    }
  } finally {
    await store.close();
  }
}

async function randomKills(): Promise<{
  trials: number;
  kills: number;
  killedBy: Record<string, number>;
  acked: number;
}> {
  const file = join(mkdtempSync(join(tmpdir(), 'soak-data-')), 'urls.txt');
  writeFileSync(file, `${URLS.join('\n')}\n`);
  const exportDir = mkdtempSync(join(tmpdir(), 'soak-export-'));
  const source = await SeenStore.open(exportDir);
  await source.scope('src', { capacityUrls: 20_000_000 }).add(URLS);
  const exportFile = join(exportDir, 'big.ssx');
  await source.scope('src').export(exportFile);
  await source.close();
  const pruning = await pruneTemplate();
  const batch = 1000;
  const window = 700 + 2 * (await firstAckMs(CRASH_CHILD, file, batch));
  const killedBy: Record<string, number> = {};
  let acked = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    const dir = mkdtempSync(join(tmpdir(), 'soak-kill-'));
    const workload = ['checkpoint-each', 'end', 'rotate', 'import', 'prune', 'counting'][trial % 6]!;
    const delay = 30 + Math.floor(Math.random() * window);
    if (workload === 'prune') {
      if (await prunedAtRandom(pruning, dir, trial)) killedBy[workload] = (killedBy[workload] ?? 0) + 1;
    } else if (workload === 'import') {
      // The store exists before the kill: this trial is about the import's atomicity (a kill while
      // the store is created is test/create-kill.test.ts's).
      await (await SeenStore.open(dir)).close();
      const script = `import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
        const store = await SeenStore.open(process.argv[1]); await store.import(process.argv[2], { scope: 'imp' }); await store.close();`;
      const run = await killAfter(['--input-type=module', '-e', script, dir, exportFile], delay);
      if (run.killed) killedBy[workload] = (killedBy[workload] ?? 0) + 1;
      else if (run.code !== 0) fail(`trial ${trial} (import): exit ${run.code}: ${run.stderr}`);
      const store = await SeenStore.open(dir).catch((error: Error) => {
        fail(`trial ${trial} (import): ${error.message}`);
        return undefined;
      });
      if (store !== undefined) {
        const present = (await store.scopeNames()).includes('imp');
        if (present && !(await store.scope('imp').has(URLS, { epochs: 1 })).every(Boolean))
          fail(`trial ${trial} (import): a partial import is visible`);
        if (!present && !run.killed) fail(`trial ${trial} (import): finished but no scope`);
        if (!(await store.verify()).ok) fail(`trial ${trial} (import): verify`);
        await store.close();
      }
    } else if (workload === 'counting') {
      // A counting epoch, checkpointed after every batch: increments are not idempotent, so every
      // acknowledged URL must count exactly 1 — a lost or a twice-replayed record shows at once.
      const run = await killAfter(
        [CRASH_CHILD, dir, 'soak', file, String(batch), 'none', 'checkpoint-each'],
        delay,
        undefined,
        { CHILD_STRATEGY: 'counting' },
      );
      if (run.killed) killedBy[workload] = (killedBy[workload] ?? 0) + 1;
      else if (run.code !== 0) fail(`trial ${trial} (counting): exit ${run.code}: ${run.stderr}`);
      const batches = run.stdout.split('\n').filter((line) => line.startsWith('ack ')).length;
      acked += batches;
      const what = `trial ${trial} (counting, killed after ${delay} ms, ${batches} batches acked)`;
      await check(dir, what, URLS.slice(0, batches * batch), 'soak');
      const store = await SeenStore.open(dir, { lockStaleMs: 2000 }).catch(() => undefined);
      if (store !== undefined) {
        const counts = await store.scope('soak').count(URLS.slice(0, (batches + 1) * batch));
        const wrong = counts.slice(0, batches * batch).filter((n) => n !== 1).length;
        if (wrong > 0) fail(`${what}: ${wrong} acknowledged URLs not counted exactly once`);
        const inFlight = new Set(counts.slice(batches * batch));
        if (inFlight.size > 1 || [...inFlight].some((n) => n > 1))
          fail(`${what}: the batch in flight is counted ${[...inFlight].join(',')}`);
        await store.close();
      }
    } else {
      const mode = workload === 'end' ? 'none' : workload;
      // Every other round of the six workloads adds with the bit thread (threads: 2).
      const threads = Math.floor(trial / 6) % 2 === 0 ? 1 : 2;
      const run = await killAfter([CRASH_CHILD, dir, 'soak', file, String(batch), 'none', mode], delay, undefined, {
        CHILD_THREADS: String(threads),
      });
      const label = `${workload}${threads === 2 ? ', 2 threads' : ''}`;
      if (run.killed) killedBy[label] = (killedBy[label] ?? 0) + 1;
      else if (run.code !== 0) fail(`trial ${trial} (${label}): exit ${run.code}: ${run.stderr}`);
      const batches = run.stdout.split('\n').filter((line) => line.startsWith('ack ')).length;
      acked += batches;
      await check(
        dir,
        `trial ${trial} (${label}, killed after ${delay} ms, ${batches} batches acked)`,
        URLS.slice(0, batches * batch),
        'soak',
      );
    }
    rmSync(dir, { recursive: true, force: true });
    if ((trial + 1) % 10 === 0)
      process.stderr.write(`soak: ${trial + 1}/${TRIALS} kill trials, ${failures.length} failures\n`);
  }
  rmSync(dirname(file), { recursive: true, force: true });
  rmSync(exportDir, { recursive: true, force: true });
  rmSync(pruning.dir, { recursive: true, force: true });
  return { trials: TRIALS, kills: Object.values(killedBy).reduce((sum, n) => sum + n, 0), killedBy, acked };
}

interface PruneTemplate {
  readonly dir: string;
  /** URLs of epochs 1, 2 and 3 (3 is open). */
  readonly epochs: readonly (readonly string[])[];
  /** Wall time of one prune process that is not killed, so kills spread over all of it. */
  readonly runMs: number;
}

const PRUNE_SCRIPT = `import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
  const store = await SeenStore.open(process.argv[1]); await store.scope('old').prune({ keepLast: 1 }); await store.close();`;

/**
 * A store whose scope `old` has two sealed epochs (the first a 33 MB filter, so its delete takes
 * several transactions) and an open third, copied for every prune trial.
 */
async function pruneTemplate(): Promise<PruneTemplate> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-prune-template-'));
  const third = Math.floor(URLS.length / 3);
  const epochs = [URLS.slice(0, third), URLS.slice(third, 2 * third), URLS.slice(2 * third)];
  const store = await SeenStore.open(dir);
  const scope = store.scope('old', { capacityUrls: 8_000_000, fprTarget: 1e-7 });
  await scope.add(epochs[0]!);
  await scope.rotate();
  await scope.add(epochs[1]!);
  await scope.rotate();
  await scope.add(epochs[2]!);
  await store.close();
  const probe = mkdtempSync(join(tmpdir(), 'soak-prune-'));
  cpSync(dir, probe, { recursive: true });
  const started = Date.now();
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', PRUNE_SCRIPT, probe], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`soak: the prune calibration run failed: ${run.stderr}`);
  rmSync(probe, { recursive: true, force: true });
  const runMs = Date.now() - started;
  process.stderr.write(`soak: a prune process takes ${runMs} ms; prune kills land at random in it\n`);
  return { dir, epochs, runMs };
}

/**
 * One prune killed at a random moment of its process: afterwards every epoch is either whole or
 * gone, the open epoch is untouched, the store verifies, and the next prune finishes the drop.
 */
async function prunedAtRandom(template: PruneTemplate, dir: string, trial: number): Promise<boolean> {
  cpSync(template.dir, dir, { recursive: true });
  const delay = Math.floor(Math.random() * template.runMs);
  const run = await killAfter(['--input-type=module', '-e', PRUNE_SCRIPT, dir], delay);
  const what = `trial ${trial} (prune, killed after ${delay} of ${template.runMs} ms)`;
  if (!run.killed && run.code !== 0) fail(`${what}: exit ${run.code}: ${run.stderr}`);
  let store: SeenStore;
  try {
    store = await SeenStore.open(dir);
  } catch (error) {
    fail(`${what}: the store does not open: ${(error as Error).message}`);
    return run.killed;
  }
  try {
    if (!(await store.verify()).ok) fail(`${what}: verify after the kill`);
    const scope = store.scope('old');
    const present = (await scope.stats()).epochs.map((e) => e.epoch);
    if (!present.includes(3)) fail(`${what}: the open epoch is gone`);
    for (const n of present) {
      const lost = (await scope.has(template.epochs[n - 1]!, { epochs: n })).filter((seen) => !seen).length;
      if (lost > 0) fail(`${what}: epoch ${n} is still listed but ${lost} of its URLs are not seen`);
    }
    await scope.prune({ keepLast: 1 });
    const after = (await scope.stats()).epochs.map((e) => e.epoch);
    if (after.join() !== '3') fail(`${what}: after a second prune the epochs are ${after.join()}`);
    if (!(await store.verify()).ok) fail(`${what}: verify after the second prune (leftover data?)`);
  } finally {
    await store.close();
  }
  return run.killed;
}

async function writers(): Promise<{
  writers: number;
  rounds: number;
  kills: number;
  printed: number;
  duplicates: number;
  lost: number;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-writers-'));
  let kills = 0;
  let printed = 0;
  let duplicates = 0;
  let lost = 0;
  // Writer w reads a window of the list that overlaps its neighbours' by half.
  const window = Math.ceil((2 * URLS.length) / (WRITERS + 1));
  const inputs = Array.from({ length: WRITERS }, (_, w) =>
    URLS.slice(Math.floor((w * window) / 2), Math.floor((w * window) / 2) + window),
  );
  for (let round = 0; round < ROUNDS; round++) {
    // Each round is a fresh race on its own scope; one writer is killed at a random moment.
    const scope = `round-${round}`;
    const victim = round % WRITERS;
    const runs = await Promise.all(
      inputs.map((input, w) =>
        killAfter(
          // Odd writers set their bits on a second thread.
          [
            CLI,
            'filter-new',
            '--store',
            dir,
            '--scope',
            scope,
            '--batch-size',
            '500',
            '--threads',
            String(1 + (w % 2)),
          ],
          w === victim ? 100 + Math.floor(Math.random() * 800) : 600_000,
          `${input.join('\n')}\n`,
        ),
      ),
    );
    const count = new Map<string, number>();
    runs.forEach((run, w) => {
      if (run.killed) kills++;
      else if (run.code !== 0) fail(`writers round ${round}, writer ${w}: exit ${run.code}: ${run.stderr}`);
      // Complete lines only: a writer killed while writing stdout leaves its last line cut short,
      // a piece of a URL that was never one of the inputs (the part after the last newline).
      for (const url of run.stdout.split('\n').slice(0, -1))
        if (url.length > 0) count.set(url, (count.get(url) ?? 0) + 1);
    });
    const twice = [...count.values()].filter((n) => n > 1).length;
    if (twice > 0) fail(`writers round ${round}: ${twice} URLs printed as new more than once`);
    // Acknowledged: every URL printed, and the whole input of every writer that finished.
    const acknowledged = new Set(count.keys());
    runs.forEach((run, w) => {
      if (!run.killed) for (const url of inputs[w]!) acknowledged.add(url);
    });
    const store = await SeenStore.open(dir);
    const list = [...acknowledged];
    const seenAtEnd = await store.scope(scope).has(list);
    const lostUrls = list.filter((_, i) => !seenAtEnd[i]);
    const missing = lostUrls.length;
    if (missing > 0) {
      // Which promise broke: a URL printed (by which writer, killed or not), or one of a finished writer's input.
      const where = lostUrls.slice(0, 5).map((url) => {
        const printedBy = runs
          .map((run, w) => (run.stdout.split('\n').includes(url) ? `${w}${run.killed ? ' (killed)' : ''}` : ''))
          .filter(Boolean);
        return `${url}: printed by ${printedBy.join(', ') || 'no writer'}; in the input of ${inputs
          .map((input, w) => (input.includes(url) ? w : -1))
          .filter((w) => w >= 0)
          .join(', ')}`;
      });
      fail(`writers round ${round}: ${missing} acknowledged URLs not seen at the end (${where.join('; ')})`);
    }
    if (!(await store.verify()).ok) fail(`writers round ${round}: verify`);
    await store.close();
    printed += count.size;
    duplicates += twice;
    lost += missing;
    process.stderr.write(`soak: writers round ${round + 1}/${ROUNDS}\n`);
  }
  rmSync(dir, { recursive: true, force: true });
  return { writers: WRITERS, rounds: ROUNDS, kills, printed, duplicates, lost };
}

/**
 * Part 3, stale locks and fencing (LOCK_TRIALS trials, alternating): a child adds a third of the
 * lists and starts a checkpoint big enough for several transactions; after the first it either dies
 * (kill) or freezes (SIGSTOP: a live holder that stops refreshing its lock). Meanwhile this process
 * keeps adding fresh URLs and trying to checkpoint; the attempt that gets the lock must start within
 * LOCK_STALE_MS (plus one poll) of the child's "holding". A frozen child is then continued:
 * its checkpoint must fail with STORE_LOCKED and commit nothing more. Every acknowledged URL of
 * both must be seen at the end, and the store must verify.
 */
async function staleLocks(): Promise<{ trials: number; worstTakeoverMs: number; fencedWrites: number }> {
  const file = join(mkdtempSync(join(tmpdir(), 'soak-lock-data-')), 'urls.txt');
  const third = Math.floor(URLS.length / 3);
  writeFileSync(file, `${URLS.slice(0, third).join('\n')}\n`);
  const fresh = URLS.slice(third);
  let worstTakeoverMs = 0;
  let fencedWrites = 0;
  for (let trial = 0; trial < LOCK_TRIALS; trial++) {
    const mode = trial % 2 === 0 ? 'stall' : 'kill';
    const what = `lock trial ${trial} (${mode})`;
    const dir = mkdtempSync(join(tmpdir(), 'soak-lock-'));
    const child = spawn(process.execPath, [LOCK_CHILD, dir, 'lock', file, String(LOCK_STALE_MS), mode], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<void>((done) => child.on('close', () => done()));
    const holding = await new Promise<number | undefined>((done) => {
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.includes('holding\n')) done(Date.now());
      });
      void exited.then(() => done(undefined));
    });
    if (holding === undefined) {
      fail(`${what}: the child ended before holding the lock: ${stderr}`);
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    // The child refreshes its lock every LOCK_STALE_MS / 5 until it stops, so the lock turns stale
    // at most LOCK_STALE_MS after `holding`.
    const store = await SeenStore.open(dir, {
      checkpointJournalBytes: 2 ** 40,
      checkpointIntervalMs: 2 ** 40,
      lockStaleMs: LOCK_STALE_MS,
    });
    const scope = store.scope('lock');
    const added: string[] = [];
    let takeoverMs: number | undefined;
    for (let start = 0; takeoverMs === undefined; start += 200) {
      const batch = fresh.slice(start % fresh.length, (start % fresh.length) + 200);
      await scope.add(batch);
      added.push(...batch);
      const attempt = Date.now();
      if ((await scope.checkpoint()) !== 'busy') takeoverMs = attempt - holding;
      else if (Date.now() - holding > 10 * LOCK_STALE_MS) break;
      else await new Promise((wait) => setTimeout(wait, 100));
    }
    if (takeoverMs === undefined || takeoverMs > LOCK_STALE_MS + TAKEOVER_SLACK_MS) {
      fail(
        `${what}: the lock was taken over after ${takeoverMs ?? 'more than 10×'} ms (bound ${LOCK_STALE_MS} + ${TAKEOVER_SLACK_MS})`,
      );
    }
    worstTakeoverMs = Math.max(worstTakeoverMs, takeoverMs ?? Infinity);
    if (mode === 'stall') child.kill('SIGCONT');
    await exited;
    const acked = stdout.split('\n').filter((line) => line.startsWith('ack ')).length;
    if (mode === 'stall') {
      const writes = stdout.split('\n').filter((line) => line === 'wrote').length;
      fencedWrites += writes;
      if (!stdout.includes('resumed\n')) fail(`${what}: the child never resumed: ${stderr}`);
      if (writes > 0) fail(`${what}: the child committed ${writes} chunk transactions after losing its lock`);
      if (!stdout.includes('checkpoint-error STORE_LOCKED\n'))
        fail(
          `${what}: the stalled checkpoint did not fail with STORE_LOCKED: ${stdout.split('\n').slice(-3).join(' | ')}`,
        );
    }
    await store.close();
    const expected = [...URLS.slice(0, acked * 1000).slice(0, third), ...added];
    await check(dir, what, expected, 'lock');
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(`soak: ${what}: taken over after ${takeoverMs} ms\n`);
  }
  rmSync(dirname(file), { recursive: true, force: true });
  return { trials: LOCK_TRIALS, worstTakeoverMs, fencedWrites };
}

/**
 * Part 4, a full disk: a 1 MiB tmpfs (needs root; skipped with a message otherwise) takes a store
 * whose checkpoint cannot fit. The CLI must exit with STORE_FULL (9) and one error line; after the
 * file system is grown (space freed), the store must open in place, verify and see every URL.
 */
async function diskFull(): Promise<{ ran: boolean; exitCode: number | null; lost: number; note: string }> {
  const mount = mkdtempSync(join(tmpdir(), 'soak-full-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    rmSync(mount, { recursive: true, force: true });
    const note = `skipped: cannot mount a small tmpfs (${mounted.stderr.trim() || 'needs root'})`;
    process.stderr.write(`soak: disk full ${note}\n`);
    return { ran: false, exitCode: null, lost: 0, note };
  }
  try {
    const dir = join(mount, 'store');
    const input = URLS.slice(0, 30_000);
    const run = spawnSync(process.execPath, [CLI, 'add', '--store', dir, '--capacity', '1000000'], {
      input: `${input.join('\n')}\n`,
      encoding: 'utf8',
    });
    const errors = run.stderr.split('\n').filter((line) => line.includes('error'));
    if (run.status !== 9 || errors.length !== 1 || !/STORE_FULL/.test(errors[0]!))
      fail(`disk full: exit ${run.status}, stderr ${run.stderr}`);
    // The add's summary line says every URL was recorded before the checkpoint failed on close.
    const acknowledged = /read 30,000, new/.test(run.stderr);
    spawnSync('mount', ['-o', 'remount,size=64m', mount]);
    const store = await SeenStore.open(dir);
    const lost = acknowledged ? (await store.scope().has(input)).filter((seen) => !seen).length : 0;
    if (lost > 0) fail(`disk full: ${lost} acknowledged URLs lost`);
    if (!(await store.verify()).ok) fail('disk full: verify after freeing space');
    await store.close();
    return {
      ran: true,
      exitCode: run.status,
      lost,
      note: acknowledged
        ? '30,000 URLs acknowledged, checkpoint hit the full disk'
        : 'the adds themselves hit the full disk',
    };
  } finally {
    spawnSync('umount', [mount]);
    rmSync(mount, { recursive: true, force: true });
  }
}

const ctx: SoakContext = { cli: CLI, urls: URLS, fail, note: (message) => process.stderr.write(`soak: ${message}\n`) };
const started = Date.now();
const killResults = await run('kills', randomKills);
const writerResults = await run('writers', writers);
const lockResults = await run('locks', staleLocks);
const diskResults = await run('disk', diskFull);
const manyResults = await run('many', () => manyProcesses(ctx, PROCESSES));
const raceResults = await run('race', () => openerRace(ctx, RACE));
const damageResults = await run('damage', () => damagedStores(ctx, DAMAGED_STORES));
const corpusResults = await run('corpus', () => badInputCorpus(ctx));
const checkpointerResults = await run('checkpointers', () => checkpointers(ctx, CRASH_CHILD, CHECKPOINTER_ROUNDS));
const engineResults = await run('engine', () => engineStatesPart(ctx, option['engine-seeds'], option['engine-rounds']));
const summary = {
  date: new Date().toISOString(),
  seconds: Math.round((Date.now() - started) / 1000),
  urls: URLS.length,
  randomKills: killResults,
  writers: writerResults,
  staleLocks: lockResults,
  diskFull: diskResults,
  manyProcesses: manyResults,
  openerRace: raceResults,
  damagedStores: damageResults,
  badInputCorpus: corpusResults,
  checkpointers: checkpointerResults,
  engineStates: engineResults,
  failures,
};
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
process.exitCode = failures.length === 0 ? 0 : 1;
