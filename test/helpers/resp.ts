/** The Redis protocol for tests: commands as RESP arrays, replies parsed (RESP2 and RESP3), one-shot commands. */
import { connect, type Socket } from 'node:net';

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
 * A minimal RESP client for tests that need raw bytes on the wire: send anything, read replies
 * as parsed values (errors as Error, RESP3 types included).
 */
export class RawClient {
  readonly socket: Socket;
  #buffer = Buffer.alloc(0);
  #waiters: (() => void)[] = [];
  #closed = false;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#wake();
    });
    socket.on('close', () => {
      this.#closed = true;
      this.#wake();
    });
    socket.on('error', () => undefined);
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Sends one command as a RESP array of bulk strings. */
  send(...args: (string | Buffer)[]): void {
    this.write(encodeCommand(args));
  }

  async command(...args: (string | Buffer)[]): Promise<unknown> {
    this.send(...args);
    return this.read();
  }

  /** The next reply; rejects if the connection closes first. */
  async read(): Promise<unknown> {
    for (;;) {
      const parsed = parseReply(this.#buffer, 0);
      if (parsed !== undefined) {
        this.#buffer = this.#buffer.subarray(parsed.end);
        return parsed.value;
      }
      if (this.#closed) throw new Error('connection closed');
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Resolves once the server has closed the connection. */
  async waitClosed(): Promise<void> {
    while (!this.#closed) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  close(): void {
    this.socket.destroy();
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }
}

/**
 * One command to the server on 127.0.0.1:`port` over a connection of its own, and its reply; an
 * error reply rejects, and so does a server that does not answer in 10 s (a paused node). What
 * polling a starting node needs, without a redis-cli process per poll.
 */
export async function ask(port: number, ...args: string[]): Promise<unknown> {
  const client = await RawClient.connect(port);
  client.socket.setTimeout(10_000, () => client.close());
  try {
    const reply = await client.command(...args);
    if (reply instanceof Error) throw reply;
    return reply;
  } finally {
    client.close();
  }
}

/**
 * `ask`'s reply as text, or '' while the node cannot answer (starting, loading, paused, killed, or
 * answering with an error): what a poll of a node's state compares with.
 */
export async function replyText(port: number, ...args: string[]): Promise<string> {
  try {
    return String(await ask(port, ...args));
  } catch {
    return '';
  }
}
