/**
 * What the open guard costs a batch (docs/benchmarks.md, "The open guard"): the time to take and
 * release the guard (an empty, aborted write transaction of its environment), and the check that a
 * write transaction builds on the newest commit, each alone, against an empty LMDB write
 * transaction of the store without them. No fsync is involved: these are the CPU costs added to
 * every commit, whose fsync takes ~0.5-0.8 ms here.
 *
 *   npm run build && node dist/bench/guard-probe.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { OpenGuard } from '../src/store/lmdb/open-guard.js';

const ROUNDS = 5;
const CALLS = 20_000;

function timeUs(action: () => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) action();
  return Number(process.hrtime.bigint() - started) / 1e3 / CALLS;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dir = mkdtempSync(join(tmpdir(), 'seenstore-guard-probe-'));
try {
  const guard = OpenGuard.open(dir);
  const root = open({ path: dir, noSubdir: false, maxDbs: 8, pageSize: 4096, noSync: true });
  const info = (root as unknown as { env: { info(): { lastTxnId: number } } }).env;
  const rows = {
    'empty write transaction': [] as number[],
    'guard held and released': [] as number[],
    'newest-commit check': [] as number[],
  };
  for (let round = 0; round < ROUNDS; round++) {
    rows['empty write transaction'].push(timeUs(() => root.transactionSync(() => 0)));
    rows['guard held and released'].push(timeUs(() => guard.hold(() => 0)));
    rows['newest-commit check'].push(
      timeUs(() => root.transactionSync(() => root.getWriteTxnId() <= info.info().lastTxnId)),
    );
  }
  for (const [name, values] of Object.entries(rows)) {
    process.stdout.write(
      `${name.padEnd(26)} median ${median(values).toFixed(2)} us (${values.map((v) => v.toFixed(2)).join(', ')})\n`,
    );
  }
  await guard.close();
  await root.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
