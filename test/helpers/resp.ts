/** The Redis protocol for tests: commands as RESP arrays, replies parsed (RESP2 and RESP3), one-shot commands. */
import { connect } from 'node:net';

export function encodeCommand(args: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = typeof arg === 'string' ? Buffer.from(arg) : arg;
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** One RESP2/RESP3 reply at `at`, or undefined when incomplete. Maps become Map objects. */
export function parseReply(buf: Buffer, at: number): { value: unknown; end: number } | undefined {
  const lineEnd = buf.indexOf('\r\n', at);
  if (lineEnd === -1) return undefined;
  const type = String.fromCharCode(buf[at]!);
  const line = buf.toString('utf8', at + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case ',':
      return { value: Number(line), end: next };
    case '#':
      return { value: line === 't', end: next };
    case '_':
      return { value: null, end: next };
    case '$':
    case '=': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buf.length < next + length + 2) return undefined;
      return { value: buf.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*':
    case '%': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: unknown[] = [];
      let end = next;
      for (let i = 0; i < (type === '%' ? 2 * count : count); i++) {
        const item = parseReply(buf, end);
        if (item === undefined) return undefined;
        items.push(item.value);
        end = item.end;
      }
      if (type === '*') return { value: items, end };
      const map = new Map<unknown, unknown>();
      for (let i = 0; i < items.length; i += 2) map.set(items[i], items[i + 1]);
      return { value: map, end };
    }
    default:
      throw new Error(`unexpected reply type ${JSON.stringify(type)}`);
  }
}

/**
 * One command to the server on 127.0.0.1:`port` over a connection of its own, and its reply; an
 * error reply rejects. What polling a starting node needs, without a redis-cli process per poll.
 */
export function ask(port: number, ...args: string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = Buffer.alloc(0);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no reply from port ${port} in 10 s`)));
    socket.once('connect', () => socket.write(encodeCommand(args)));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const reply = parseReply(received, 0);
      if (reply === undefined) return;
      socket.destroy();
      if (reply.value instanceof Error) reject(reply.value);
      else resolve(reply.value);
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`port ${port} closed the connection before its reply`)));
  });
}
