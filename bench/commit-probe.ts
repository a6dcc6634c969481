/**
 * `node dist/bench/commit-probe.js [DIR]`: what one durable batch costs, against what Redis's
 * `appendfsync always` pays per event-loop iteration. Times 400 `addIfAbsentUtf8` calls of 48 new
 * URLs each (the batch a group commit of 64 single-add clients holds) on a fresh store, then 400
 * appends of the same number of 40-byte records to a plain file, each followed by fdatasync.
 * Prints p50 and p90 of each (docs/benchmarks.md, "Why (a) is missed").
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeenStore } from '../src/index.js';

const URLS = 48;
const ROUNDS = 400;
const URL_BYTES = 40;

function quantile(values: number[], p: number): string {
  return [...values].sort((a, b) => a - b)[Math.floor(p * values.length)]!.toFixed(3);
}

const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'bench-commit-'));
try {
  const store = await SeenStore.open(join(dir, 'store'));
  const scope = store.scope('probe');
  const bytes = Buffer.alloc(URLS * URL_BYTES);
  const ranges = new Uint32Array(2 * URLS);
  const commitMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < URLS; i++) {
      bytes.write(`https://probe.example/${round}/${i}/`.padEnd(URL_BYTES, 'x'), i * URL_BYTES);
      ranges[2 * i] = i * URL_BYTES;
      ranges[2 * i + 1] = (i + 1) * URL_BYTES;
    }
    const started = process.hrtime.bigint();
    await scope.addIfAbsentUtf8({ bytes, ranges, count: URLS });
    commitMs.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  await store.close();
  const fd = openSync(join(dir, 'append.aof'), 'a');
  const record = Buffer.alloc(URLS * URL_BYTES, 'x');
  const appendMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.hrtime.bigint();
    writeSync(fd, record);
    fdatasyncSync(fd);
    appendMs.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  closeSync(fd);
  process.stdout.write(
    `durable batch of ${URLS} URLs (addIfAbsentUtf8): p50 ${quantile(commitMs, 0.5)} ms, p90 ${quantile(commitMs, 0.9)} ms\n` +
      `append of ${record.length} bytes + fdatasync: p50 ${quantile(appendMs, 0.5)} ms, p90 ${quantile(appendMs, 0.9)} ms\n`,
  );
} finally {
  if (process.argv[2] === undefined) rmSync(dir, { recursive: true, force: true });
}
