import { readlinkSync } from 'node:fs';

let readable = true;

/**
 * Linux's `/proc/self/fd` link of a descriptor: the path of its file, with ` (deleted)` appended
 * once that file was unlinked (a rename over it included); undefined where it cannot be read.
 * Unlike a `stat`, reading it does not read the file's times: on kernels with fine-grained
 * timestamps (6.13 on) a file whose times were read takes a new mtime at its next write, and the
 * `fdatasync` after that write costs ~40 µs more here (docs/benchmarks.md, "Issue 29: stop 38").
 */
export function fdLink(fd: number): string | undefined {
  if (!readable) return undefined;
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    readable = false;
    return undefined;
  }
}
