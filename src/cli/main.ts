#!/usr/bin/env node
import { CommanderError } from 'commander';
import { SeenStoreError, asStoreError } from '../errors.js';
import { signalExitCode } from './interrupt.js';
import { stdoutErrorsClaimed } from './delivered-output.js';
import { buildProgram } from './program.js';

/** Any failure as a SeenStoreError: a missing file is NOT_FOUND, a command-line mistake USAGE. */
function typedError(error: unknown): SeenStoreError {
  if (error instanceof SeenStoreError) return error;
  if (error instanceof CommanderError) {
    // Commander's message: "error: unknown option '--bogus'\n(Did you mean --batch-size?)".
    const message = error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
    return new SeenStoreError('USAGE', message, { cause: error });
  }
  const errno = error as { code?: string; path?: string } | null;
  if (errno?.code === 'ENOENT' && typeof errno.path === 'string')
    return new SeenStoreError('NOT_FOUND', `no such file: ${errno.path}`, { cause: error });
  return asStoreError(error, 'seenstore');
}

/**
 * Turns any failure into one line on stderr (with --json, one JSON object: code, exitCode,
 * message) and a documented exit code (docs/errors.md).
 */
function fail(error: unknown, options: { debug: boolean; json: boolean }): never {
  const typed = typedError(error);
  const exitCode = typed.code === 'INTERRUPTED' ? (signalExitCode() ?? typed.exitCode) : typed.exitCode;
  // When a page write fails with an errno (ENOSPC), LMDB's C code has already printed "Write error:
  // ..." to stderr itself, without a newline; nothing in JavaScript can hold that back. Its error
  // then names the page ("Attempting to write page"): start this line on a line of its own.
  const afterLmdbLine = /Attempting to write page/.test(typed.message) ? '\n' : '';
  const line = options.json
    ? JSON.stringify({ code: typed.code, exitCode, message: typed.message })
    : `seenstore: error ${typed.code}: ${typed.message}`;
  process.stderr.write(`${afterLmdbLine}${line}\n`);
  if (options.debug && error instanceof Error) process.stderr.write(`${error.stack ?? ''}\n`);
  process.exit(exitCode);
}

async function main(): Promise<void> {
  const options = { debug: process.argv.includes('--debug'), json: process.argv.includes('--json') };
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    // A delivering command (filter-new, frontier push) handles its output's errors at each write.
    if (stdoutErrorsClaimed()) return;
    if (error.code === 'EPIPE') process.exit(0);
    fail(error, options);
  });
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (error) {
    // --help and --version end commander's parse with an "error" of exit code 0.
    if (error instanceof CommanderError && error.exitCode === 0) process.exit(0);
    // No command at all: commander has printed the help on stderr; say what is missing under it.
    if (error instanceof CommanderError && error.code === 'commander.help')
      fail(new SeenStoreError('USAGE', 'a command is needed (seenstore --help lists them)'), options);
    fail(error, options);
  }
}

void main();
