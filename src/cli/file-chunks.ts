import { close, open, read } from 'node:fs';
import { promisify } from 'node:util';

const openFile = promisify(open);
const readFile = promisify(read);
const closeFile = promisify(close);

/**
 * A regular file read in large chunks into two buffers used in turn, the next read under way while
 * the consumer works on the current chunk. A chunk is valid until the consumer asks for the next
 * one: it must copy what it keeps (the line splitters do). A stream's fresh buffer per read was
 * most of what `filter-new` still handed the garbage collector.
 *
 * Only for regular files: a read of a pipe would wait in the thread pool until its writer wrote.
 * `destroy()` ends the iteration at the next chunk; the file is closed (unless it is the caller's
 * descriptor) once no read is under way.
 */
export class FileChunks implements AsyncIterable<Buffer> {
  readonly #path: string | undefined;
  readonly #fd: number | undefined;
  readonly #buffers: [Buffer, Buffer];
  #destroyed = false;

  /** Reads `source`: a path, or a descriptor the caller keeps open (stdin redirected from a file). */
  constructor(source: string | number, chunkBytes: number) {
    this.#path = typeof source === 'string' ? source : undefined;
    this.#fd = typeof source === 'number' ? source : undefined;
    this.#buffers = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)];
  }

  destroy(): void {
    this.#destroyed = true;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    const fd = this.#fd ?? (await openFile(this.#path!, 'r'));
    let turn = 0;
    let pending: Promise<number> | undefined = this.#read(fd, turn);
    try {
      while (!this.#destroyed) {
        const bytes = await pending;
        pending = undefined;
        if (bytes === 0 || this.#destroyed) return;
        const chunk = this.#buffers[turn]!.subarray(0, bytes);
        turn ^= 1;
        pending = this.#read(fd, turn);
        yield chunk;
      }
    } finally {
      await pending?.catch(() => undefined);
      if (this.#fd === undefined) await closeFile(fd);
    }
  }

  /** Reads from the descriptor's current position: stdin may have been read from before. */
  #read(fd: number, turn: number): Promise<number> {
    const buffer = this.#buffers[turn]!;
    return readFile(fd, buffer, 0, buffer.length, null).then(({ bytesRead }) => bytesRead);
  }
}
