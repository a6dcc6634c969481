import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeenStore } from '../src/index.js';
import { runCrashChild, spawnCli } from './helpers/cli.js';
import { allSharedUrls, sharedUrls } from './helpers/data.js';
import { ageLocks } from './helpers/locks.js';
import { sized } from './helpers/scale.js';
import { tempDir } from './helpers/tmp.js';

interface KillTrial {
  readonly printed: string[];
  readonly killedMidStream: boolean;
}

/** Feeds `urls` slowly into filter-new and kills it with SIGKILL after `killAfterMs`. */
async function filterNewKilled(dir: string, urls: readonly string[], killAfterMs: number): Promise<KillTrial> {
  const child = spawnCli([
    'filter-new',
    '--store',
    dir,
    '--capacity',
    '200000',
    '--fpr',
    '1e-9',
    '--batch-size',
    '100',
    '--batch-delay-ms',
    '5',
  ]);
  let stdout = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stdin!.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  let feeding = true;
  const feed = (async () => {
    for (let i = 0; i < urls.length && feeding; i += 25) {
      child.stdin!.write(`${urls.slice(i, i + 25).join('\n')}\n`);
      await sleep(10);
    }
    child.stdin!.end();
  })();
  await sleep(killAfterMs);
  const killedMidStream = child.exitCode === null;
  child.kill('SIGKILL');
  feeding = false;
  await feed;
  await closed;
  const printed = stdout.split('\n');
  // A line cut by the kill was not completely printed: only whole lines count as output.
  printed.pop();
  return { printed, killedMidStream };
}

/** filter-new runs killed: 25 under `npm run test:full`, 12 in `npm test` (test/helpers/scale.ts). */
const KILL_TRIALS = sized(25, 12);

describe('crash safety', () => {
  test(`kill -9 of filter-new mid-stream, ${KILL_TRIALS} times: every printed URL is recorded, none lost, few twice`, async () => {
    const dir = tempDir();
    const urls = allSharedUrls();
    const trials = KILL_TRIALS;
    const perTrial = 2000;
    const batch = 100;
    /** Times each URL was printed, over every run. */
    const printedTimes = new Map<string, number>();
    const count = (printed: readonly string[]): void => {
      for (const url of printed) printedTimes.set(url, (printedTimes.get(url) ?? 0) + 1);
    };
    let kills = 0;
    let random = 42;
    for (let t = 0; t < trials; t++) {
      random = (random * 1103515245 + 12345) % 2 ** 31;
      const slice = urls.slice(t * perTrial, (t + 1) * perTrial);
      const trial = await filterNewKilled(dir, slice, 150 + (random % 500));
      if (trial.killedMidStream) kills++;
      count(trial.printed);
      const store = await SeenStore.open(dir);
      const seen = await store.scope().has(trial.printed);
      assert.equal(seen.filter((s) => !s).length, 0, `trial ${t}: a printed URL is not recorded`);
      await store.close();
    }
    assert.ok(kills >= trials * 0.8, `only ${kills} of ${trials} kills hit a running filter-new`);
    // Finishing the crawl prints what the kills left undelivered first, then the URLs never seen.
    const input = join(dir, 'all.txt');
    const given = urls.slice(0, trials * perTrial);
    writeFileSync(input, `${given.join('\n')}\n`);
    const rest = await new Promise<string>((resolve) => {
      const child = spawnCli(['filter-new', '--store', dir, input]);
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.on('close', () => resolve(out));
      child.stdin!.end();
    });
    count(rest.split('\n').filter(Boolean));
    // At least once: every URL given was printed (the data's URLs are distinct).
    const never = given.filter((url) => !printedTimes.has(url));
    assert.deepEqual(never.slice(0, 5), [], `${never.length} URLs were never printed`);
    // Printed twice only what a kill left in flight: the batch being written, the one committed
    // behind it, and one written whose deletion waited for the next commit.
    const twice = [...printedTimes.values()].reduce((n, times) => n + times - 1, 0);
    assert.ok(twice <= kills * 3 * batch, `${twice} URLs printed more than once after ${kills} kills`);
  });

  const points = [
    'add:before-commit',
    'add:after-commit',
    'checkpoint:after-chunk-txn',
    'checkpoint:before-trim',
    'checkpoint:after-trim',
  ];
  for (const point of points) {
    test(`kill -9 at ${point}: the store opens with every acknowledged URL, and finishes cleanly`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      const urls = sharedUrls('crawl-benign-35k.txt');
      writeFileSync(file, `${urls.join('\n')}\n`);
      // 5M URLs at 1e-7 is a 21 MB filter: more chunks than one 16 MiB checkpoint transaction holds.
      const env = { CHILD_CAPACITY: '5000000' };
      const crashed = await runCrashChild([dir, 'default', file, '5000', point, 'checkpoint-each'], env);
      assert.equal(crashed.signal, 'SIGKILL', `${point} was never reached`);
      const ackedUrls = urls.slice(0, crashed.acked * 5000);

      // A killed checkpointer's lock turns stale lockStaleMs after its mtime; only then can close()
      // checkpoint. It is aged at once rather than waited for.
      if (point.startsWith('checkpoint')) assert.ok(ageLocks(dir) >= 1, 'the killed checkpointer left no lock');
      const store = await SeenStore.open(dir, { lockStaleMs: 2_000 });
      const afterCrash = (await store.scope().stats()).epochs[0]!;
      assert.equal((await store.scope().has(ackedUrls)).filter((s) => !s).length, 0);
      assert.ok(afterCrash.added >= ackedUrls.length);
      await store.close();

      // Replay is idempotent: a journal replayed over chunks that already hold it adds no bit.
      const again = await SeenStore.open(dir);
      const afterCheckpoint = (await again.scope().stats()).epochs[0]!;
      assert.equal(afterCheckpoint.journalRecords, 0);
      assert.equal(afterCheckpoint.fillRatio, afterCrash.fillRatio);
      assert.equal(afterCheckpoint.added, afterCrash.added);
      await again.close();

      const finished = await runCrashChild([dir, 'default', file, '5000', 'none'], env);
      assert.ok(finished.done);
      const final = await SeenStore.open(dir);
      assert.equal((await final.scope().has(urls)).filter((s) => !s).length, 0);
      assert.equal((await final.scope().stats()).epochs[0]!.added, urls.length);
      await final.close();
    });
  }
});
