import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { FORMAT_VERSION, HASH_SCHEME_ID, SeenStore } from '../src/index.js';
import { RespParser, type Request } from '../src/server/resp-parser.js';
import { serverLimits } from '../src/server/limits.js';
import { runCli } from './helpers/cli.js';
import { until } from './helpers/redis-cluster.js';
import { RawClient, encodeCommand } from './helpers/resp.js';
import { infoFields, NEEDS_REDIS_CLI, startServer } from './helpers/server.js';
import { memoryStore } from './helpers/memory.js';
import { tempDir } from './helpers/tmp.js';

const exec = promisify(execFile);

async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await exec('redis-cli', ['-p', String(port), ...args]);
  return stdout.trimEnd();
}

function requestArgs(request: Request): string[] {
  const args: string[] = [];
  for (let i = 0; i < request.argc; i++)
    args.push(request.buf.toString('latin1', request.offsets[2 * i], request.offsets[2 * i + 1]));
  return args;
}

describe('RESP parser', () => {
  it('parses the same requests whatever the chunking, multibulk and inline mixed', () => {
    const wire = Buffer.concat([
      encodeCommand(['BF.MADD', 'k', 'http://a/', 'x\r\ny', '']),
      Buffer.from('PING\r\n\r\nBF.ADD  k "quoted word"\n'),
      Buffer.from('*0\r\n'),
      encodeCommand(['ECHO', Buffer.from([0, 1, 2, 255])]),
    ]);
    const expected = [
      ['BF.MADD', 'k', 'http://a/', 'x\r\ny', ''],
      ['PING'],
      ['BF.ADD', 'k', 'quoted word'],
      ['ECHO', '\u0000\u0001\u0002\u00ff'],
    ];
    for (let size = 1; size <= wire.length; size++) {
      const parser = new RespParser(serverLimits());
      const got: string[][] = [];
      for (let at = 0; at < wire.length; at += size)
        parser.push(wire.subarray(at, at + size), (request) => got.push(requestArgs(request)));
      assert.deepEqual(got, expected, `chunks of ${size} bytes`);
    }
  });

  it('keeps handed-out requests intact while later bytes arrive', () => {
    const parser = new RespParser(serverLimits());
    const held: Request[] = [];
    const wire = Buffer.concat(
      Array.from({ length: 200 }, (_, i) => encodeCommand(['BF.ADD', 'k', `http://example.org/${i}`])),
    );
    for (let at = 0; at < wire.length; at += 7) parser.push(wire.subarray(at, at + 7), (request) => held.push(request));
    assert.equal(held.length, 200);
    held.forEach((request, i) => assert.deepEqual(requestArgs(request), ['BF.ADD', 'k', `http://example.org/${i}`]));
  });

  it('refuses malformed frames with the protocol error Redis gives', () => {
    const cases: [string, RegExp][] = [
      ['*2\r\n$3\r\nfoo\r\n:1\r\n', /expected '\$', got ':'/],
      ['*1\r\n$-5\r\n', /invalid bulk length/],
      ['*abc\r\n', /invalid multibulk length/],
      ['*1\r\n$3\r\nfooXX', /expected CRLF/],
      ['*999999999\r\n', /invalid multibulk length/],
      ['*1\r\n$999999999\r\n', /invalid bulk length/],
      ['SET "unbalanced\r\n', /unbalanced quotes/],
    ];
    for (const [wire, message] of cases) {
      const parser = new RespParser(serverLimits());
      assert.throws(() => parser.push(Buffer.from(wire), () => undefined), message, wire);
    }
  });
});

