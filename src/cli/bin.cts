#!/usr/bin/env node
/**
 * The `seenstore` command. It runs the CLI's one-file bundle (bundle.cjs, which
 * scripts/build-cli.mjs makes from dist/src/cli/main.js) through V8's code cache, so that a short
 * command neither loads ~130 module files one by one nor compiles their code again
 * (docs/architecture.md, "Start-up").
 *
 * The cache file: 8 bytes of magic, the SHA-256 of (what the cache belongs to: Node's version, the
 * platform and the bundle's bytes) followed by V8's data, then V8's data. V8 checks that its data
 * came from its own version and flags, but of the source only the length, and of its own bytes
 * nothing in a release build: the digest is what keeps a cache of another bundle, or a damaged
 * one, from being run. A cache that is missing or refused is written anew when the command exits,
 * where the file can be written; failing that, the command runs without one.
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { join } from 'node:path';
import { Script } from 'node:vm';

const BUNDLE = join(__dirname, 'bundle.cjs');
const MAGIC = Buffer.from('SSCODE\x00\x01', 'latin1');
const DIGEST_BYTES = 32;

/** Where the cache lives: $SEENSTORE_CODE_CACHE (a file, or `off`), else beside the bundle. */
function cachePath(): string | undefined {
  const setting = process.env.SEENSTORE_CODE_CACHE;
  if (setting === 'off') return undefined;
  return setting !== undefined && setting !== '' ? setting : join(__dirname, 'bundle.code-cache');
}

function digestOf(bundle: Buffer, data: Uint8Array): Buffer {
  return createHash('sha256')
    .update(`${process.version} ${process.platform} ${process.arch}\n`)
    .update(bundle)
    .update(data)
    .digest();
}

/** V8's data from the cache file, if the file is whole and belongs to this bundle. */
function readCache(path: string, bundle: Buffer): Buffer | undefined {
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch {
    return undefined;
  }
  const header = MAGIC.length + DIGEST_BYTES;
  if (file.length <= header || !file.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const data = file.subarray(header);
  return digestOf(bundle, data).equals(file.subarray(MAGIC.length, header)) ? data : undefined;
}

/** Writes the cache whole or not at all (a temporary file renamed over it); never fails the command. */
function writeCache(path: string, bundle: Buffer, script: Script): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    const data = script.createCachedData();
    writeFileSync(temporary, Buffer.concat([MAGIC, digestOf(bundle, data), data]));
    renameSync(temporary, path);
  } catch {
    rmSync(temporary, { force: true });
  }
}

const bundle = readFileSync(BUNDLE);
const cache = cachePath();
const cachedData = cache === undefined ? undefined : readCache(cache, bundle);
// The bundle is ASCII (esbuild escapes the rest), so latin1 decodes it as it is, in one pass.
const script = new Script(Module.wrap(bundle.toString('latin1')), {
  filename: BUNDLE,
  ...(cachedData === undefined ? {} : { cachedData }),
});
if (cache !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
  // At exit, the data holds every function this command compiled, not only the top level.
  process.once('exit', () => writeCache(cache, bundle, script));
}
const main = new Module(BUNDLE, module);
main.filename = BUNDLE;
const run = script.runInThisContext() as (
  exports: unknown,
  require: NodeJS.Require,
  module: Module,
  filename: string,
  dirname: string,
) => void;
run.call(main.exports, main.exports, Module.createRequire(BUNDLE), main, BUNDLE, __dirname);
