import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { SeenStore } from '../src/index.js';
import { NEEDS_REDIS_PY, startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

const exec = promisify(execFile);

/**
 * A redis-py program that knows nothing of seenstore: r.bf() as RedisBloom's users write it, plus
 * pipelining, errors and the epoch commands through execute_command. Prints its results as JSON.
 */
const REDIS_PY_PROGRAM = String.raw`
import json, sys
import redis

r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
bf = r.bf()
out = {}
out["reserve"] = bf.create("py", 0.01, 10000)
out["add"] = [bf.add("py", "https://example.org/a"), bf.add("py", "https://example.org/a")]
out["madd"] = bf.madd("py", "https://example.org/a", "https://example.org/b", "https://example.org/c")
out["exists"] = [bf.exists("py", "https://example.org/b"), bf.exists("py", "https://example.org/zzz")]
out["mexists"] = bf.mexists("py", "https://example.org/c", "https://example.org/zzz")
out["insert"] = bf.insert("py2", ["https://x.org/1", "https://x.org/1"], capacity=5000, error=0.001)
info = bf.info("py")
out["info"] = [info.capacity, info.size, info.filterNum, info.insertedNum, info.expansionRate]
out["card"] = r.execute_command("BF.CARD", "py")
p = r.pipeline(transaction=False)
for i in range(500):
    p.execute_command("BF.ADD", "py", "https://example.org/p/%d" % i)
p.execute_command("BF.MEXISTS", "py", "https://example.org/p/0", "https://example.org/p/499", "https://example.org/p/500")
res = p.execute()
out["pipeline"] = [sum(res[:500]), res[500]]
errors = []
for call in [lambda: bf.create("py", 0.01, 100), lambda: bf.create("e", 5, 100), lambda: bf.insert("none", ["x"], noCreate=True), lambda: bf.info("none")]:
    try:
        call()
        errors.append(None)
    except redis.ResponseError as e:
        errors.append(str(e))
out["errors"] = errors
rot = r.execute_command("SEEN.ROTATE", "py")
out["rotate"] = [rot[1], rot[3]]
out["after_rotate"] = bf.madd("py", "https://example.org/a", "https://example.org/new")
out["epochs_any"] = r.execute_command("SEEN.MEXISTS", "py", "EPOCHS", "all", "ITEMS", "https://example.org/b", "https://example.org/zzz")
out["epochs_all"] = r.execute_command("SEEN.MEXISTS", "py", "EPOCHS", "last:2", "MODE", "all", "ITEMS", "https://example.org/a", "https://example.org/b")
out["classify"] = [c.decode() for c in r.execute_command("SEEN.CLASSIFY", "py", "https://example.org/a", "https://example.org/brand-new")]
out["diff"] = [c.decode() for c in r.execute_command("SEEN.DIFF", "py", "FROM", "previous", "TO", "current", "ITEMS", "https://example.org/a", "https://example.org/b", "https://example.org/new")]
out["epochs"] = len(r.execute_command("SEEN.EPOCHS", "py"))
out["pruned"] = r.execute_command("SEEN.PRUNE", "py", "KEEPLAST", "1")
print(json.dumps(out))
`;

describe('seenstore serve with redis-py r.bf()', { skip: NEEDS_REDIS_PY }, () => {
  it('runs a RedisBloom program unchanged, with durable answers', async () => {
    const dir = tempDir();
    const store = join(dir, 'store');
    const server = await startServer(store);
    writeFileSync(join(dir, 'program.py'), REDIS_PY_PROGRAM);
    const { stdout } = await exec('/usr/bin/python3', [join(dir, 'program.py'), String(server.port)]);
    const out = JSON.parse(stdout) as Record<string, unknown>;
    assert.equal(out.reserve, true);
    assert.deepEqual(out.add, [1, 0]);
    assert.deepEqual(out.madd, [0, 1, 1]);
    assert.deepEqual(out.exists, [1, 0]);
    assert.deepEqual(out.mexists, [1, 0]);
    assert.deepEqual(out.insert, [1, 0]);
    assert.deepEqual(out.info, [10_000, 13_824, 1, 3, 2]);
    assert.equal(out.card, 3);
    assert.deepEqual(out.pipeline, [500, [1, 1, 0]]);
    assert.deepEqual(out.errors, ['item exists', '(0 < error rate range < 1)', 'not found', 'not found']);
    assert.deepEqual(out.rotate, [1, 2]);
    assert.deepEqual(out.after_rotate, [1, 1]);
    assert.deepEqual(out.epochs_any, [1, 0]);
    assert.deepEqual(out.epochs_all, [1, 0]);
    assert.deepEqual(out.classify, ['revisit', 'new']);
    assert.deepEqual(out.diff, ['both', 'only-from', 'only-to']);
    assert.equal(out.epochs, 2);
    assert.deepEqual(out.pruned, [1]);
    // Durable: after the server stops, the store itself holds what was acknowledged.
    assert.equal((await server.stop()).code, 0);
    const reopened = await SeenStore.open(store);
    assert.deepEqual(
      await reopened.scope('py').has(['https://example.org/a', 'https://example.org/new', 'https://example.org/zzz']),
      [true, true, false],
    );
    await reopened.close();
  });
});

describe('seenstore serve with node-redis and @redis/bloom', () => {
  for (const RESP of [2, 3] as const) {
    it(`answers client.bf.* over RESP${RESP}, pipelined, with errors and epoch commands`, async () => {
      const server = await startServer(join(tempDir(), 'store'));
      const client = createClient({ socket: { host: '127.0.0.1', port: server.port, reconnectStrategy: false }, RESP });
      client.on('error', () => undefined);
      await client.connect();
      try {
        assert.equal(await client.bf.reserve('n', 0.01, 10_000), 'OK');
        assert.equal(await client.bf.add('n', 'https://example.org/a'), true);
        assert.equal(await client.bf.add('n', 'https://example.org/a'), false);
        assert.deepEqual(await client.bf.mAdd('n', ['https://example.org/a', 'https://example.org/b']), [false, true]);
        assert.equal(await client.bf.exists('n', 'https://example.org/b'), true);
        assert.deepEqual(await client.bf.mExists('n', ['https://example.org/b', 'https://example.org/zzz']), [
          true,
          false,
        ]);
        assert.deepEqual(await client.bf.insert('n2', ['x', 'y', 'x'], { CAPACITY: 100, ERROR: 0.05 }), [
          true,
          true,
          false,
        ]);
        const info = await client.bf.info('n');
        assert.equal(Number(info.Capacity), 10_000);
        assert.equal(Number(info['Number of items inserted']), 2);
        assert.equal(Number(info['Number of filters']), 1);
        assert.equal(await client.bf.card('n'), 2);
        // Commands issued in one tick go out as one pipeline; replies come back in order.
        const piped = await Promise.all(
          Array.from({ length: 300 }, (_, i) => client.bf.add('n', `https://example.org/p/${i % 200}`)),
        );
        assert.deepEqual(
          piped,
          Array.from({ length: 300 }, (_, i) => i < 200),
        );
        await assert.rejects(client.bf.reserve('n', 0.01, 10), /item exists/);
        await assert.rejects(client.bf.insert('none', ['x'], { NOCREATE: true }), /not found/);
        await assert.rejects(
          client.bf.reserve('e', 0.01, 10, { EXPANSION: 2, NONSCALING: true }),
          /Nonscaling filters cannot expand/,
        );
        const rotated = await client.sendCommand(['SEEN.ROTATE', 'n', 'CAPACITY', '5000']);
        assert.ok(rotated !== null);
        assert.deepEqual(await client.bf.mAdd('n', ['https://example.org/a', 'https://example.org/c']), [true, true]);
        const expectBool = (values: boolean[]): unknown[] => values.map((v) => (RESP === 3 ? v : Number(v)));
        assert.deepEqual(
          await client.sendCommand([
            'SEEN.MEXISTS',
            'n',
            'EPOCHS',
            'last:2',
            'MODE',
            'all',
            'ITEMS',
            'https://example.org/a',
            'https://example.org/b',
          ]),
          expectBool([true, false]),
        );
        assert.deepEqual(
          await client.sendCommand(['SEEN.CLASSIFY', 'n', 'https://example.org/b', 'https://example.org/c']),
          ['revisit', 'new'],
        );
        assert.deepEqual(
          await client.sendCommand([
            'SEEN.DIFF',
            'n',
            'FROM',
            '1',
            'TO',
            '2',
            'ITEMS',
            'https://example.org/b',
            'https://example.org/c',
          ]),
          ['only-from', 'only-to'],
        );
        assert.equal(((await client.sendCommand(['SEEN.EPOCHS', 'n'])) as unknown[]).length, 2);
        assert.deepEqual(await client.sendCommand(['SEEN.PRUNE', 'n', 'KEEPLAST', '1']), [1]);
        assert.equal(await client.ping(), 'PONG');
      } finally {
        client.destroy();
      }
    });
  }
});
