import { isUtf8 } from 'node:buffer';
import { SeenStoreError } from '../errors.js';
import { Kernel } from '../hash/kernel.js';
import type { Utf8Keys } from '../hash/xxhash.js';
import { holdsControlBytes, isAsciiSpace, shapedBytes, urlKeyRange } from '../url/url-shape.js';
import { markCheckedUrlKeys } from '../url/url-keys.js';

export type InvalidReason =
  | 'invalid UTF-8'
  | 'line too long'
  | 'not a usable URL'
  | 'not an absolute URL (scheme://host)'
  | typeof CONTROL_REASON;

/** Why a line of URL keys with a control character (U+0000-U+001F, U+007F) is invalid. */
export const CONTROL_REASON = 'not a usable URL (a control character in it)';

export interface LineSink {
  /**
   * A non-empty line, CR and BOM removed, valid UTF-8. `lineNo` counts from 1 over all lines.
   * `controlFree`: the line surely holds no control character (the kernel scanned its block);
   * false when that is not known.
   */
  line(text: string, lineNo: number, controlFree: boolean): void;
  invalid(lineNo: number, reason: InvalidReason): void;
}

const NEWLINE = 0x0a;
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);

/**
 * Splits a byte stream into blocks of whole lines without holding more than one line plus one
 * chunk in memory. Handles a UTF-8 byte-order mark at the start and a last line without a newline;
 * a line over `maxLineBytes` is reported and skipped without being buffered. Subclasses split the
 * blocks into lines (CRLF, empty lines, invalid UTF-8).
 */
abstract class BlockSplitter {
  protected readonly maxLineBytes: number;
  readonly #onInvalid: (lineNo: number, reason: InvalidReason) => void;
  #carry: Buffer = EMPTY;
  #skippingLongLine = false;
  #lineNo = 0;
  #atStart = true;
  #encodingChecked = false;

