/**
 * An incremental RESP request parser over Buffers: multibulk requests (`*N` then N `$len` bulk
 * strings, what every client sends) and inline commands (a line of space-separated words, what
 * telnet and `redis-cli` in some modes send). Arguments are never copied: a request is the buffer
 * that holds it and a start and an end offset per argument. Bytes handed out in a request are
 * never written again (a partial request is moved into a fresh buffer, never compacted in place),
 * so a request stays valid for as long as its holder keeps it.
 */

/** One parsed request: argument i is `buf[offsets[2i]]` up to `offsets[2i + 1]`. */
export interface Request {
  readonly buf: Buffer;
  readonly offsets: Uint32Array;
  readonly argc: number;
}

export interface ParserLimits {
  /** Largest bulk string, in bytes (Redis: 512 MiB; here a URL is at most 64 KiB). */
  readonly bulkBytesMax: number;
  /** Most arguments in one request. */
  readonly argsMax: number;
  /** Largest request, all of its bytes, headers included. */
  readonly requestBytesMax: number;
  /** Longest inline command line, and longest `*N` / `$N` header line. */
  readonly inlineBytesMax: number;
}

/** A frame that is not RESP: the connection answers `-ERR Protocol error: <message>` and closes. */
export class ProtocolError extends Error {}

const CR = 13;
const LF = 10;
const STAR = 42;
const DOLLAR = 36;
const MIN_BUFFER_BYTES = 16 * 1024;

/** Sentinel of readNumber: the line is not complete yet. */
const INCOMPLETE = -2;

export class RespParser {
  readonly #limits: ParserLimits;
  #buf: Buffer = Buffer.alloc(0);
  /** Start of the request being parsed (nothing before it is needed any more). */
  #start = 0;
  /** Parse position inside the current request. */
  #pos = 0;
  /** End of the valid bytes in #buf. */
  #end = 0;
  /** Whether #buf is our own buffer with room after #end (else a chunk from the socket). */
  #owned = false;
  /** Multibulk in progress: argument count (-1: at a request's start), offsets relative to #start, arguments done. */
  #argc = -1;
  #offsets = new Uint32Array(0);
  #argsDone = 0;
  /** Bytes the request in progress is known to need from #start (to size a new buffer once). */
  #neededBytes = 0;

  constructor(limits: ParserLimits) {
    this.#limits = limits;
  }

  /** Bytes received and not yet part of a complete request. */
  get pendingBytes(): number {
    return this.#end - this.#start;
  }

  /**
   * Takes the next chunk from the socket and calls `onRequest` for each complete request in order.
   * Throws ProtocolError on a malformed frame (nothing after it is parsed).
   */
  push(chunk: Buffer, onRequest: (request: Request) => void): void {
    this.#append(chunk);
    for (;;) {
      const request = this.#argc === -1 && this.#pos >= this.#end ? undefined : this.#next();
      if (request === undefined) break;
      onRequest(request);
    }
    if (this.#start === this.#end) {
      // Everything consumed: let go of the chunk (requests handed out keep their own reference).
      this.#buf = Buffer.alloc(0);
      this.#start = this.#pos = this.#end = 0;
      this.#owned = false;
    }
  }

