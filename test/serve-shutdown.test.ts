import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';
import { RawClient } from './helpers/resp.js';
import { startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

/**
 * Issue 32: SIGTERM under load. 32 clients pipeline BF.MADD / BF.ADD / SEEN.ENQUEUE as fast as
 * they get replies; SIGTERM once each has some acknowledged. `serve` must exit 0 within
 * STOP_BOUND_MS (in-flight batches finish, every connection's end is sent, and a client that
 * does not close is dropped after CLOSE_LINGER_MS), and every acknowledged URL is in the store.
 */
const CLIENTS = 32;
const PIPELINE = 8;
const STOP_BOUND_MS = 10_000;
const quiet = { onWarning: () => {} };

interface Load {
  /** URLs whose command was answered without an error. */
  readonly acknowledged: string[];
  stop(): void;
  done: Promise<void>;
}

function load(clients: RawClient[]): Load {
  const acknowledged: string[] = [];
  let running = true;
  const one = async (client: RawClient, c: number): Promise<void> => {
    for (let round = 0; running; round++) {
      const sent: string[][] = [];
      for (let i = 0; i < PIPELINE; i++) {
        const base = `http://c${c}.example/${round}/${i}`;
        const urls = i % 3 === 0 ? [base] : [base, `${base}/a`, `${base}/b`];
        const verb = i % 3 === 0 ? 'BF.ADD' : i % 3 === 1 ? 'BF.MADD' : 'SEEN.ENQUEUE';
        client.send(verb, `k${c % 4}`, ...urls);
        sent.push(urls);
      }
      for (const urls of sent) {
        let reply: unknown;
        try {
          reply = await client.read();
        } catch {
          return; // the server closed the connection: the rest were never acknowledged
        }
        if (!(reply instanceof Error)) acknowledged.push(...urls);
      }
    }
  };
  const done = Promise.all(clients.map((client, c) => one(client, c))).then(() => undefined);
  return {
    acknowledged,
    stop: () => {
      running = false;
    },
    done,
  };
}

async function sigtermUnderLoad(location: string): Promise<void> {
  const server = await startServer(location, ['--idle-timeout', '600']);
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => RawClient.connect(server.port)));
  const work = load(clients);
  try {
    while (work.acknowledged.length < CLIENTS * 30) await new Promise((resolve) => setTimeout(resolve, 20));
    const started = Date.now();
    // A serve that never finishes is killed, so that the test fails instead of hanging.
    const killer = setTimeout(() => server.child.kill('SIGKILL'), STOP_BOUND_MS * 2);
    const { code, signal } = await server.stop('SIGTERM').finally(() => clearTimeout(killer));
    const stopMs = Date.now() - started;
    assert.equal(signal, null, `serve was killed by ${signal}`);
    assert.equal(code, 0, server.log.join('\n'));
    assert.ok(stopMs < STOP_BOUND_MS, `SIGTERM took ${stopMs} ms`);
    assert.ok(
      server.log.some((line) => line.includes('"event":"stop"')),
      'no stop line',
    );
    work.stop();
    await work.done;
  } finally {
    work.stop();
    for (const client of clients) client.close();
  }
  const urls = work.acknowledged;
  const store = await SeenStore.open(location, quiet);
  try {
    for (let k = 0; k < 4; k++) {
      const mine = urls.filter((url) => Number(/^http:\/\/c(\d+)/.exec(url)![1]) % 4 === k);
      const held = await store.scope(`k${k}`).has(mine);
      assert.equal(held.filter((h) => !h).length, 0, `scope k${k}: acknowledged URLs missing after the restart`);
    }
  } finally {
    await store.close();
  }
}

describe('serve: SIGTERM under load', () => {
  test('LMDB: 32 pipelining clients of mixed writes; exit 0 within the bound, every acknowledged URL kept', async () => {
    await sigtermUnderLoad(join(tempDir(), 'store'));
  });

  const missing = redisMissing();
  test('Redis: the same on a single node', { skip: missing }, async () => {
    const single: RedisCluster = await startRedisCluster({ cluster: false });
    after(() => single.stop());
    await sigtermUnderLoad(single.location());
  });
});
