import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { AUTH_FAILURE_SPACING_MS } from '../src/server/auth-throttle.js';
import { collectCli, spawnCli } from './helpers/cli.js';
import { RawClient } from './helpers/resp.js';
import { startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

/** Issue 32's smaller items of `serve`: a password of blanks is refused; wrong passwords are paced. */
describe('serve: passwords', () => {
  test('a --requirepass-file of blanks (or SEENSTORE_PASSWORD of blanks) is USAGE, whatever the bind', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'pass'), '   \t \n');
    for (const [args, env] of [
      [['--bind', '0.0.0.0', '--requirepass-file', join(dir, 'pass')], {}],
      [['--requirepass-file', join(dir, 'pass')], {}],
      [['--bind', '0.0.0.0'], { SEENSTORE_PASSWORD: '  ' }],
    ] as const) {
      const child = spawnCli(['--store', join(dir, 'store'), 'serve', '--port', '0', ...args], env);
      child.stdin!.end();
      // A serve that starts would run until killed: the test then fails instead of hanging.
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const run = await collectCli(child).finally(() => clearTimeout(killer));
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /error USAGE: .*(only blanks|no password)/);
    }
  });

  test('wrong passwords are answered at most one per AUTH_FAILURE_SPACING_MS, across connections; a right one at once', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'pass'), 's3cret\n');
    const server = await startServer(join(dir, 'store'), ['--requirepass-file', join(dir, 'pass')]);
    const clients = await Promise.all([RawClient.connect(server.port), RawClient.connect(server.port)]);
    try {
      const guesses = 10;
      const started = Date.now();
      await Promise.all(
        clients.map(async (client, c) => {
          for (let i = 0; i < guesses; i++) client.send('AUTH', `wrong-${c}-${i}`);
          for (let i = 0; i < guesses; i++) assert.match(String(await client.read()), /^Error: WRONGPASS/);
        }),
      );
      const elapsedMs = Date.now() - started;
      assert.ok(
        elapsedMs >= (2 * guesses - 1) * AUTH_FAILURE_SPACING_MS,
        `${2 * guesses} wrong passwords answered in ${elapsedMs} ms`,
      );
      const right = Date.now();
      assert.equal(await clients[0]!.command('AUTH', 's3cret'), 'OK');
      assert.ok(Date.now() - right < AUTH_FAILURE_SPACING_MS * 5, `a right password took ${Date.now() - right} ms`);
      assert.equal(await clients[0]!.command('BF.ADD', 'k', 'x'), 1);
    } finally {
      for (const client of clients) client.close();
    }
  });
});
