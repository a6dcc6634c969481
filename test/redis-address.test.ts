import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { ERROR_CODES } from '../src/index.js';
import { runCli } from './helpers/cli.js';

/** A local port with nothing listening: bound, read, released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('a closed Redis port: a warning at once says what is retried and until when, then STORE_UNAVAILABLE', async () => {
  const port = await closedPort();
  const run = await runCli(
    ['--store', `redis://127.0.0.1:${port}?timeout-ms=1500`, '--scope', 's', 'has'],
    'https://a.example/\n',
  );
  assert.equal(run.code, ERROR_CODES.STORE_UNAVAILABLE, run.stderr);
  const lines = run.stderr.trim().split('\n');
  assert.match(
    lines[0]!,
    new RegExp(
      `^seenstore: warning: no Redis node of 127\\.0\\.0\\.1:${port} answers \\(.*ECONNREFUSED.*\\); retrying until 20\\d\\d-\\d\\d-\\d\\dT[0-9:.]+Z, [12] s from now`,
    ),
  );
  assert.match(lines.at(-1)!, /STORE_UNAVAILABLE: no Redis node of .* answered within 2 s/);
  assert.equal(lines.length, 2, run.stderr);
});

test('a Redis host that does not resolve fails at once with STORE_UNAVAILABLE naming the DNS error', async () => {
  const startMs = Date.now();
  // The default deadline, 30 s: failing at once is failing well before it.
  const run = await runCli(
    ['--store', 'redis://nosuchhost.invalid:6379', '--scope', 's', 'has'],
    'https://a.example/\n',
  );
  assert.equal(run.code, ERROR_CODES.STORE_UNAVAILABLE, run.stderr);
  assert.match(
    run.stderr,
    /^seenstore: error STORE_UNAVAILABLE: no Redis node of nosuchhost\.invalid:6379 has an address: getaddrinfo ENOTFOUND nosuchhost\.invalid \(a mistyped host in --store\?\)\n$/,
  );
  assert.ok(Date.now() - startMs < 15_000, `took ${Date.now() - startMs} ms`);
});
