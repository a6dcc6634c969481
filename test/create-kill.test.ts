import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { CLI, runCli } from './helpers/cli.js';
import { sized } from './helpers/scale.js';
import { tempDir } from './helpers/tmp.js';

/** Kills of a creating CLI: 600 under `npm run test:full` (test/helpers/scale.ts). */
const TRIALS = sized(600, 150);
const URLS = ['https://a.example/1', 'https://a.example/2', 'https://b.example/'];
/**
 * Under strace (when installed), every syscall that creates or syncs a file or directory is
 * delayed: creation then spans a few dozen such steps of DELAY_US each, and a random kill lands
 * between any two of them, not only where the unslowed machine spends its time.
 */
const STRACE = spawnSync('strace', ['-V']).status === 0;
const SLOWED =
  'pwrite64,pwritev,fdatasync,fsync,msync,link,linkat,rename,renameat,renameat2,mkdir,mkdirat,ftruncate,unlink,unlinkat,rmdir';
const DELAY_US = 1_000;
/** Trials run this many at a time: each mostly waits (on the delays, on node's start-up). */
const AT_ONCE = 4;

/** Where the store goes: a path to make, an empty directory, or a crawl's folder holding other files. */
type Target = 'missing' | 'empty' | 'crawl-folder';
const TARGETS: readonly Target[] = ['missing', 'empty', 'crawl-folder'];

/** What the killed creation left: nothing, its staging only, staging beside the linked data file, the store. */
type Left = 'nothing' | 'staging' | 'linked' | 'store' | 'finished';

function prepare(target: Target): { dir: string; watched: string } {
  const parent = tempDir('seenstore-create-kill-');
  const dir = join(parent, 'store');
  if (target === 'missing') return { dir, watched: parent };
  mkdirSync(dir);
  if (target === 'crawl-folder') writeFileSync(join(dir, 'urls.txt'), `${URLS.join('\n')}\n`);
  return { dir, watched: dir };
}

/** `seenstore --store DIR add`, under strace when it is installed and `slowed`. */
function spawnAdd(dir: string, slowed = true): ChildProcess {
  const cli = [CLI, '--store', dir, '--allow-nonempty-dir', 'add'];
  const child =
    STRACE && slowed
      ? spawn(
          'strace',
          [
            '-f',
            '--seccomp-bpf',
            '-qq',
            '-o',
            '/dev/null',
            '-e',
            `trace=${SLOWED}`,
            '-e',
            `inject=${SLOWED}:delay_enter=${DELAY_US}`,
            process.execPath,
            ...cli,
          ],
          { stdio: ['pipe', 'ignore', 'pipe'] },
        )
      : spawn(process.execPath, cli, { stdio: ['pipe', 'ignore', 'pipe'] });
  child.stdin!.on('error', () => undefined);
  child.stdin!.end(`${URLS.join('\n')}\n`);
  return child;
}

/** SIGKILLs the CLI itself (under strace, strace's child), by its pid. */
function killCli(child: ChildProcess): void {
  if (!STRACE) {
    child.kill('SIGKILL');
    return;
  }
  let children = '';
  try {
    children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
  } catch {
    return;
  }
  for (const pid of children.split(/\s+/).filter((text) => text !== '')) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Exited already.
    }
  }
}

/** Resolves with the exit code (null when killed) and stderr. */
function ended(child: ChildProcess): Promise<{ code: number | null; stderr: string; killed: boolean }> {
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) =>
    child.on('close', (code, signal) =>
      resolve({ code, stderr, killed: signal === 'SIGKILL' || (STRACE && code === 137) }),
    ),
  );
}

/** Calls `then` at the first change in `watched` (creation has begun), once. */
function onFirstChange(watched: string, then: () => void): FSWatcher {
  let fired = false;
  const watcher = watch(watched, () => {
    if (fired) return;
    fired = true;
    then();
  });
  return watcher;
}

function leftBehind(dir: string): Left {
  const names = existsSync(dir) ? readdirSync(dir) : [];
  const staging = names.some((name) => name.startsWith('.seenstore-creating-'));
  const data = names.includes('data.mdb');
  if (data) return staging ? 'linked' : 'store';
  return staging ? 'staging' : 'nothing';
}

/** How long, on this machine, from the first change in a store's directory to its data file. */
async function creationMs(): Promise<number> {
  const { dir, watched } = prepare('crawl-folder');
  let started = 0;
  let placed = 0;
  const watcher = watch(watched, (_event, name) => {
    started ||= performance.now();
    if (name === 'data.mdb') placed ||= performance.now();
  });
  const run = await ended(spawnAdd(dir));
  watcher.close();
  assert.equal(run.code, 0, run.stderr);
  assert.ok(started > 0 && placed > started, 'creation was watched from its first step to its data file');
  return placed - started;
}