describe('seenstore serve with redis-cli', { skip: NEEDS_REDIS_CLI }, () => {
  it('answers the Bloom commands with RedisBloom replies and errors, and the epoch commands', async () => {
    const server = await startServer(join(tempDir(), 'store'));
    const cli = (...args: string[]): Promise<string> => redisCli(server.port, ...args);
    assert.equal(await cli('PING'), 'PONG');
    assert.equal(await cli('BF.RESERVE', 'urls', '0.01', '1000'), 'OK');
    assert.equal(await cli('BF.RESERVE', 'urls', '0.01', '1000'), 'ERR item exists');
    assert.equal(await cli('BF.RESERVE', 'bad', '1.5', '1000'), 'ERR (0 < error rate range < 1)');
    assert.equal(await cli('BF.RESERVE', 'bad', '0.01', 'lots'), 'ERR bad capacity');
    assert.equal(
      await cli('BF.RESERVE', 'bad', '0.01', '10', 'EXPANSION', '2', 'NONSCALING'),
      'ERR Nonscaling filters cannot expand',
    );
    assert.equal(await cli('BF.ADD', 'urls', 'http://a/'), '1');
    assert.equal(await cli('BF.ADD', 'urls', 'http://a/'), '0');
    assert.equal(await cli('BF.MADD', 'urls', 'http://a/', 'http://b/', 'http://c/'), '0\n1\n1');
    assert.equal(await cli('BF.EXISTS', 'urls', 'http://b/'), '1');
    assert.equal(await cli('BF.MEXISTS', 'urls', 'http://b/', 'http://nowhere/'), '1\n0');
    assert.equal(
      await cli('BF.INSERT', 'other', 'CAPACITY', '500', 'ERROR', '0.001', 'ITEMS', 'http://x/', 'http://x/'),
      '1\n0',
    );
    assert.equal(await cli('BF.INSERT', 'absent', 'NOCREATE', 'ITEMS', 'http://x/'), 'ERR not found');
    assert.equal(
      await cli('BF.INFO', 'urls'),
      'Capacity\n1000\nSize\n1408\nNumber of filters\n1\nNumber of items inserted\n3\nExpansion rate\n2',
    );
    assert.equal(await cli('BF.INFO', 'other', 'CAPACITY'), '500');
    assert.equal(await cli('BF.INFO', 'absent'), 'ERR not found');
    assert.equal(await cli('BF.CARD', 'urls'), '3');
    assert.equal(await cli('BF.CARD', 'absent'), '0');
    assert.equal(await cli('BF.ADD', 'urls'), "ERR wrong number of arguments for 'bf.add' command");
    assert.match(await cli('BF.ADD', 'bad/key', 'x'), /^USAGE invalid scope name/);
    assert.equal(
      await cli('BF.ADD', 'spider:dupefilter', 'x'),
      '1',
      'a key with ":" names scope spider.dupefilter (issue 30)',
    );
    assert.match(await cli('NOSUCH', 'a'), /^ERR unknown command 'NOSUCH'/);

    const rotated = await cli('SEEN.ROTATE', 'urls', 'CAPACITY', '2000');
    assert.match(rotated, /^sealed\n1\nopened\n2\ncapacity\n2000\n/);
    assert.equal(await cli('SEEN.ROTATE', 'urls', 'IFEPOCH', '1'), '');
    assert.equal(await cli('BF.MADD', 'urls', 'http://a/', 'http://d/'), '1\n1');
    assert.equal(
      await cli('SEEN.MEXISTS', 'urls', 'EPOCHS', 'all', 'MODE', 'all', 'ITEMS', 'http://a/', 'http://b/', 'http://d/'),
      '1\n0\n0',
    );
    assert.equal(await cli('SEEN.MEXISTS', 'urls', 'EPOCHS', 'last:2', 'ITEMS', 'http://b/', 'http://zz/'), '1\n0');
    assert.equal(await cli('SEEN.CLASSIFY', 'urls', 'http://a/', 'http://d/'), 'revisit\nnew');
    assert.equal(
      await cli(
        'SEEN.DIFF',
        'urls',
        'FROM',
        'previous',
        'TO',
        'current',
        'ITEMS',
        'http://a/',
        'http://b/',
        'http://d/',
        'http://z/',
      ),
      'both\nonly-from\nonly-to\nneither',
    );
    assert.match(await cli('SEEN.EPOCHS', 'urls'), /^epoch\n1\nstate\nsealed\n[\s\S]*epoch\n2\nstate\nopen\n/);
    assert.match(
      await cli('SEEN.STATS', 'urls'),
      /^epoch\n2\nstate\nopen\n[\s\S]*adds\n2\nnew\n2\nsubmitted\n2\nadded\n2\n/,
      'adds and new, and the deprecated names for one release',
    );
    assert.equal(await cli('SEEN.PRUNE', 'urls', 'KEEPLAST', '1'), '1');
    assert.match(
      await cli('SEEN.MEXISTS', 'urls', 'EPOCHS', '1', 'ITEMS', 'x'),
      /^NOT_FOUND scope urls has no epoch 1/,
    );
    assert.match(await cli('SEEN.SNAPSHOT', 'nightly'), /^name\nnightly\npath\n/);
    const info = await cli('INFO');
    for (const section of ['# Server', '# Clients', '# Stats', '# Persistence', '# Scopes'])
      assert.ok(info.includes(section), section);
    assert.match(info, /scope_urls:epoch=2,epochs=1,capacity=2000,adds=2,new=2,added=2,submitted=2,/);
    assert.match(await cli('COMMAND', 'DOCS', 'bf.add'), /^bf.add\nsummary\n/);
    assert.equal(await cli('COMMAND', 'COUNT'), String((await cli('COMMAND', 'LIST')).split('\n').length));

    const { code } = await server.stop();
    assert.equal(code, 0);
    assert.ok(server.log.some((line) => line.includes('"event":"rotation"')));
    assert.ok(server.log.some((line) => line.includes('"event":"stop"')));
  });

  it('INFO persistence says what is true of each backend: the driver, what outlives the process, who makes writes durable', async () => {
    const dir = tempDir();
    for (const [location, expected] of [
      [
        join(dir, 'store'),
        {
          store_backend: 'lmdb',
          persistent: '1',
          durability: 'journal-commit-per-batch',
          format_version: String(FORMAT_VERSION),
          snapshots_supported: '1',
          snapshots: '1',
        },
      ],
      [memoryStore('info'), { store_backend: 'memory', persistent: '0', durability: 'none', snapshots_supported: '0' }],
    ] as const) {
      const server = await startServer(location);
      try {
        if (expected.store_backend === 'lmdb')
          assert.match(await redisCli(server.port, 'SEEN.SNAPSHOT', 'one'), /^name\none\n/);
        const fields = infoFields(await redisCli(server.port, 'INFO', 'persistence'));
        assert.deepEqual(
          fields,
          { loading: '0', store: fields.store, hash_scheme: HASH_SCHEME_ID, ...expected },
          location,
        );
        assert.ok(fields.store !== undefined && fields.store.length > 0);
        assert.equal(
          infoFields(await redisCli(server.port, 'INFO')).store_backend,
          expected.store_backend,
          'INFO of every section named another backend',
        );
      } finally {
        assert.equal((await server.stop()).code, 0);
      }
    }
  });

  it('serves redis-cli in interactive mode, which loads COMMAND DOCS first', {
    skip: spawnSync('script', ['--version']).status === 0 ? false : 'script (util-linux) is not installed',
  }, async () => {
    const server = await startServer(join(tempDir(), 'store'));
    // A terminal for redis-cli (script), TERM=dumb so that its line editor asks the terminal nothing.
    const session = spawnSync('script', ['-qc', `redis-cli -p ${server.port}`, '/dev/null'], {
      input: 'BF.MADD k http://a/ http://b/\nBF.INFO k CAPACITY\nquit\n',
      env: { ...process.env, TERM: 'dumb' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.doesNotMatch(session.stdout, /Assertion/);
    assert.match(session.stdout, /1\) \(integer\) 1\r?\n2\) \(integer\) 1/);
    assert.match(session.stdout, /1\) \(integer\) 1000000/);
  });

  it('the frontier commands: enqueue once, take under a lease with data, done, release with new data, reclaim, stats', async () => {
    const server = await startServer(join(tempDir(), 'store'));
    const cli = (...args: string[]): Promise<string> => redisCli(server.port, ...args);
    assert.equal(await cli('SEEN.ENQUEUE', 'crawl', 'http://a/1', 'http://a/2', 'http://a/1'), '1\n1\n0');
    assert.equal(await cli('SEEN.ENQUEUEDATA', 'crawl', 'http://a/3', '{"depth":2}', 'http://a/2', '{}'), '1\n0');
    assert.equal(await cli('BF.EXISTS', 'crawl', 'http://a/3'), '1', 'an enqueued URL is not seen');
    // One host: no delay and several URLs per take, so that the takes below are of the frontier's order.
    await cli('SEEN.QCONFIG', 'crawl', 'DELAY', '0');
    const taken = (await cli('SEEN.TAKE', 'crawl', '2', 'LEASE', '60000', 'OWNER', 'w1', 'PERQUEUE', '5')).split('\n');
    assert.deepEqual(
      taken.filter((_, i) => i % 4 === 1),
      ['http://a/1', 'http://a/2'],
    );
    const third = (await cli('SEEN.TAKE', 'crawl', '5', 'PERQUEUE', '5')).split('\n');
    assert.deepEqual(third.slice(1), ['http://a/3', '1', '{"depth":2}']);
    assert.equal(await cli('SEEN.DONE', 'crawl', taken[0]!), '1');
    assert.equal(await cli('SEEN.RELEASEDATA', 'crawl', third[0]!, '{"depth":2,"retries":1}'), '1');
    assert.deepEqual((await cli('SEEN.TAKE', 'crawl', '5', 'PERQUEUE', '5')).split('\n').slice(1), [
      'http://a/3',
      '2',
      '{"depth":2,"retries":1}',
    ]);
    assert.equal(await cli('SEEN.RECLAIM', 'crawl', 'w1'), '1');
    assert.equal(await cli('SEEN.FRONTIER', 'crawl'), 'pending\n1\nleased\n1\ndone\n1\nfailed\n0');
    assert.match(await cli('SEEN.ENQUEUEDATA', 'crawl', 'http://a/4', 'not json'), /ERR data of item 1 is not JSON/);
    assert.match(await cli('SEEN.DONE', 'crawl', 'x'), /USAGE/);
    await server.stop();
  });

  it('takes a redis-cli --pipe mass insert and answers every command', async () => {
    const dir = tempDir();
    const server = await startServer(join(dir, 'store'));
    const commands = Array.from({ length: 3000 }, (_, i) =>
      encodeCommand(
        i % 3 === 2 ? ['BF.MADD', 'mass', `http://m/${i}`, `http://m/${i - 1}`] : ['BF.ADD', 'mass', `http://m/${i}`],
      ),
    );
    writeFileSync(join(dir, 'mass.resp'), Buffer.concat(commands));
    const { stdout } = await exec('sh', ['-c', `redis-cli -p ${server.port} --pipe < ${join(dir, 'mass.resp')}`]);
    assert.match(stdout, /errors: 0, replies: 3000/);
    assert.equal(await redisCli(server.port, 'BF.CARD', 'mass'), '3000');
    assert.equal(
      await redisCli(server.port, 'BF.MEXISTS', 'mass', 'http://m/0', 'http://m/2999', 'http://m/3000'),
      '1\n1\n0',
    );
  });

  it('works over inline commands and RESP3 (HELLO 3)', async () => {
    const server = await startServer(join(tempDir(), 'store'));
    const client = await RawClient.connect(server.port);
    client.write('PING\r\nBF.ADD k http://inline/\r\nBF.EXISTS k http://inline/\r\n');
    assert.equal(await client.read(), 'PONG');
    assert.equal(await client.read(), 1);
    assert.equal(await client.read(), 1);
    const hello = (await client.command('HELLO', '3')) as Map<string, unknown>;
    assert.equal(hello.get('proto'), 3);
    assert.equal(await client.command('BF.ADD', 'k', 'http://resp3/'), true);
    assert.deepEqual(await client.command('BF.MEXISTS', 'k', 'http://resp3/', 'http://no/'), [true, false]);
    const info = (await client.command('BF.INFO', 'k')) as Map<string, unknown>;
    assert.equal(info.get('Number of items inserted'), 2);
    assert.equal(await client.command('CLIENT', 'GETNAME'), null);
    assert.match(String(await client.command('SELECT', '1')), /DB index is out of range/);
    assert.equal(await client.command('SELECT', '0'), 'OK');
    client.close();
  });

  it('keeps replies in request order across a deep pipeline of writes and reads', async () => {
    const server = await startServer(join(tempDir(), 'store'));
    const client = await RawClient.connect(server.port);
    const wire: Buffer[] = [];
    for (let i = 0; i < 2000; i++) {
      wire.push(encodeCommand(['BF.ADD', 'p', `http://p/${i % 1500}`]));
      if (i % 100 === 0)
        wire.push(encodeCommand(['BF.EXISTS', 'p', `http://p/${i % 1500}`]), encodeCommand(['ECHO', `mark${i}`]));
    }
    client.write(Buffer.concat(wire));
    for (let i = 0; i < 2000; i++) {
      assert.equal(await client.read(), i < 1500 ? 1 : 0, `add ${i}`);
      if (i % 100 === 0) {
        assert.equal(await client.read(), 1, `exists after add ${i}: a read sees the connection's own earlier write`);
        assert.equal(await client.read(), `mark${i}`);
      }
    }
    client.close();
  });

  it('coalesces concurrent single adds of many connections into shared commits', async () => {
    const server = await startServer(join(tempDir(), 'store'), ['--metrics-port', '0']);
    const clients = await Promise.all(Array.from({ length: 32 }, () => RawClient.connect(server.port)));
    for (let round = 0; round < 5; round++) {
      await Promise.all(clients.map((client, i) => client.command('BF.ADD', 'g', `http://g/${round}/${i}`)));
    }
    for (let i = 0; i < 5; i++) await clients[0]!.command('BF.ADD', 'g', 'http://g/0/0');
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const batches = Number(/^seenstore_batch_urls_count (\d+)$/m.exec(metrics)![1]);
    const urls = Number(/^seenstore_batch_urls_sum (\d+)$/m.exec(metrics)![1]);
    assert.equal(urls, 165);
    assert.ok(batches < urls / 2, `${batches} commits for ${urls} single adds from 32 connections`);
    assert.match(metrics, /^seenstore_commands_total\{command="BF.ADD"\} 165$/m);
    // One vocabulary (issue 45): adds with repeats, new without; the old gauge names stay one release.
    assert.match(metrics, /^seenstore_urls_total\{op="adds"\} 165$/m);
    assert.match(metrics, /^seenstore_urls_total\{op="new"\} 160$/m);
    assert.match(metrics, /^seenstore_epoch_adds\{scope="g",epoch="1"\} 165$/m);
    assert.match(metrics, /^seenstore_epoch_new_urls\{scope="g",epoch="1"\} 160$/m);
    assert.match(metrics, /^seenstore_epoch_submitted_urls\{scope="g",epoch="1"\} 165$/m);
    assert.match(metrics, /^seenstore_epoch_added_urls\{scope="g",epoch="1"\} 160$/m);
    assert.match(metrics, /^# HELP seenstore_epoch_added_urls Deprecated: /m);
    assert.match(metrics, /^seenstore_commit_seconds_bucket\{le="/m);
    assert.match(metrics, /^seenstore_epoch_fill_ratio\{scope="g",epoch="1"\} 0\.\d+$/m);
    assert.match(metrics, /^seenstore_epoch_estimated_fpr\{scope="g",epoch="1"\} /m);
    assert.match(metrics, /^seenstore_connections 32$/m);
    for (const client of clients) client.close();
  });

  it('a redis:// store goes to SeenStore.open (nothing listening: STORE_UNAVAILABLE), and a port in use is refused', async () => {
    // A refused connection is retried until the location's deadline (a node may be restarting): 1 s here.
    const refused = await runCli(['--store', 'redis://127.0.0.1:7/?timeout-ms=1000', 'serve', '--port', '0']);
    assert.equal(refused.code, 16, refused.stderr);
    assert.match(refused.stderr, /error STORE_UNAVAILABLE: no Redis node of 127\.0\.0\.1:7 answered/);
    const server = await startServer(join(tempDir(), 'store'));
    const taken = await runCli(['--store', join(tempDir(), 'other'), 'serve', '--port', String(server.port)]);
    assert.equal(taken.code, 10);
    assert.match(taken.stderr, /error IO_ERROR: cannot listen on 127\.0\.0\.1:\d+/);
  });

  it('requires a password off loopback and compares AUTH', async () => {
    const dir = tempDir();
    const refused = await runCli(['--store', join(dir, 'store'), 'serve', '--bind', '0.0.0.0', '--port', '0'], '', {
      SEENSTORE_PASSWORD: '',
    });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /refusing to listen on 0\.0\.0\.0 without a password/);
    writeFileSync(join(dir, 'pass'), 's3cret\n');
    const server = await startServer(join(dir, 'store'), ['--requirepass-file', join(dir, 'pass')]);
    const client = await RawClient.connect(server.port);
    assert.match(String(await client.command('BF.ADD', 'k', 'x')), /^Error: NOAUTH Authentication required/);
    assert.match(String(await client.command('AUTH', 'wrong')), /^Error: WRONGPASS/);
    assert.equal(await client.command('AUTH', 's3cret'), 'OK');
    assert.equal(await client.command('BF.ADD', 'k', 'x'), 1);
    const other = await RawClient.connect(server.port);
    assert.ok(
      (
        (await other.command('HELLO', '3', 'AUTH', 'default', 's3cret', 'SETNAME', 'crawler')) as Map<string, unknown>
      ).get('proto') === 3,
    );
    assert.equal(await other.command('CLIENT', 'GETNAME'), 'crawler');
    client.close();
    other.close();
  });

  it('answers a malformed frame with a protocol error, closes, and keeps serving others', async () => {
    const server = await startServer(join(tempDir(), 'store'));
    const client = await RawClient.connect(server.port);
    client.write('PING\r\n*1\r\n$-7\r\n');
    assert.equal(await client.read(), 'PONG');
    assert.match(String(await client.read()), /^Error: ERR Protocol error: invalid bulk length/);
    await client.waitClosed();
    assert.equal(await redisCli(server.port, 'PING'), 'PONG');
  });

  it('enforces the client limit and the idle timeout', async () => {
    const server = await startServer(join(tempDir(), 'store'), ['--max-clients', '2', '--idle-timeout', '1']);
    const a = await RawClient.connect(server.port);
    const b = await RawClient.connect(server.port);
    assert.equal(await a.command('PING'), 'PONG');
    const c = await RawClient.connect(server.port);
    assert.match(String(await c.read()), /^Error: ERR max number of clients reached/);
    const started = Date.now();
    await a.waitClosed();
    await b.waitClosed();
    assert.ok(Date.now() - started < 5000);
  });

  it('stops reading a client that does not read its replies (backpressure), then serves it in full', async () => {
    const server = await startServer(join(tempDir(), 'store'), ['--max-pending-replies', '1000']);
    const client = await RawClient.connect(server.port);
    client.socket.pause();
    // 32 MiB of replies: past the 8 MiB the server queues for a slow reader plus what the kernel buffers.
    const count = 2_000;
    const payload = 'x'.repeat(16 * 1024);
    const echo = encodeCommand(['ECHO', payload]);
    client.write(Buffer.concat(Array.from({ length: count }, () => echo)));
    const line = async (): Promise<string> => /^id=1 .*$/m.exec(await redisCli(server.port, 'CLIENT', 'LIST'))![0];
    // The event: the server has stopped reading the client (its line shows events= without r).
    await until(
      async () => / events= /.test(await line()),
      'the server to stop reading the client that reads no reply',
    );
    const pending = Number(/ pending=(\d+)/.exec(await line())![1]);
    assert.ok(pending <= 1000 + 2000, `pending replies ${pending} with --max-pending-replies 1000`);
    const processed = Number(/total_commands_processed:(\d+)/.exec(await redisCli(server.port, 'INFO', 'stats'))![1]);
    assert.ok(
      processed < count,
      `the server ran ${processed} commands: all ${count} of a client that reads no reply, and more`,
    );
    client.socket.resume();
    for (let i = 0; i < count; i++) assert.equal(await client.read(), payload);
    client.close();
  });
});

describe('seenstore serve group commit', () => {
  it('fails only the command the library refuses, not the others in its batch', async () => {
    const store = join(tempDir(), 'store');
    // A scope that normalises with whatwg: the library refuses what is not an absolute URL.
    const created = await runCli(
      ['--store', store, '--scope', 'w', 'add', '--normalize', 'whatwg'],
      'https://first.example/\n',
    );
    assert.equal(created.code, 0, created.stderr);
    const server = await startServer(store);
    const clients = await Promise.all(Array.from({ length: 8 }, () => RawClient.connect(server.port)));
    for (const [i, client] of clients.entries())
      client.send('BF.MADD', 'w', `https://ok.example/${i}`, i === 3 ? 'not a url' : `https://ok.example/${i}/b`);
    const replies = await Promise.all(clients.map((client) => client.read()));
    replies.forEach((reply, i) => {
      if (i === 3) assert.match(String(reply), /^Error: INVALID_URL /);
      else assert.deepEqual(reply, [1, 1], `client ${i}`);
    });
    assert.deepEqual(
      await clients[0]!.command(
        'BF.MEXISTS',
        'w',
        'https://ok.example/3',
        'https://ok.example/2/b',
        'HTTPS://FIRST.example',
      ),
      [0, 1, 1],
    );
    for (const client of clients) client.close();
  });
});

describe('seenstore serve: a URL with a control character (issue 45)', () => {
  it('a scope of URL keys: fails only its own write command, whatever its batch holds; queries answer INVALID_URL; nothing of it is added', async () => {
    const store = join(tempDir(), 'store');
    // The CLI's scopes have URL keys; serve's own (BF.ADD of a new key) raw keys, which take any string.
    const created = await runCli(['--store', store, '--scope', 'c', 'add'], 'https://first.example/\n');
    assert.equal(created.code, 0, created.stderr);
    const server = await startServer(store);
    const clients = await Promise.all(Array.from({ length: 6 }, () => RawClient.connect(server.port)));
    // One group commit for all six: the library refuses the batch, which is then committed command by command.
    const bad: Record<number, string> = { 2: 'https://bad.example/\u0000', 4: 'https://bad.example/a\tb' };
    for (const [i, client] of clients.entries())
      client.send('BF.MADD', 'c', `https://ok.example/${i}`, bad[i] ?? `https://ok.example/${i}/b`);
    const replies = await Promise.all(clients.map((client) => client.read()));
    replies.forEach((reply, i) => {
      if (bad[i] !== undefined) assert.match(String(reply), /^Error: INVALID_URL .*control character/, `client ${i}`);
      else assert.deepEqual(reply, [1, 1], `client ${i}`);
    });
    const client = clients[0]!;
    assert.match(String(await client.command('BF.ADD', 'c', 'https://bad.example/\u007f')), /^Error: INVALID_URL /);
    assert.match(
      String(await client.command('BF.INSERT', 'c', 'ITEMS', 'https://ok.example/9', 'https://bad.example/\u001b[D')),
      /^Error: INVALID_URL /,
    );
    assert.match(String(await client.command('BF.EXISTS', 'c', 'https://bad.example/\u0000')), /^Error: INVALID_URL /);
    assert.match(
      String(await client.command('SEEN.MEXISTS', 'c', 'ITEMS', 'https://first.example/', 'https://bad.example/\rx')),
      /^Error: INVALID_URL /,
    );
    assert.match(
      String(await client.command('SEEN.CLASSIFY', 'c', 'https://bad.example/\u0001')),
      /^Error: INVALID_URL /,
    );
    assert.deepEqual(
      await client.command(
        'BF.MEXISTS',
        'c',
        'https://ok.example/2',
        'https://ok.example/4',
        'https://ok.example/9',
        'https://ok.example/1/b',
      ),
      [0, 0, 0, 1],
    );
    assert.equal(await client.command('BF.CARD', 'c'), 9, "the first URL and the four good commands' two each");
    assert.match(
      String(await client.command('SEEN.ENQUEUE', 'c', 'https://ok.example/q', 'https://bad.example/\u0000')),
      /^Error: INVALID_URL /,
    );
    assert.deepEqual(await client.command('BF.MEXISTS', 'c', 'https://ok.example/q'), [0]);
    assert.deepEqual(
      await client.command('BF.MADD', 'raw', 'item\u0000one', 'item\ttwo'),
      [1, 1],
      'raw keys take any string',
    );
    for (const c of clients) c.close();
  });
});

describe('seenstore serve durability', () => {
  it('SIGTERM answers every request it took, closes the store and exits 0', async () => {
    const store = join(tempDir(), 'store');
    const server = await startServer(store);
    const client = await RawClient.connect(server.port);
    const observer = await RawClient.connect(server.port);
    const commands = 20;
    const urls = Array.from({ length: commands * 2000 }, (_, i) => `http://term.example/${i}`);
    for (let i = 0; i < urls.length; i += 2000) client.send('BF.MADD', 'k', ...urls.slice(i, i + 2000));
    // The signal lands once the server has taken every request (counted when parsed, before any
    // is answered), while most of them are still in their batches.
    let polls = 0;
    const taken = async (): Promise<number> =>
      Number(/total_commands_processed:(\d+)/.exec(String(await observer.command('INFO', 'stats')))![1]) - ++polls;
    while ((await taken()) < commands) await new Promise((resolve) => setTimeout(resolve, 1));
    const stopping = server.stop('SIGTERM');
    const replies: unknown[] = [];
    for (let i = 0; i < commands; i++) replies.push(await client.read());
    assert.deepEqual(
      replies.flat(),
      urls.map(() => 1),
    );
    assert.deepEqual(await stopping, { code: 0, signal: null });
    assert.ok(server.log.some((line) => line.includes('"event":"stop"') && line.includes('"reason":"SIGTERM"')));
    const reopened = await SeenStore.open(store);
    assert.ok((await reopened.scope('k').has(urls)).every(Boolean));
    await reopened.close();
  });

  it('kill -9 loses nothing acknowledged', async () => {
    const store = join(tempDir(), 'store');
    const server = await startServer(store);
    const clients = await Promise.all(Array.from({ length: 4 }, () => RawClient.connect(server.port)));
    // Every reply a client reads was sent before the kill: each is an acknowledgement.
    const acked: string[] = [];
    const work = clients.map(async (client, c) => {
      for (let batch = 0; ; batch++) {
        const urls = Array.from({ length: 200 }, (_, i) => `http://kill.example/${c}/${batch}/${i}`);
        let reply: unknown;
        try {
          reply = await client.command(
            ...(batch % 2 === 0 ? ['BF.MADD', 'k', ...urls] : ['BF.INSERT', 'k', 'ITEMS', ...urls]),
          );
        } catch {
          return;
        }
        assert.deepEqual(
          reply,
          urls.map(() => 1),
        );
        acked.push(...urls);
      }
    });
    while (acked.length < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
    server.child.kill('SIGKILL');
    assert.equal((await server.stop()).signal, 'SIGKILL');
    await Promise.all(work);
    const reopened = await SeenStore.open(store);
    const seen = await reopened.scope('k').has(acked);
    await reopened.close();
    const ackedAtKill = acked.length;
    assert.equal(
      seen.filter((s) => !s).length,
      0,
      `every one of ${ackedAtKill} acknowledged URLs is in the reopened store`,
    );
  });
});
