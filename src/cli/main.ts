#!/usr/bin/env node
import { CommanderError } from 'commander';
import { ERROR_CODES, SeenStoreError, asStoreError } from '../errors.js';
import { signalExitCode } from './interrupt.js';
import { buildProgram } from './program.js';

/** Turns any failure into one line on stderr and a documented exit code (docs/errors.md). */
function fail(error: unknown, debug: boolean): never {
  const errno = error as { code?: string; path?: string } | null;
  const typed =
    errno?.code === 'ENOENT' && typeof errno.path === 'string'
      ? new SeenStoreError('NOT_FOUND', `no such file: ${errno.path}`, { cause: error })
      : error instanceof SeenStoreError
        ? error
        : asStoreError(error, 'seenstore');
  // When a page write fails with an errno (ENOSPC), LMDB's C code has already printed "Write error:
  // ..." to stderr itself, without a newline; nothing in JavaScript can hold that back. Its error
  // then names the page ("Attempting to write page"): start this line on a line of its own.
  const afterLmdbLine = /Attempting to write page/.test(typed.message) ? '\n' : '';
  process.stderr.write(`${afterLmdbLine}seenstore: error ${typed.code}: ${typed.message}\n`);
  if (debug && error instanceof Error) process.stderr.write(`${error.stack ?? ''}\n`);
  process.exit(typed.code === 'INTERRUPTED' ? (signalExitCode() ?? typed.exitCode) : typed.exitCode);
}

async function main(): Promise<void> {
  const debug = process.argv.includes('--debug');
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    fail(error, debug);
  });
  const program = buildProgram().exitOverride();
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) process.exit(0);
      process.exit(ERROR_CODES.USAGE);
    }
    fail(error, debug);
  }
}

await main();