/** The next run opens the store and works: every URL of a run that finished is there, and adds and queries go through. */
async function nextRunWorks(dir: string, finished: boolean, what: string): Promise<void> {
  const store = await SeenStore.open(dir, { onWarning: () => undefined }).catch((error: Error) =>
    assert.fail(`${what}: the next open failed: ${error.message}`),
  );
  try {
    if (finished)
      assert.deepEqual(
        await store.scope().has(URLS),
        URLS.map(() => true),
        `${what}: a finished run's URLs`,
      );
    await store.scope().add(URLS);
    assert.deepEqual(
      await store.scope().has([...URLS, 'https://never.example/']),
      [...URLS.map(() => true), false],
      what,
    );
  } finally {
    await store.close();
  }
  assert.deepEqual(
    readdirSync(dir).filter((name) => name.startsWith('.seenstore-creating-')),
    [],
    `${what}: the dead creator's staging directory was removed`,
  );
}

/**
 * Trial `trial`: a creation killed at a random point of the window after its first step (a rival
 * creator racing it every fourth trial), then the next run. Returns what the kill left.
 */
async function killedCreation(trial: number, windowMs: number): Promise<Left> {
  const target = TARGETS[trial % TARGETS.length]!;
  const raced = trial % 4 === 3 && target !== 'missing';
  // A fixed pseudo-random point per trial (Knuth's multiplicative hash): a failure names its trial and reruns alike.
  const delayMs = ((((trial + 1) * 2654435761) % 2 ** 32) / 2 ** 32) * windowMs;
  const { dir, watched } = prepare(target);
  const victim = spawnAdd(dir);
  // The rival runs at full speed: it only has to race, and it is never killed.
  const rival = raced ? spawnAdd(dir, false) : undefined;
  let timer: NodeJS.Timeout | undefined;
  const watcher = onFirstChange(watched, () => (timer = setTimeout(() => killCli(victim), delayMs)));
  const [run, rivalRun] = await Promise.all([ended(victim), rival === undefined ? undefined : ended(rival)]);
  clearTimeout(timer);
  watcher.close();
  const what = `trial ${trial} (${target}${raced ? ', raced' : ''}, killed ${delayMs.toFixed(1)} ms into creation)`;
  if (!run.killed) assert.equal(run.code, 0, `${what}: ${run.stderr}`);
  if (rivalRun !== undefined) assert.equal(rivalRun.code, 0, `${what}: the rival creator failed: ${rivalRun.stderr}`);
  const left = run.killed ? leftBehind(dir) : 'finished';
  await nextRunWorks(dir, !run.killed || rivalRun !== undefined, what);
  if (target === 'crawl-folder')
    assert.equal(readFileSync(join(dir, 'urls.txt'), 'utf8'), `${URLS.join('\n')}\n`, `${what}: the folder's own file`);
  // Now and then the next run is the CLI itself, as an operator's would be.
  if (trial % 25 === 0) {
    const has = await runCli(['--store', dir, 'has', '--count'], `${URLS.join('\n')}\n`);
    assert.equal(has.code, 0, has.stderr);
    assert.match(has.stdout, /seen 3\n/);
  }
  return left;
}

describe('kill -9 while a store is created (issue 43)', () => {
  test(`${TRIALS} creations killed at random points: the next run always opens the store and works`, async () => {
    const windowMs = 1.3 * (await creationMs());
    const left: Record<Left, number> = { nothing: 0, staging: 0, linked: 0, store: 0, finished: 0 };
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let trial = next++; trial < TRIALS; trial = next++) left[await killedCreation(trial, windowMs)]++;
    };
    await Promise.all(Array.from({ length: AT_ONCE }, worker));
    process.stderr.write(
      `create-kill: ${TRIALS} trials${STRACE ? ' under strace' : ''}, window ${windowMs.toFixed(1)} ms, left: ${JSON.stringify(left)}\n`,
    );
    // The kills must land inside creation, or the test proves nothing: most of the window is the
    // staging, and about a fifth of it lies after the data file is in place.
    assert.ok(left.staging >= TRIALS / 10, `only ${left.staging} of ${TRIALS} kills landed while the store was staged`);
    assert.ok(
      left.linked + left.store >= TRIALS / 40,
      `only ${left.linked + left.store} of ${TRIALS} kills landed after the data file was in place`,
    );
  });

  test('an empty data.mdb is damage, not a creation: refused (STORE_CORRUPT), also with no other store file beside it', async () => {
    for (const beside of [[], ['lock.mdb']]) {
      const dir = tempDir();
      writeFileSync(join(dir, 'data.mdb'), '');
      for (const name of beside) writeFileSync(join(dir, name), '');
      const run = await runCli(['--store', dir, '--allow-nonempty-dir', 'add'], `${URLS[0]}\n`);
      assert.equal(run.code, 6, run.stderr);
      assert.match(run.stderr, /STORE_CORRUPT: \S+data\.mdb is empty/);
      assert.equal(readFileSync(join(dir, 'data.mdb')).length, 0, 'the empty file was left as it was');
    }
  });
});
