import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { KEEP_WRITTEN_BYTES } from '../src/epochs/delivery.js';
import { collectCli, runCli, spawnCli } from './helpers/cli.js';
import { allSharedUrls, HAVE_SHARED_DATA, NEEDS_SHARED_DATA } from './helpers/data.js';
import { sized } from './helpers/scale.js';
import { tempDir } from './helpers/tmp.js';

/**
 * At-least-once delivery (issue 43, docs/reliability.md "Delivery"): filter-new stopped at a
 * random point of its output — its reader gone (EPIPE), SIGINT, SIGTERM, kill -9 — and then run
 * again over the same input: together the two runs print every URL of the input, and print twice
 * no more than what the stop left in flight (and, for a reader gone or a signal, the last
 * KEEP_WRITTEN_BYTES written). The stop points are counts of lines the reader took, not times.
 */

type Stop = 'EPIPE' | 'SIGINT' | 'SIGTERM' | 'SIGKILL';

const BATCH = 100;
const TRIALS = sized(25, 5);
const URLS = HAVE_SHARED_DATA ? allSharedUrls().slice(0, 20_000) : [];

/** The most lines that fit in KEEP_WRITTEN_BYTES: the shortest lines of the input, summed. */
function keptLinesMax(urls: readonly string[]): number {
  const lengths = urls.map((url) => Buffer.byteLength(url) + 1).sort((a, b) => a - b);
  let bytes = 0;
  let n = 0;
  while (n < lengths.length && bytes < KEEP_WRITTEN_BYTES) bytes += lengths[n++]!;
  return n;
}

interface StoppedRun {
  /** The whole lines the reader got. */
  readonly lines: string[];
  /** Whether the output ended in a partial line (only kill -9 may leave one). */
  readonly partial: boolean;
  readonly code: number | null;
  readonly stderr: string;
  /** Whether the stop reached a run still going (not one that had finished). */
  readonly stoppedMidway: boolean;
}

/** filter-new over `file`, stopped by `stop` once its reader took `after` lines. */
async function stoppedRun(dir: string, file: string, stop: Stop, after: number): Promise<StoppedRun> {
  const child = spawnCli([
    'filter-new',
    '--store',
    dir,
    '--capacity',
    '100000',
    '--fpr',
    '1e-9',
    '--batch-size',
    String(BATCH),
    file,
  ]);
  child.stdin!.end();
  let text = '';
  let lines = 0;
  let stopped = false;
  let stoppedMidway = false;
  const stderr: Buffer[] = [];
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve) => {
    const out = child.stdout!;
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => {
      if (stop === 'EPIPE' && stopped) return;
      text += chunk;
      for (let i = chunk.indexOf('\n'); i >= 0; i = chunk.indexOf('\n', i + 1)) lines++;
      if (stopped || lines < after) return;
      stopped = true;
      stoppedMidway = child.exitCode === null;
      if (stop === 'EPIPE') {
        // The reader goes away: what it has not read is lost with it.
        out.destroy();
        resolve();
      } else {
        child.kill(stop);
      }
    });
    out.on('close', () => resolve());
  });
  const code = await closed;
  const all = text.split('\n');
  const tail = all.pop()!;
  return {
    lines: all.filter((line) => line !== ''),
    partial: tail !== '',
    code,
    stderr: Buffer.concat(stderr).toString('utf8'),
    stoppedMidway,
  };
}

