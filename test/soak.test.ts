import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { sized } from './helpers/scale.js';

/**
 * Damaged stores the short soak runs every command on: one (bytes of a page flipped) in `npm test`,
 * two under `npm run test:full` (the second cut short); test/page-damage.test.ts runs both kinds.
 */
const DAMAGED_STORES = sized(2, 1);

/**
 * The short version of `npm run soak`: its parts with small counts (random kills in all five
 * workloads, racing writers with a kill, stale-lock takeover and fencing both ways, a full disk when
 * the run may mount a tmpfs, 10 processes held open on one store together). The soak itself checks
 * its invariants; this test requires a run with no failure and that each part really ran,
 * including one round of openers racing single-URL writers, damaged stores through every command,
 * and two rounds of writers checkpointing after every batch (a counting and a classic epoch).
 */
test('a short soak: random kills, racing writers, stale locks, full disk, many processes, opener race, damaged stores, checkpointers — 0 failures', () => {
  // Six kill trials cover each of the six workloads once; the bad-input corpus runs in bad-input.test.ts.
  const args = [
    '--trials',
    '6',
    '--writers',
    '2',
    '--rounds',
    '1',
    '--lock-trials',
    '2',
    '--processes',
    '10',
    '--race-rounds',
    '1',
    '--race-round-ms',
    '2500',
    '--damaged-stores',
    String(DAMAGED_STORES),
    '--checkpointer-rounds',
    '2',
    '--only',
    'kills,writers,locks,disk,many,race,damage,checkpointers',
  ];
  const run = spawnSync(process.execPath, [join(ROOT, 'dist', 'soak', 'run.js'), ...args], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(run.status, 0, `soak exited ${run.status}:\n${run.stderr}`);
  const summary = JSON.parse(run.stdout) as {
    failures: string[];
    randomKills: { trials: number; acked: number };
    writers: { rounds: number; printed: number; duplicates: number; lost: number };
    staleLocks: { trials: number; worstTakeoverMs: number; fencedWrites: number };
    diskFull: { ran: boolean; note: string };
    manyProcesses: {
      processes: number;
      allHeldTogether: boolean;
      answered: number;
      busy: number;
      otherExits: number;
      lost: number;
    };
    openerRace: { rounds: number; commits: number; opens: number; lost: number; signals: number };
    damagedStores: { stores: number; runs: number; signals: number; readOnlyChanged: number };
    checkpointers: { rounds: number; wrongUrls: number; wrongCounts: number };
  };
  assert.deepEqual(summary.failures, []);
  assert.equal(summary.randomKills.trials, 6);
  assert.ok(summary.randomKills.acked > 0);
  assert.equal(summary.writers.rounds, 1);
  assert.ok(summary.writers.printed > 0);
  assert.equal(summary.writers.duplicates + summary.writers.lost, 0);
  assert.equal(summary.staleLocks.trials, 2);
  assert.ok(Number.isFinite(summary.staleLocks.worstTakeoverMs));
  assert.equal(summary.staleLocks.fencedWrites, 0);
  assert.equal(summary.manyProcesses.processes, 10);
  assert.ok(summary.manyProcesses.allHeldTogether);
  assert.equal(summary.manyProcesses.answered + summary.manyProcesses.busy, 10);
  assert.equal(summary.manyProcesses.otherExits + summary.manyProcesses.lost, 0);
  assert.equal(summary.openerRace.rounds, 1);
  assert.ok(summary.openerRace.commits > 0 && summary.openerRace.opens > 0, JSON.stringify(summary.openerRace));
  assert.equal(summary.openerRace.lost + summary.openerRace.signals, 0);
  assert.equal(summary.damagedStores.stores, DAMAGED_STORES);
  assert.ok(summary.damagedStores.runs > 0);
  assert.equal(summary.damagedStores.signals + summary.damagedStores.readOnlyChanged, 0);
  assert.equal(summary.checkpointers.rounds, 2);
  assert.equal(summary.checkpointers.wrongUrls + summary.checkpointers.wrongCounts, 0);
  if (!summary.diskFull.ran) process.stderr.write(`soak test: disk-full part ${summary.diskFull.note}\n`);
});