  #append(chunk: Buffer): void {
    if (this.#start === this.#end && this.#argc === -1) {
      this.#buf = chunk;
      this.#start = this.#pos = 0;
      this.#end = chunk.length;
      this.#owned = false;
      return;
    }
    if (this.#owned && this.#buf.length - this.#end >= chunk.length) {
      chunk.copy(this.#buf, this.#end);
      this.#end += chunk.length;
      return;
    }
    const kept = this.#end - this.#start;
    const size = Math.max(MIN_BUFFER_BYTES, 2 * (kept + chunk.length), this.#neededBytes);
    const next = Buffer.allocUnsafe(Math.min(size, Math.max(this.#limits.requestBytesMax + 2, kept + chunk.length)));
    this.#buf.copy(next, 0, this.#start, this.#end);
    chunk.copy(next, kept);
    this.#pos -= this.#start;
    this.#start = 0;
    this.#end = kept + chunk.length;
    this.#buf = next;
    this.#owned = true;
  }

  /** The next complete request, or undefined when more bytes are needed. */
  #next(): Request | undefined {
    for (;;) {
      if (this.#argc === -1) {
        if (this.#pos >= this.#end) return undefined;
        if (this.#buf[this.#pos] !== STAR) {
          const request = this.#inline();
          if (request === null) continue;
          return request;
        }
        const count = this.#readNumber(this.#pos + 1, 'multibulk');
        if (count === INCOMPLETE) return undefined;
        if (count > this.#limits.argsMax) {
          throw new ProtocolError(
            `invalid multibulk length (${count} arguments, over the limit of ${this.#limits.argsMax})`,
          );
        }
        if (count <= 0) {
          // `*0` and `*-1` are empty requests: Redis skips them.
          this.#consume();
          continue;
        }
        this.#argc = count;
        this.#argsDone = 0;
        if (this.#offsets.length < 2 * count) this.#offsets = new Uint32Array(2 * count);
      }
      while (this.#argsDone < this.#argc) {
        if (this.#pos >= this.#end) return undefined;
        const marker = this.#buf[this.#pos]!;
        if (marker !== DOLLAR) throw new ProtocolError(`expected '$', got '${printable(marker)}'`);
        const lineStart = this.#pos;
        const length = this.#readNumber(this.#pos + 1, 'bulk');
        if (length === INCOMPLETE) return undefined;
        if (length < 0 || length > this.#limits.bulkBytesMax) {
          throw new ProtocolError(`invalid bulk length (${length}; the limit is ${this.#limits.bulkBytesMax} bytes)`);
        }
        const dataStart = this.#pos;
        const dataEnd = dataStart + length;
        if (dataEnd + 2 - this.#start > this.#limits.requestBytesMax) {
          throw new ProtocolError(`request over the limit of ${this.#limits.requestBytesMax} bytes`);
        }
        if (dataEnd + 2 > this.#end) {
          this.#neededBytes = dataEnd + 2 - this.#start;
          this.#pos = lineStart;
          return undefined;
        }
        if (this.#buf[dataEnd] !== CR || this.#buf[dataEnd + 1] !== LF)
          throw new ProtocolError('expected CRLF after a bulk string');
        this.#offsets[2 * this.#argsDone] = dataStart - this.#start;
        this.#offsets[2 * this.#argsDone + 1] = dataEnd - this.#start;
        this.#argsDone++;
        this.#pos = dataEnd + 2;
      }
      return this.#finish(this.#argc);
    }
  }

  /** The request from #start to #pos, its offsets made absolute in a buffer of its own view. */
  #finish(argc: number): Request {
    const buf = this.#buf.subarray(this.#start, this.#pos);
    const offsets = this.#offsets.slice(0, 2 * argc);
    this.#consume();
    return { buf, offsets, argc };
  }

  #consume(): void {
    this.#start = this.#pos;
    this.#argc = -1;
    this.#neededBytes = 0;
  }

  /**
   * Reads the digits of a `*N` or `$N` header from `at` up to CRLF, moving #pos past it; INCOMPLETE
   * when the line has not arrived yet.
   */
  #readNumber(at: number, what: 'multibulk' | 'bulk'): number {
    const buf = this.#buf;
    let i = at;
    let negative = false;
    if (i < this.#end && buf[i] === 45) {
      negative = true;
      i++;
    }
    let value = 0;
    let digits = 0;
    for (; i < this.#end; i++) {
      const c = buf[i]!;
      if (c === CR) break;
      if (c < 48 || c > 57 || digits >= 15) throw new ProtocolError(`invalid ${what} length`);
      value = value * 10 + (c - 48);
      digits++;
    }
    if (i + 1 >= this.#end) {
      if (this.#end - at > this.#limits.inlineBytesMax) throw new ProtocolError(`too big ${what} count string`);
      return INCOMPLETE;
    }
    if (buf[i + 1] !== LF || digits === 0) throw new ProtocolError(`invalid ${what} length`);
    this.#pos = i + 2;
    return negative ? -value : value;
  }

  /** An inline command (null: an empty line, skipped): one line, words split on spaces and tabs, "quoted" or 'quoted' words kept whole. */
  #inline(): Request | undefined | null {
    const buf = this.#buf;
    const newline = buf.indexOf(LF, this.#pos);
    if (newline === -1 || newline >= this.#end) {
      if (this.#end - this.#start > this.#limits.inlineBytesMax) throw new ProtocolError('too big inline request');
      return undefined;
    }
    if (newline - this.#start > this.#limits.inlineBytesMax) throw new ProtocolError('too big inline request');
    const lineEnd = newline > this.#start && buf[newline - 1] === CR ? newline - 1 : newline;
    const words: number[] = [];
    for (let i = this.#start; i < lineEnd; ) {
      const c = buf[i]!;
      if (c === 32 || c === 9) {
        i++;
        continue;
      }
      if (c === 34 || c === 39) {
        const close = buf.indexOf(c, i + 1);
        if (close === -1 || close >= lineEnd) throw new ProtocolError('unbalanced quotes in request');
        const after = close + 1;
        if (after < lineEnd && buf[after] !== 32 && buf[after] !== 9)
          throw new ProtocolError('unbalanced quotes in request');
        words.push(i + 1 - this.#start, close - this.#start);
        i = after;
        continue;
      }
      let j = i;
      while (j < lineEnd && buf[j] !== 32 && buf[j] !== 9) j++;
      words.push(i - this.#start, j - this.#start);
      i = j;
    }
    if (words.length / 2 > this.#limits.argsMax)
      throw new ProtocolError(`invalid multibulk length (over the limit of ${this.#limits.argsMax} arguments)`);
    this.#pos = newline + 1;
    if (words.length === 0) {
      // An empty line: Redis ignores it.
      this.#consume();
      return null;
    }
    const request = {
      buf: this.#buf.subarray(this.#start, this.#pos),
      offsets: Uint32Array.from(words),
      argc: words.length / 2,
    };
    this.#consume();
    return request;
  }
}

function printable(byte: number): string {
  return byte >= 32 && byte < 127 ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
}
