import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { AuthThrottle } from '../src/server/auth-throttle.js';
import { createLogger } from '../src/server/logger.js';
import { openServedStore } from '../src/server/store-spec.js';
import { UrlFrontierServer } from '../src/urlfrontier/server.js';
import { memoryStore } from './helpers/memory.js';
import { tempDir } from './helpers/tmp.js';
import { discovered, FrontierClient, known } from './helpers/urlfrontier.js';

const HOSTS = 20;
const PAGES_PER_HOST = 5;
const DELAY_S = 1;
const TAKERS = 3;

/** 20 hosts (ports of 127.0.0.1), each logging the URL and time of every request it answers. */
async function startHosts(): Promise<{ origins: string[]; log: Map<string, { url: string; at: number }[]> }> {
  const log = new Map<string, { url: string; at: number }[]>();
  const servers: Server[] = [];
  for (let i = 0; i < HOSTS; i++) {
    const server = createServer((request, response) => {
      const host = request.headers.host!;
      const at = performance.now();
      log.set(host, [...(log.get(host) ?? []), { url: `http://${host}${request.url}`, at }]);
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>page</body></html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }
  after(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));
  return { origins: servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`), log };
}

/**
 * A crawler: GetURLs, fetch what it handed out at once (one fetcher per URL), report each done
 * with a known item, until the crawl is empty. `handed` gets the time each URL was handed out.
 */
async function taker(client: FrontierClient, handed: Map<string, number>): Promise<void> {
  for (;;) {
    // The take happens on the server somewhere between asking and the stream's end: the lag of a
    // fetch is counted from the ask, so that it is never shorter than the fetch's lag from the take.
    const asked = performance.now();
    const urls = await client.get({ max_urls_per_queue: 1, delay_requestable: 60 });
    for (const info of urls) handed.set(info.url, asked);
    await Promise.all(urls.map(async (info) => (await fetch(info.url)).text()));
    if (urls.length > 0) await client.put(urls.map((info) => known(info.url, 0)));
    if (urls.length > 0) continue;
    if ((await client.call<{ value: number }>('CountURLs', {})).value === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A crawl of 20 local hosts by three takers over gRPC, with a delay of 1 s per host: the hosts' own
 * request logs show no host hit twice within its delay, and the crawl finishes at the rate the
 * delays allow (all hosts at once), not one host at a time. Real time on purpose: the crawl is the
 * thing measured.
 */
const LMDB_ROOT = tempDir();
const LOCATIONS: readonly { readonly name: string; readonly location: () => string; readonly skip?: string }[] = [
  { name: 'memory', location: () => memoryStore('urlfrontier-polite') },
  // Stores in one directory removed when the file ends, after every server and store is closed.
  { name: 'lmdb', location: () => mkdtempSync(join(LMDB_ROOT, 'store-')) },
];

for (const { name, location, skip } of LOCATIONS) {
  describe(`URLFrontier politeness on a crawl of ${HOSTS} hosts (${name})`, {
    ...(skip === undefined ? {} : { skip }),
  }, () => {
    test(`${TAKERS} takers: no host is hit twice within ${DELAY_S} s, and the hosts are crawled side by side`, async () => {
      const { origins, log } = await startHosts();
      const handed = new Map<string, number>();
      const store = await openServedStore(location(), {}, false);
      const server = new UrlFrontierServer(store, {
        port: 0,
        bind: '127.0.0.1',
        scopeOptions: { keys: 'raw' },
        logger: createLogger(true, () => undefined),
        authThrottle: new AuthThrottle(),
      });
      await server.start();
      const clients = Array.from({ length: TAKERS }, () => new FrontierClient(server.port));
      try {
        await clients[0]!.call('SetDelay', { key: '', delay_requestable: DELAY_S });
        const urls = origins.flatMap((origin) =>
          Array.from({ length: PAGES_PER_HOST }, (_, p) => `${origin}/page/${p}`),
        );
        assert.ok((await clients[0]!.put(urls.map((url) => discovered(url)))).every((ack) => ack.status === 'OK'));
        const started = performance.now();
        await Promise.all(clients.map((client) => taker(client, handed)));
        const seconds = (performance.now() - started) / 1000;
        assert.equal(
          [...log.values()].reduce((sum, times) => sum + times.length, 0),
          urls.length,
          'every page fetched once',
        );
        // Judged from the events' own times, whatever the machine's speed: a request reaches its host
        // some time after GetURLs handed its URL out, and the next take of the host comes at least
        // the delay after that take, which came after the ask (handed). So two requests to one host
        // are at least the delay apart less the earlier one's own lag from its ask.
        for (const requests of log.values()) {
          for (let i = 1; i < requests.length; i++) {
            const earlier = requests[i - 1]!;
            const lagMs = earlier.at - handed.get(earlier.url)!;
            const apartMs = requests[i]!.at - earlier.at;
            assert.ok(
              apartMs >= DELAY_S * 1000 - lagMs,
              `two requests to one host ${apartMs.toFixed(0)} ms apart (delay ${DELAY_S} s, the earlier fetch's lag ${lagMs.toFixed(0)} ms)`,
            );
          }
        }
        // Side by side: far faster than one host at a time (a bound that a slow machine does not reach).
        const fastestS = (PAGES_PER_HOST - 1) * DELAY_S;
        assert.ok(
          seconds < (HOSTS * fastestS) / 2,
          `${seconds.toFixed(1)} s for a crawl the delays allow in ${fastestS} s (one host at a time: ${HOSTS * fastestS} s)`,
        );
      } finally {
        clients.forEach((client) => client.close());
        await server.stop();
        await store.close();
      }
    });
  });
}
