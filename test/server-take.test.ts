import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoryStore } from './helpers/memory.js';
import { RawClient } from './helpers/resp.js';
import { startServer } from './helpers/server.js';

/** SEEN.TAKE's per-queue options over RESP (docs/server.md): the frontier's politeness for any client. */
describe('SEEN.TAKE PERQUEUE and MAXQUEUES', () => {
  it('hands out at most PERQUEUE items of each host and at most MAXQUEUES hosts', async () => {
    const server = await startServer(memoryStore('server-take'));
    const client = await RawClient.connect(server.port);
    try {
      const urls = [
        'http://a.com/1',
        'http://a.com/2',
        'http://a.com/3',
        'http://b.com/1',
        'http://b.com/2',
        'http://c.com/1',
      ];
      assert.deepEqual(await client.command('SEEN.ENQUEUE', 'crawl', ...urls), [1, 1, 1, 1, 1, 1]);
      const taken = (await client.command('SEEN.TAKE', 'crawl', '10', 'PERQUEUE', '2', 'MAXQUEUES', '2')) as string[][];
      const hosts = taken.map((entry) => new URL(entry[1]!).host);
      assert.equal(new Set(hosts).size, 2, `two queues: ${hosts.join(' ')}`);
      assert.ok([...new Set(hosts)].every((host) => hosts.filter((h) => h === host).length <= 2));
      assert.equal(taken.length, 4 - (hosts.includes('c.com') ? 1 : 0));
      const rest = (await client.command('SEEN.TAKE', 'crawl', '10', 'PERQUEUE', '5')) as string[][];
      assert.deepEqual(
        rest.map((entry) => new URL(entry[1]!).host),
        ['a.com', 'b.com', 'c.com'].filter((host) => !hosts.includes(host)),
        'the queues just taken wait out their delay',
      );
      assert.match(
        String(await client.command('SEEN.TAKE', 'crawl', '1', 'PERQUEUE', '0')),
        /USAGE perQueue must be a whole number from 1/,
      );
      assert.match(
        String(await client.command('SEEN.TAKE', 'crawl', '1', 'MAXQUEUES', 'x')),
        /ERR MAXQUEUES must be a whole number/,
      );
    } finally {
      client.close();
      await server.stop();
    }
  });
});
