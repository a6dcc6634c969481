import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { NEEDS_REDIS_CLI, startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

const exec = promisify(execFile);

/** The stores the queue commands are checked on: the reference driver, and the default (LMDB). */
const STORES: ReadonlyArray<[string, () => string]> = [
  ['memory', () => `memory://serve-queues-${process.pid}`],
  ['lmdb', () => join(tempDir(), 'store')],
];

for (const [name, location] of STORES) {
  describe(`serve: the frontier's queues over RESP (${name})`, { skip: NEEDS_REDIS_CLI }, () => {
    it('config, per-queue delay and block, take per queue, list, info, schedule, delete; bad values refused', async () => {
      const server = await startServer(location());
      const cli = async (...args: string[]): Promise<string> =>
        (await exec('redis-cli', ['-p', String(server.port), ...args])).stdout.trimEnd();
      assert.equal(await cli('SEEN.QCONFIG', 'c'), 'queuekey\nhost\ndelay\n1000\nmaxinflight\n0');
      assert.equal(
        await cli('SEEN.QCONFIG', 'c', 'DELAY', '0', 'MAXINFLIGHT', '2'),
        'queuekey\nhost\ndelay\n0\nmaxinflight\n2',
      );
      assert.equal(
        await cli('SEEN.ENQUEUE', 'c', 'http://a.test/1', 'http://a.test/2', 'http://a.test/3', 'http://b.test/1'),
        '1\n1\n1\n1',
      );
      // Keyed by a fingerprint, queued by its URL's host.
      assert.equal(await cli('SEEN.ENQUEUEFOR', 'c', 'f00d', 'http://b.test/2', '{"n":1}'), '1');
      assert.equal(
        await cli('SEEN.QLIST', 'c').then((out) =>
          out
            .split('\n')
            .filter((_, i) => i % 5 < 2)
            .join(' '),
        ),
        'a.test 3 b.test 2',
      );
      const taken = (await cli('SEEN.TAKE', 'c', '10', 'PERQUEUE', '5', 'LEASE', '60000')).split('\n');
      assert.deepEqual(
        taken.filter((_, i) => i % 4 === 1),
        ['http://a.test/1', 'http://a.test/2', 'http://b.test/1', 'f00d'],
        'the in-flight limit of 2 per queue was not kept',
      );
      assert.equal(await cli('SEEN.QDELAY', 'c', 'a.test', '3600000'), 'OK');
      assert.equal(await cli('SEEN.DONE', 'c', taken[0]!), '1');
      assert.equal(await cli('SEEN.TAKE', 'c', '10'), '', 'a queue was handed out inside its own delay');
      assert.equal(await cli('SEEN.QDELAY', 'c', 'a.test', 'DEFAULT'), 'OK');
      assert.equal(await cli('SEEN.QBLOCK', 'c', 'a.test', String(Date.now() + 3_600_000)), 'OK');
      assert.equal(await cli('SEEN.TAKE', 'c', '10'), '', 'a blocked queue was handed out');
      const info = (await cli('SEEN.QINFO', 'c', 'a.test')).split('\n');
      assert.deepEqual(
        info.filter((_, i) => i % 2 === 0),
        ['waiting', 'leased', 'completed', 'ready', 'delay', 'blocked', 'limit'],
      );
      assert.deepEqual([info[1], info[3], info[5], info[9], info[13]], ['1', '1', '1', '-1', '-1']);
      assert.equal(await cli('SEEN.QBLOCK', 'c', 'a.test', '0'), 'OK');
      assert.equal((await cli('SEEN.TAKE', 'c', '10')).split('\n')[1], 'http://a.test/3');
      assert.equal(await cli('SEEN.QLIMIT', 'c', 'b.test', '0'), 'OK');
      assert.equal(await cli('SEEN.SCHEDULE', 'c', String(Date.now() + 3_600_000), 'http://c.test/later'), '1');
      assert.equal(
        await cli('SEEN.TAKE', 'c', '10'),
        '',
        'a scheduled URL or a queue at its crawl limit was handed out',
      );
      assert.equal(await cli('SEEN.QDELETE', 'c', 'b.test'), '2');
      assert.equal(await cli('SEEN.QINFO', 'c', 'b.test'), '');
      assert.equal(await cli('SEEN.FRONTIER', 'c'), 'pending\n1\nleased\n2\ndone\n1\nfailed\n0');
      assert.match(await cli('SEEN.QDELAY', 'c', 'a.test', '-5'), /USAGE delayMs must be a whole number/);
      assert.match(
        await cli('SEEN.QCONFIG', 'c', 'QUEUEKEY', 'path'),
        /ERR QUEUEKEY must be one of host, domain, none/,
      );
      assert.match(await cli('SEEN.QCONFIG', 'c', 'QUEUEKEY', 'domain'), /USAGE .*cannot change once URLs were queued/);
      assert.match(await cli('SEEN.TAKE', 'c', '1', 'PERQUEUE', '0'), /USAGE perQueue must be a whole number/);
      assert.match(await cli('SEEN.ENQUEUEFOR', 'c', 'k', 'http://x/'), /ERR wrong number of arguments/);
      assert.equal(await cli('PING'), 'PONG', 'the server stopped answering after bad input');
      assert.equal((await server.stop()).code, 0);
    });
  });
}
