import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SeenStoreError } from '../../errors.js';

/**
 * The seenstore Redis Function library (Redis 7 Functions): every atomic step of the Redis backend
 * is one FCALL of it on keys of one hash slot (docs/redis.md). Its Lua lives in ./lua/, one file
 * per concept, linted with luacheck (test/redis-lua.test.ts); this module joins the files into
 * the one chunk that FUNCTION LOAD takes, in LUA_FILES order (a file may call the local
 * functions of the files before it), and names its version.
 */
export const LUA_FILES = [
  'common',
  'inbox',
  'batch',
  'blocks',
  'bits',
  'counting',
  'politeness',
  'queue-codec',
  'queue-store',
  'queue-state',
  'queue-take',
  'queue-entries',
  'queue-admin',
  'queue-migrate',
  'scope',
  'delivery',
  'nodes',
  'library',
] as const;

const HEADER = '#!lua name=seenstore';

/** The package's release, from the package.json this file ships in (dist/src/store/redis -> the root). */
const RELEASE = (
  JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

interface Source {
  readonly file: string;
  readonly text: string;
}

const SOURCES: readonly Source[] = LUA_FILES.map((name) => ({
  file: `${name}.lua`,
  text: readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8'),
}));

/**
 * `RELEASE+HASH`: the package release, then the first 16 hex digits of the SHA-256 of the sources.
 * The hash changes with every change of the Lua, so no version is bumped by hand; the release
 * orders two versions (libraryOrder), so that a client never replaces a newer library by its own.
 */
export const LIBRARY_VERSION = `${RELEASE}+${createHash('sha256')
  .update(SOURCES.map((s) => `${s.file}\n${s.text}`).join('\n'))
  .digest('hex')
  .slice(0, 16)}`;

/** The library as FUNCTION LOAD takes it, and the line where each file begins in it. */
export function assembleLibrary(version = LIBRARY_VERSION): {
  readonly text: string;
  readonly starts: readonly { file: string; line: number }[];
} {
  const lines = [HEADER, `local VERSION = '${version}'`];
  const starts: { file: string; line: number }[] = [];
  for (const source of SOURCES) {
    starts.push({ file: source.file, line: lines.length + 1 });
    lines.push(...source.text.replace(/\n$/, '').split('\n'));
  }
  return { text: `${lines.join('\n')}\n`, starts };
}

const ASSEMBLED = assembleLibrary();

export const LIBRARY = ASSEMBLED.text;

/** Where line `line` (1-based) of the assembled library comes from, as `file.lua:N`. */
export function sourceOfLine(line: number, starts = ASSEMBLED.starts): string {
  let at: { file: string; line: number } | undefined;
  for (const start of starts) if (start.line <= line) at = start;
  return at === undefined ? `library line ${line}` : `${at.file}:${line - at.line + 1}`;
}

/**
 * Redis names a function's failing line in the assembled chunk (`user_function:LINE:`); the
 * message names the source file and line instead.
 */
export function withSourceLines(message: string): string {
  return message.replace(/user_function:(\d+):/g, (_, line: string) => `${sourceOfLine(Number(line))}:`);
}

/**
 * How a loaded library's version stands to this client's: `same`; `older` (an earlier release:
 * replace it); `newer` (a later release: leave it, this client is the old one); `other` (the same
 * release from other sources, or a version this release cannot read: leave it, and refuse, since
 * neither can be known to be the newer).
 */
export function libraryOrder(loaded: string, ours = LIBRARY_VERSION): 'same' | 'older' | 'newer' | 'other' {
  if (loaded === ours) return 'same';
  const a = release(loaded);
  const b = release(ours);
  if (a === undefined) return /^[0-9]+$/.test(loaded) ? 'older' : 'other';
  for (let i = 0; i < 3; i++) {
    if (a[i]! < b![i]!) return 'older';
    if (a[i]! > b![i]!) return 'newer';
  }
  return 'other';
}

/** The numeric release of a version `X.Y.Z+HASH`, or undefined. */
function release(version: string): [number, number, number] | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)\+[0-9a-f]{16}$/.exec(version);
  return match === null ? undefined : [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** The refusal of a store whose masters run a library this client must not replace. */
export function libraryConflict(node: string, loaded: string, order: 'newer' | 'other'): SeenStoreError {
  const why =
    order === 'newer'
      ? 'a later release of seenstore loaded it: upgrade this client'
      : 'it is not an earlier release of this one, so it is not replaced; if no other seenstore uses this Redis, `FUNCTION DELETE seenstore` on each master lets this client load its own';
  return new SeenStoreError(
    'FORMAT_UNSUPPORTED',
    `Redis node ${node} runs seenstore function library ${loaded}, this client has ${LIBRARY_VERSION}: ${why}`,
  );
}
