import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { collectCli, spawnCli, type CliResult } from './helpers/cli.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';
import { startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

/**
 * Runs `serve` and resolves with how it ended. A server that starts (its JSON start line) where
 * it should have refused is stopped by its pid at once, and the result says it started.
 */
async function serveRun(args: readonly string[]): Promise<CliResult & { started: boolean }> {
  const child = spawnCli([...args, 'serve', '--port', '0', '--log-json']);
  child.stdin!.end();
  let started = false;
  child.stderr!.on('data', (chunk: Buffer) => {
    if (!started && chunk.toString('utf8').includes('"event":"start"')) {
      started = true;
      child.kill('SIGKILL');
    }
  });
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { ...(await collectCli(child)), started };
}

/** Runs `serve` with plain logs until its start line, stops it (SIGTERM, by its pid) and returns its log. */
async function serveUntilStarted(args: readonly string[]): Promise<string> {
  const child = spawnCli([...args, 'serve', '--port', '0']);
  child.stdin!.end();
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    if (/ start /.test(chunk.toString('utf8'))) child.kill('SIGTERM');
  });
  const run = await collectCli(child);
  assert.equal(run.code, 0, run.stderr);
  return run.stderr;
}

/** The JSON log lines of a running server whose event is `event`. */
function events(log: readonly string[], event: string): Record<string, unknown>[] {
  return log
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.event === event);
}

describe('serve and store creation (issue 43)', () => {
  test('--no-create on a missing directory: NOT_FOUND (exit 11), nothing created', async () => {
    const mistyped = join(tempDir(), 'mistyped', 'store');
    const run = await serveRun(['--store', mistyped, '--no-create']);
    assert.equal(run.started, false, 'serve started on a store that does not exist');
    assert.equal(run.code, 11, run.stderr);
    assert.match(run.stderr, /NOT_FOUND/);
    assert.equal(existsSync(join(mistyped, '..')), false, 'nothing was created on disk');
  });

  test('--no-create on an existing empty directory: NOT_FOUND, and the directory stays empty', async () => {
    const empty = join(tempDir(), 'empty');
    mkdirSync(empty);
    const run = await serveRun(['--store', empty, '--no-create']);
    assert.equal(run.started, false);
    assert.equal(run.code, 11, run.stderr);
    assert.deepEqual(readdirSync(empty), []);
  });

  test('creating a store says so before the start line; serving an existing one, or with --no-create, does not', async () => {
    const store = join(tempDir(), 'store');
    const first = await startServer(store);
    const created = events(first.log, 'created');
    assert.equal(created.length, 1, first.log.join('\n'));
    assert.equal(created[0]!.store, store);
    assert.ok(
      first.log.findIndex((line) => line.includes('"event":"created"')) <
        first.log.findIndex((line) => line.includes('"event":"start"')),
    );
    assert.equal((await first.stop()).code, 0);
    for (const args of [[], ['--no-create']]) {
      const again = await startServer(store, args);
      assert.deepEqual(
        events(again.log, 'created'),
        [],
        `serve ${args.join(' ')} of an existing store announced a creation`,
      );
      assert.equal((await again.stop()).code, 0);
    }
  });

  test('plain logs name the created store too; --quiet leaves the line out', async () => {
    const plain = await serveUntilStarted(['--store', join(tempDir(), 'plain')]);
    assert.match(plain, /^seenstore serve: \S+ created store=\S*plain$/m);
    const quiet = await startServer(join(tempDir(), 'quiet'), ['--quiet']);
    assert.deepEqual(events(quiet.log, 'created'), []);
    assert.equal((await quiet.stop()).code, 0);
  });

  const missing = redisMissing();
  test('Redis: --no-create on a prefix that holds no store is NOT_FOUND and writes nothing; on a store it serves', {
    skip: missing,
  }, async () => {
    const single: RedisCluster = await startRedisCluster({ cluster: false });
    after(() => single.stop());
    const port = single.nodes[0]!.port;
    const run = await serveRun(['--store', single.location(), '--no-create']);
    assert.equal(run.started, false, 'serve started on an empty Redis prefix');
    assert.equal(run.code, 11, run.stderr);
    assert.equal(single.cli(port, 'DBSIZE'), '0', 'nothing was written to Redis');
    const location = single.location();
    const store = await SeenStore.open(location, { onWarning: () => undefined });
    await store.scope('s').add(['https://a.example/']);
    await store.close();
    const served = await startServer(location, ['--no-create']);
    assert.equal((await served.stop()).code, 0);
  });
});
