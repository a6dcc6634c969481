import type { Writable } from 'node:stream';

/** Writes to a stream, waiting for 'drain' when its buffer is full, so memory stays bounded. */
export async function writeAll(stream: Writable, text: string | Uint8Array): Promise<void> {
  if (text.length === 0) return;
  if (stream.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const onDrain = (): void => {
      stream.off('error', onError);
      resolve();
    };
    const onError = (error: Error): void => {
      stream.off('drain', onDrain);
      reject(error);
    };
    stream.once('drain', onDrain);
    stream.once('error', onError);
  });
}

/** A line on stderr that rewrites itself, only when stderr is a terminal. */
export class Progress {
  readonly #enabled: boolean;
  readonly #intervalMs: number;
  #lastMs = 0;
  #shown = false;

  constructor(enabled: boolean, intervalMs = 500) {
    this.#enabled = enabled && process.stderr.isTTY === true;
    this.#intervalMs = intervalMs;
  }

  update(render: () => string): void {
    if (!this.#enabled) return;
    const now = Date.now();
    if (now - this.#lastMs < this.#intervalMs) return;
    this.#lastMs = now;
    this.#shown = true;
    process.stderr.write(`\r\x1b[K${render()}`);
  }

  done(): void {
    if (this.#shown) process.stderr.write('\r\x1b[K');
    this.#shown = false;
  }
}

/**
 * The progress of a command that reads URLs, on a terminal: lines read, their rate, the command's
 * own count (`extra`: new, seen, ...), and the percentage of the input when it is a file of known
 * size. Rendered at most twice a second; costs nothing when stderr is not a terminal.
 */
export class InputProgress {
  readonly #line = new Progress(true);
  readonly #label: string;
  readonly #totalBytes: number | undefined;
  readonly #extra: () => string;
  readonly #startMs = Date.now();

  constructor(label: string, totalBytes: number | undefined, extra: () => string) {
    this.#label = label;
    this.#totalBytes = totalBytes;
    this.#extra = extra;
  }

  update(linesRead: number, bytesRead: number): void {
    this.#line.update(() => {
      const seconds = Math.max((Date.now() - this.#startMs) / 1000, 0.001);
      const parts = [
        `${formatCount(linesRead)} lines read (${formatCount(Math.round(linesRead / seconds))}/s)`,
        this.#extra(),
      ];
      if (this.#totalBytes !== undefined && this.#totalBytes > 0)
        parts.push(`${Math.min(100, (100 * bytesRead) / this.#totalBytes).toFixed(1)}%`);
      return `${this.#label}: ${parts.join(', ')}`;
    });
  }

  done(): void {
    this.#line.done();
  }
}

/**
 * The text summary a command that reads URLs ends with: `read 3, new 2, already seen 1, invalid 0
 * in 0.01 s` (fields in the order given; `seen` reads "already seen").
 */
export function summaryText(counts: Readonly<Record<string, number>>, elapsedMs: number): string {
  const fields = Object.entries(counts).map(
    ([name, n]) => `${name === 'seen' ? 'already seen' : name} ${formatCount(n)}`,
  );
  return `${fields.join(', ')} in ${(elapsedMs / 1000).toFixed(2)} s`;
}

/** The counts without `field` when it is 0 (a summary mentions redelivered URLs only when there were some). */
export function withoutZero(counts: Readonly<Record<string, number>>, field: string): Record<string, number> {
  if (counts[field] !== 0) return { ...counts };
  const { [field]: _zero, ...rest } = counts;
  return rest;
}

export function formatCount(n: number): string {
  // Integers by hand: the first toLocaleString of a process loads ICU's number formats, 20 ms
  // of a one-URL command's 300. Same text as toLocaleString('en-US') (test/lines.test.ts).
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ',');
  return n < 0 ? `-${digits}` : digits;
}

/** A plain-text table: the first `leftColumns` columns left-aligned, the rest right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], leftColumns: number): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}
