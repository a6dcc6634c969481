import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { xorshift32 } from './helpers/data.js';
import { RawClient, encodeCommand } from './helpers/resp.js';
import { startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

const FRAMES = 3000;
const CONCURRENCY = 32;

/** Hostile frames, one per connection: each kind a way a client (or an attacker) can get RESP wrong. */
function hostileFrame(random: () => number, i: number): Buffer {
  const pick = (n: number): number => Math.floor(random() * n);
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => pick(256)));
  const valid = encodeCommand(['BF.MADD', 'fuzz', `http://f/${i}`, `http://g/${i}`]);
  switch (i % 14) {
    case 0:
      return Buffer.from(`*${-pick(1e9)}\r\n*1\r\n$${-1 - pick(1e9)}\r\n`);
    case 1:
      return Buffer.from(`*${'9'.repeat(1 + pick(30))}\r\n`);
    case 2:
      return Buffer.from(`*1\r\n$${'9'.repeat(1 + pick(30))}\r\n`);
    case 3:
      return valid.subarray(0, pick(valid.length));
    case 4:
      return Buffer.concat([
        Buffer.from('*2\r\n$4\r\nECHO\r\n$5\r\n'),
        Buffer.from([0, 0, 0, 0, 0]),
        Buffer.from('\r\n'),
        bytes(pick(64)),
      ]);
    case 5:
      return Buffer.from('*1\r\n'.repeat(10_000 + pick(100_000)));
    case 6:
      return Buffer.alloc(1024 * 1024 + pick(1024), 'A');
    case 7:
      return bytes(1 + pick(4096));
    case 8:
      return Buffer.concat([
        Buffer.from('*3\r\n$6\r\nBF.ADD\r\n$4\r\nfuzz\r\n$'),
        Buffer.from(String(pick(100))),
        Buffer.from('\r\n'),
        bytes(pick(200)),
      ]);
    case 9:
      return encodeCommand(['BF.ADD', 'fuzz', bytes(1 + pick(40))]);
    case 10:
      return encodeCommand([bytes(1 + pick(20)), bytes(pick(20))]);
    case 11:
      return Buffer.concat([Buffer.from('*1\r\n$3\r\nfoo'), Buffer.from([pick(256), pick(256)])]);
    case 12:
      return Buffer.from(`${'BF.ADD "k\r\n'.repeat(1 + pick(3))}PING "unbalanced\r\n`);
    default:
      return encodeCommand([
        'BF.INSERT',
        'fuzz',
        ...Array.from({ length: pick(6) }, () => (random() < 0.5 ? bytes(pick(12)).toString('latin1') : 'ITEMS')),
      ]);
  }
}

/** Sends one frame on a fresh connection, half-closes, and collects whatever comes back. */
function throwFrame(port: number, frame: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.end(frame));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.setTimeout(10_000, () => socket.destroy());
  });
}

describe('seenstore serve under hostile input', () => {
  it(`survives ${FRAMES} malformed frames and still answers PING`, async () => {
    const server = await startServer(join(tempDir(), 'store'), ['--idle-timeout', '5']);
    const words = xorshift32(20);
    const random = (): number => words() / 2 ** 32;
    const frames = Array.from({ length: FRAMES }, (_, i) => hostileFrame(random, i));
    let protocolErrors = 0;
    for (let start = 0; start < frames.length; start += CONCURRENCY) {
      const replies = await Promise.all(
        frames.slice(start, start + CONCURRENCY).map((frame) => throwFrame(server.port, frame)),
      );
      for (const reply of replies) {
        const text = reply.toString('latin1');
        assert.doesNotMatch(text, /\n\s+at |\.js:\d+/, 'no stack trace ever reaches a client');
        if (text.includes('-ERR Protocol error: ')) protocolErrors++;
      }
      assert.equal(server.child.exitCode, null, `the server is alive after frame ${start + CONCURRENCY}`);
    }
    assert.ok(protocolErrors > FRAMES / 3, `${protocolErrors} protocol errors`);
    const client = await RawClient.connect(server.port);
    assert.equal(await client.command('PING'), 'PONG');
    assert.equal(await client.command('BF.ADD', 'after', 'http://after-the-fuzz/'), 1);
    client.close();
    assert.equal((await server.stop()).code, 0);
  });
});