  constructor(maxLineBytes: number, onInvalid: (lineNo: number, reason: InvalidReason) => void) {
    this.maxLineBytes = maxLineBytes;
    this.#onInvalid = onInvalid;
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
    if (this.#carry.length > 0) {
      // Only the line cut at the last chunk's end is joined: copying the whole chunk behind it
      // (Buffer.concat) cost filter-new a copy and a fresh buffer per read.
      const nl = data.indexOf(NEWLINE);
      if (nl < 0 || !this.#encodingChecked) {
        data = Buffer.concat([this.#carry, data]);
      } else {
        const joined = Buffer.concat([this.#carry, data.subarray(0, nl)]);
        this.#carry = EMPTY;
        this.#complete(joined);
        data = data.subarray(nl + 1);
      }
    }
    if (!this.#encodingChecked && data.length >= 2) {
      this.#encodingChecked = true;
      refuseUtf16(data);
    }
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

  /**
   * `block` holds whole lines separated by newlines, without the final newline; the first is line
   * `firstLineNo`. Returns how many lines it held (empty ones included).
   */
  protected abstract lines(block: Buffer, firstLineNo: number): number;

  protected invalid(lineNo: number, reason: InvalidReason): void {
    this.#onInvalid(lineNo, reason);
  }

  #keepPartial(partial: Buffer): void {
    if (partial.length > this.maxLineBytes + 1) {
      this.#lineNo++;
      this.invalid(this.#lineNo, 'line too long');
      this.#carry = EMPTY;
      this.#skippingLongLine = true;
      return;
    }
    this.#carry = Buffer.from(partial);
  }

  #complete(block: Buffer): void {
    if (this.#atStart) {
      this.#atStart = false;
      if (block.length >= 3 && block[0] === 0xef && block[1] === 0xbb && block[2] === 0xbf) block = block.subarray(3);
    }
    this.#lineNo += this.lines(block, this.#lineNo + 1);
  }
}

/**
 * A UTF-16 file (with its byte-order mark) would split into lines full of NUL bytes, every one
 * accepted as a URL: the whole input is refused at line 1, before anything of it is used, whatever
 * --on-invalid says. A UTF-8 byte-order mark is common (Windows editors write it) and is removed.
 */
function refuseUtf16(start: Buffer): void {
  const little = start[0] === 0xff && start[1] === 0xfe;
  const big = start[0] === 0xfe && start[1] === 0xff;
  if (!little && !big) return;
  throw new SeenStoreError(
    'INVALID_URL',
    `line 1: the input is UTF-16${little ? 'LE' : 'BE'} (it starts with a byte-order mark); seenstore reads UTF-8 lines: convert it first (iconv -f UTF-16 -t UTF-8); nothing of it was recorded`,
  );
}

/** Bytes a batch starts with room for; more are added as lines come. */
const BATCH_BYTES_MIN = 1 << 20;
/** Bytes LineSplitter's scan starts with room for: a block of input (a read, 256 KiB) and its newline. */
const SCAN_BYTES_MIN = (1 << 18) + 64;

/**
 * A batch's bytes in the memory of a kernel of its own (kernel.wat), where its control-character
 * scan runs over them in place: no copy beside the one that puts a block of input there. The memory
 * is private (JavaScript copies into it fastest) and grows in place, which detaches the views taken
 * of it before: only the batcher that fills it holds one then (the ring's promise).
 */
class KernelBytes {
  readonly #kernel: Kernel;
  /** Where the bytes start in the kernel's memory (its scratch area, which nothing else uses). */
  readonly #at: number;
  #bytes: Buffer;

  constructor(byteLength: number) {
    this.#kernel = new Kernel(false, byteLength);
    this.#at = this.#kernel.scratch(byteLength);
    this.#bytes = this.#view(byteLength);
  }

  get bytes(): Buffer {
    return this.#bytes;
  }

  /** Room for `byteLength` bytes in all, those held kept; renews `bytes`. */
  reserve(byteLength: number): void {
    if (byteLength > this.#bytes.length) this.#bytes = this.#view(Math.max(byteLength, 2 * this.#bytes.length));
  }

  /** Where the first control byte of bytes[from, to) that ends no line is (kernel.wat controlAt); `to` when none. */
  controlAt(from: number, to: number): number {
    return this.#kernel.controlAt(this.#at + from, this.#at + to) - this.#at;
  }

  #view(byteLength: number): Buffer {
    this.#kernel.scratch(byteLength);
    return Buffer.from(this.#kernel.buffer, this.#at, byteLength);
  }
}

/**
 * Lines as strings, for a LineSink. Each block is copied into a kernel's memory and scanned for
 * control characters in one call (KernelBytes): the lines of a block without one are said to be
 * free of them, so that the sink need not look at every character of each (a loop per line cost
 * `add` ~100-250 ns per URL; the block's copy and scan cost a few).
 */
export class LineSplitter extends BlockSplitter {
  readonly #sink: LineSink;
  readonly #scan = new KernelBytes(SCAN_BYTES_MIN);

  constructor(sink: LineSink, maxLineBytes: number) {
    super(maxLineBytes, (lineNo, reason) => sink.invalid(lineNo, reason));
    this.#sink = sink;
  }

  protected lines(block: Buffer, firstLineNo: number): number {
    let lineNo = firstLineNo;
    const controlFree = this.#controlFree(block);
    if (isUtf8(block)) {
      for (const line of block.toString('utf8').split('\n')) this.#emit(line, lineNo++, controlFree);
      return lineNo - firstLineNo;
    }
    let start = 0;
    while (start <= block.length) {
      let nl = block.indexOf(NEWLINE, start);
      if (nl < 0) nl = block.length;
      const bytes = block.subarray(start, nl);
      if (isUtf8(bytes)) this.#emit(bytes.toString('utf8'), lineNo, controlFree);
      else this.invalid(lineNo, 'invalid UTF-8');
      lineNo++;
      start = nl + 1;
    }
    return lineNo - firstLineNo;
  }

  /** Whether the block's lines hold no control character (their line ends aside). */
  #controlFree(block: Buffer): boolean {
    this.#scan.reserve(block.length + 1);
    const bytes = this.#scan.bytes;
    block.copy(bytes, 0);
    bytes[block.length] = NEWLINE;
    return this.#scan.controlAt(0, block.length + 1) === block.length + 1;
  }

  #emit(raw: string, lineNo: number, controlFree: boolean): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.length === 0) return;
    if (line.length * 3 > this.maxLineBytes && Buffer.byteLength(line, 'utf8') > this.maxLineBytes) {
      this.invalid(lineNo, 'line too long');
      return;
    }
    this.#sink.line(line, lineNo, controlFree);
  }
}

/**
 * Lines as UTF-8 bytes, never as strings: each block of whole lines is copied once into the
 * current batch's buffer and its lines are recorded as [start, end) ranges there (CR and empty
 * lines left out, invalid UTF-8 reported), ready for Scope.addIfAbsentUtf8. The same lines as
 * LineSplitter, byte for byte; with `urlKeys`, each trimmed, and those that do not start like
 * an absolute URL, or hold a control character, reported invalid, as toKey's mode `url` decides.
 * The buffer lives in a kernel's memory (KernelBytes) so that one vector pass over each block
 * finds where its control characters are: the lines before the first need no look of their own
 * (a loop over every byte in JavaScript cost filter-new 10-30 % more CPU).
 */
export class Utf8LineBatcher extends BlockSplitter {
  /** Keys are URLs (normalisation `url`): lines are trimmed, must start like `scheme://host` and hold no control character. */
  readonly #urlKeys: boolean;
  readonly #trimmed = new Uint32Array(2);
  #buffer: KernelBytes;
  #used = 0;
  #ranges: Uint32Array = new Uint32Array(2 * 16_384);
  #count = 0;
  /** Batch buffers handed over in turn and filled again. */
  readonly #ring: { buffer: KernelBytes; ranges: Uint32Array }[];
  #slot = 0;

  /**
   * The buffers of a batch are filled again once `reuse` (at least 1) more batches were taken: the
   * caller guarantees that when it takes a batch, nothing holds any batch taken `reuse` or more
   * takes before. A fresh megabyte per batch was most of filter-new's garbage collection.
   */
  constructor(
    maxLineBytes: number,
    onInvalid: (lineNo: number, reason: InvalidReason) => void,
    urlKeys: boolean,
    reuse: number,
  ) {
    super(maxLineBytes, onInvalid);
    if (!Number.isSafeInteger(reuse) || reuse < 1)
      throw new TypeError(`reuse must be a whole number of batches, at least 1, got ${reuse}`);
    this.#urlKeys = urlKeys;
    this.#buffer = new KernelBytes(BATCH_BYTES_MIN);
    this.#ring = [{ buffer: this.#buffer, ranges: this.#ranges }];
    for (let i = 0; i < reuse; i++)
      this.#ring.push({ buffer: new KernelBytes(BATCH_BYTES_MIN), ranges: new Uint32Array(this.#ranges.length) });
  }

  /** Lines in the current batch. */
  get count(): number {
    return this.#count;
  }

  /** Hands over the current batch (its buffers are reused only as the constructor's `reuse` says) and starts an empty one. */
  take(): { bytes: Buffer; ranges: Uint32Array; count: number } {
    const cut = {
      bytes: this.#buffer.bytes.subarray(0, this.#used),
      ranges: this.#ranges.subarray(0, 2 * this.#count),
      count: this.#count,
    };
    const batch = this.#urlKeys ? markCheckedUrlKeys(cut) : cut;
    // The ranges may have grown while this batch was filled: the ring keeps the grown ones.
    this.#ring[this.#slot] = { buffer: this.#buffer, ranges: this.#ranges };
    this.#slot = (this.#slot + 1) % this.#ring.length;
    ({ buffer: this.#buffer, ranges: this.#ranges } = this.#ring[this.#slot]!);
    this.#used = 0;
    this.#count = 0;
    return batch;
  }

  size(batch: Utf8Keys): number {
    return batch.count;
  }

  /** Lines `start` up to `end` of a batch taken, in its buffers (checked URL keys stay marked so). */
  part(batch: Utf8Keys, start: number, end: number): Utf8Keys {
    const part = { bytes: batch.bytes, ranges: batch.ranges.subarray(2 * start, 2 * end), count: end - start };
    return this.#urlKeys ? markCheckedUrlKeys(part) : part;
  }

  protected lines(block: Buffer, firstLineNo: number): number {
    const at = this.#used;
    this.#buffer.reserve(at + block.length + 1);
    const bytes = this.#buffer.bytes;
    block.copy(bytes, at);
    bytes[at + block.length] = NEWLINE;
    const valid = isUtf8(block);
    const stop = at + block.length;
    // The next control character at or after the line's start: lines that end before it hold none.
    let control = this.#urlKeys ? this.#buffer.controlAt(at, stop + 1) : stop + 1;
    let lineNo = firstLineNo;
    for (let start = at; start <= stop; lineNo++) {
      const nl = bytes.indexOf(NEWLINE, start);
      let end = nl;
      if (end > start && bytes[end - 1] === CR) end--;
      if (end > start) {
        if (!valid && !isUtf8(bytes.subarray(start, end))) this.invalid(lineNo, 'invalid UTF-8');
        else if (end - start > this.maxLineBytes) this.invalid(lineNo, 'line too long');
        else if (!this.#urlKeys) this.#add(start, end);
        else this.#addUrl(bytes, start, end, lineNo, control < nl);
      }
      if (control < nl) control = this.#buffer.controlAt(nl + 1, stop + 1);
      start = nl + 1;
    }
    this.#used = stop + 1;
    return lineNo - firstLineNo;
  }

  /**
   * A URL key: trimmed, and added only when it starts like an absolute URL (the usual key needs no
   * trim) and, when the line has one (`control`), holds no control character once trimmed.
   */
  #addUrl(bytes: Buffer, start: number, end: number, lineNo: number, control: boolean): void {
    const plain = !isAsciiSpace(bytes[start]!) && !isAsciiSpace(bytes[end - 1]!);
    if (!(plain ? shapedBytes(bytes, start, end) : urlKeyRange(bytes, start, end, this.#trimmed))) {
      this.invalid(lineNo, 'not an absolute URL (scheme://host)');
      return;
    }
    const keyStart = plain ? start : this.#trimmed[0]!;
    const keyEnd = plain ? end : this.#trimmed[1]!;
    if (control && holdsControlBytes(bytes, keyStart, keyEnd)) this.invalid(lineNo, CONTROL_REASON);
    else this.#add(keyStart, keyEnd);
  }

  #add(start: number, end: number): void {
    if (2 * this.#count + 2 > this.#ranges.length) {
      const grown = new Uint32Array(this.#ranges.length * 2);
      grown.set(this.#ranges);
      this.#ranges = grown;
    }
    this.#ranges[2 * this.#count] = start;
    this.#ranges[2 * this.#count + 1] = end;
    this.#count++;
  }
}
