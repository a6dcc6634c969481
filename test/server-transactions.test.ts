import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { SeenStore } from '../src/index.js';
import { NEEDS_REDIS_PY, startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

const exec = promisify(execFile);

/** Sends `frames` (RESP arrays of words) in one write; resolves with the raw reply once `until` matches it. */
function exchange(port: number, frames: readonly (readonly string[])[], until: RegExp): Promise<string> {
  const encode = (words: readonly string[]): string =>
    `*${words.length}\r\n${words.map((w) => `$${Buffer.byteLength(w)}\r\n${w}\r\n`).join('')}`;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete reply: ${JSON.stringify(reply)}`));
    }, 20_000);
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      reply += chunk;
      if (until.test(reply)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(reply);
      }
    });
    socket.on('error', reject);
    socket.write(frames.map(encode).join(''));
  });
}

/** redis-py as its users write it: the default pipeline() (MULTI/EXEC), scrapy-redis-style keys. */
const PROGRAM = String.raw`
import json, sys
import redis

r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
out = {}
p = r.pipeline()
for i in range(200):
    p.execute_command("BF.ADD", "spider:dupefilter", "%040x" % i)
p.execute_command("BF.ADD", "spider:dupefilter", "%040x" % 0)
p.execute_command("BF.MEXISTS", "spider:dupefilter", "%040x" % 199, "%040x" % 200)
res = p.execute()
out["pipeline"] = [sum(res[:200]), res[200], res[201]]
with r.pipeline() as q:
    q.execute_command("BF.ADD", "spider:dupefilter")
    try:
        q.execute()
        out["aborted"] = None
    except redis.ResponseError as e:
        out["aborted"] = str(e)
try:
    r.execute_command("WATCH", "spider:dupefilter")
    out["watch"] = None
except redis.ResponseError as e:
    out["watch"] = str(e)
out["exists_after"] = r.execute_command("BF.EXISTS", "spider:dupefilter", "%040x" % 5)
print(json.dumps(out))
`;

describe('serve: MULTI/EXEC/DISCARD, and keys with ":"', () => {
  it('answers MULTI, QUEUED, EXEC, DISCARD and their errors as Redis does', async () => {
    const server = await startServer(join(tempDir(), 'store'));
    const reply = await exchange(
      server.port,
      [
        ['EXEC'],
        ['DISCARD'],
        ['MULTI'],
        ['MULTI'],
        ['BF.ADD', 't', 'https://a.example/1'],
        ['BF.MADD', 't', 'https://a.example/1', 'https://a.example/2'],
        ['BF.EXISTS', 't', 'https://a.example/2'],
        ['EXEC'],
        ['MULTI'],
        ['BF.ADD', 't', 'https://a.example/3'],
        ['DISCARD'],
        ['BF.EXISTS', 't', 'https://a.example/3'],
        ['MULTI'],
        ['BF.ADD', 't'],
        ['NOSUCH'],
        ['EXEC'],
        ['WATCH', 't'],
        ['PING'],
      ],
      /\+PONG\r\n$/,
    );
    assert.equal(
      reply,
      '-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n+OK\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:1\r\n*2\r\n:0\r\n:1\r\n:1\r\n' +
        '+OK\r\n+QUEUED\r\n+OK\r\n:0\r\n' +
        "+OK\r\n-ERR wrong number of arguments for 'bf.add' command\r\n-ERR unknown command 'NOSUCH', with args beginning with: \r\n-EXECABORT Transaction discarded because of previous errors.\r\n" +
        `-ERR WATCH is not supported by seenstore serve: adds are idempotent and a transaction's adds to a scope are one group commit, so there is nothing to watch; send MULTI ... EXEC without WATCH\r\n+PONG\r\n`,
    );
    await server.stop();
  });

  it("a transaction's adds to a scope are one group commit", async () => {
    const server = await startServer(join(tempDir(), 'store'), ['--metrics-port', '0']);
    const adds = Array.from({ length: 100 }, (_, i) => ['BF.ADD', 'one', `https://b.example/${i}`]);
    const reply = await exchange(server.port, [['MULTI'], ...adds, ['EXEC']], /\*100\r\n(?::[01]\r\n){100}$/);
    assert.equal((reply.match(/:1\r\n/g) ?? []).length, 100);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    assert.equal(
      Number(/^seenstore_batch_urls_count (\d+)$/m.exec(metrics)![1]),
      1,
      'one group commit for the 100 adds',
    );
    await server.stop();
  });

  it("redis-py's default pipeline() works, and scrapy-redis's spider:dupefilter is scope spider.dupefilter", {
    skip: NEEDS_REDIS_PY,
  }, async () => {
    const dir = tempDir();
    const store = join(dir, 'store');
    const server = await startServer(store);
    writeFileSync(join(dir, 'program.py'), PROGRAM);
    const { stdout } = await exec('/usr/bin/python3', [join(dir, 'program.py'), String(server.port)]);
    const out = JSON.parse(stdout) as Record<string, unknown>;
    assert.deepEqual(out.pipeline, [200, 0, [1, 0]]);
    assert.match(String(out.aborted), /wrong number of arguments/);
    assert.match(String(out.watch), /WATCH is not supported by seenstore serve/);
    assert.equal(out.exists_after, 1);
    await server.stop();
    const opened = await SeenStore.open(store, { readOnly: true });
    try {
      assert.deepEqual(await opened.scopeNames(), ['spider.dupefilter']);
      const scope = opened.scope('spider.dupefilter');
      assert.deepEqual(
        await scope.has(['0'.repeat(40), (199).toString(16).padStart(40, '0')]),
        [true, true],
        'raw keys: fingerprints, not URLs',
      );
      assert.equal((await scope.stats()).epochs[0]!.normalize, 'none');
    } finally {
      await opened.close();
    }
  });
});