describe('delivery: what filter-new records reaches a reader, at least once', { skip: NEEDS_SHARED_DATA }, () => {
  const dir = tempDir();
  const file = join(dir, 'urls.txt');
  writeFileSync(file, `${URLS.join('\n')}\n`);
  const kept = keptLinesMax(URLS);

  for (const stop of ['EPIPE', 'SIGINT', 'SIGTERM', 'SIGKILL'] as const) {
    test(`${stop} at ${TRIALS} random points of the output, then a run to the end: every URL printed, few twice`, async () => {
      let random = stop.length * 7919;
      let midway = 0;
      for (let t = 0; t < TRIALS; t++) {
        random = (random * 1103515245 + 12345) % 2 ** 31;
        const store = join(dir, `${stop}-${t}`);
        const first = await stoppedRun(store, file, stop, 1 + (random % 8000));
        if (first.stoppedMidway) midway++;
        const expected = { EPIPE: 141, SIGINT: 130, SIGTERM: 143, SIGKILL: null }[stop];
        if (first.stoppedMidway && stop !== 'SIGKILL') {
          assert.equal(first.code, expected, `trial ${t}: exit code (stderr: ${first.stderr})`);
          assert.match(first.stderr, /URLs kept for redelivery/, `trial ${t}: the stop says what it kept`);
        }
        // A signal lets the batch being written finish: the output ends with a whole line. (A reader
        // that goes away cuts what it reads where it likes, and kill -9 may cut a write.)
        if (stop === 'SIGINT' || stop === 'SIGTERM')
          assert.equal(first.partial, false, `trial ${t}: a ${stop} left half a line`);
        const next = await runCli(['filter-new', '--store', store, file]);
        assert.equal(next.code, 0, next.stderr);
        const printed = new Map<string, number>();
        for (const url of [...first.lines, ...next.stdout.split('\n').filter(Boolean)])
          printed.set(url, (printed.get(url) ?? 0) + 1);
        const never = URLS.filter((url) => !printed.has(url));
        assert.deepEqual(never.slice(0, 3), [], `trial ${t}: ${never.length} URLs never printed`);
        const twice = [...printed.values()].reduce((n, times) => n + times - 1, 0);
        const bound = stop === 'SIGKILL' ? 3 * BATCH : 4 * BATCH + kept;
        assert.ok(twice <= bound, `trial ${t}: ${twice} URLs printed twice, more than ${bound}`);
        assert.ok(
          [...printed.keys()].every((url) => URLS.includes(url) || url === ''),
          `trial ${t}: a line that was never input`,
        );
      }
      assert.ok(midway >= TRIALS / 2, `only ${midway} of ${TRIALS} stops reached a running filter-new`);
    });
  }

  test('--no-redeliver leaves what a stopped run kept for a later run', async () => {
    const store = join(dir, 'no-redeliver');
    const first = await stoppedRun(store, file, 'EPIPE', 10);
    assert.equal(first.code, 141, first.stderr);
    const quiet = await runCli(['filter-new', '--store', store, '--no-redeliver', file]);
    assert.doesNotMatch(quiet.stderr, /redelivered/);
    const later = await runCli(['filter-new', '--store', store, file]);
    assert.match(later.stderr, /redelivered [1-9]/);
    const all = new Set([...first.lines, ...quiet.stdout.split('\n'), ...later.stdout.split('\n')]);
    assert.equal(URLS.filter((url) => !all.has(url)).length, 0);
  });

  test("two runs at once never take each other's batches: a running one's are not redelivered", async () => {
    const store = join(dir, 'running');
    const stalled = spawnCli(['filter-new', '--store', store, '--batch-size', String(BATCH), file]);
    stalled.stdin!.end();
    const finished = collectCli(stalled);
    try {
      // Stop reading after the first output: the run stalls with its batches in flight.
      await new Promise<void>((resolve) => stalled.stdout!.once('data', () => resolve()));
      stalled.stdout!.pause();
      const other = await runCli(['filter-new', '--store', store, '--quiet', '--json', file]);
      assert.equal(other.code, 0, other.stderr);
      const summary = JSON.parse(other.stderr.trim().split('\n').pop()!) as { redelivered: number };
      assert.equal(summary.redelivered, 0, "a running run's batches were taken");
    } finally {
      stalled.stdout!.resume();
    }
    const done = await finished;
    assert.equal(done.code, 0, done.stderr);
  });
});
