import type { Writable } from 'node:stream';

/** Writes to a stream, waiting for 'drain' when its buffer is full, so memory stays bounded. */
export async function writeAll(stream: Writable, text: string): Promise<void> {
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

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** A plain-text table: the first `leftColumns` columns left-aligned, the rest right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], leftColumns: number): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}
