import { isUtf8 } from 'node:buffer';

export type InvalidReason = 'invalid UTF-8' | 'line too long' | 'not a usable URL';

export interface LineSink {
  /** A non-empty line, CR and BOM removed, valid UTF-8. `lineNo` counts from 1 over all lines. */
  line(text: string, lineNo: number): void;
  invalid(lineNo: number, reason: InvalidReason): void;
}

const NEWLINE = 0x0a;
const EMPTY = Buffer.alloc(0);

/**
 * Splits a byte stream into lines without holding more than one line plus one chunk in memory.
 * Handles CRLF, a UTF-8 byte-order mark at the start, empty lines (skipped) and a last line
 * without a newline. A line over `maxLineBytes` is reported and skipped without being buffered.
 */
export class LineSplitter {
  readonly #sink: LineSink;
  readonly #maxLineBytes: number;
  #carry: Buffer = EMPTY;
  #skippingLongLine = false;
  #lineNo = 0;
  #atStart = true;

  constructor(sink: LineSink, maxLineBytes: number) {
    this.#sink = sink;
    this.#maxLineBytes = maxLineBytes;
  }

  get linesSeen(): number {
    return this.#lineNo;
  }

  push(chunk: Buffer): void {
    let data = chunk;
    if (this.#skippingLongLine) {
      const nl = data.indexOf(NEWLINE);
      if (nl < 0) return;
      this.#skippingLongLine = false;
      data = data.subarray(nl + 1);
    }
    if (this.#carry.length > 0) data = Buffer.concat([this.#carry, data]);
    const lastNl = data.lastIndexOf(NEWLINE);
    if (lastNl < 0) {
      this.#keepPartial(data);
      return;
    }
    this.#complete(data.subarray(0, lastNl));
    this.#keepPartial(data.subarray(lastNl + 1));
  }

  /** Flushes a last line that had no newline. */
  end(): void {
    if (this.#skippingLongLine) return;
    const rest = this.#carry;
    this.#carry = EMPTY;
    if (rest.length > 0) this.#complete(rest);
  }

  #keepPartial(partial: Buffer): void {
    if (partial.length > this.#maxLineBytes + 1) {
      this.#lineNo++;
      this.#sink.invalid(this.#lineNo, 'line too long');
      this.#carry = EMPTY;
      this.#skippingLongLine = true;
      return;
    }
    this.#carry = Buffer.from(partial);
  }

  /** `block` holds whole lines separated by newlines, without the final newline. */
  #complete(block: Buffer): void {
    if (this.#atStart) {
      this.#atStart = false;
      if (block.length >= 3 && block[0] === 0xef && block[1] === 0xbb && block[2] === 0xbf) block = block.subarray(3);
    }
    if (isUtf8(block)) {
      for (const line of block.toString('utf8').split('\n')) this.#emit(line);
      return;
    }
    let start = 0;
    while (start <= block.length) {
      let nl = block.indexOf(NEWLINE, start);
      if (nl < 0) nl = block.length;
      const bytes = block.subarray(start, nl);
      if (isUtf8(bytes)) this.#emit(bytes.toString('utf8'));
      else this.#sink.invalid(++this.#lineNo, 'invalid UTF-8');
      start = nl + 1;
    }
  }

  #emit(raw: string): void {
    this.#lineNo++;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.length === 0) return;
    if (line.length * 3 > this.#maxLineBytes && Buffer.byteLength(line, 'utf8') > this.#maxLineBytes) {
      this.#sink.invalid(this.#lineNo, 'line too long');
      return;
    }
    this.#sink.line(line, this.#lineNo);
  }
}
