// Compiles src/hash/kernel.wat with wat2wasm (Debian's wabt, installed by .ci/run) into
// src/hash/kernel-wasm.ts, the bytes the library loads. `--check` compiles and compares instead,
// exiting 1 when the committed bytes are not what the .wat compiles to (test/kernel.test.ts).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const wat = new URL('../src/hash/kernel.wat', import.meta.url);
const target = new URL('../src/hash/kernel-wasm.ts', import.meta.url);
const dir = mkdtempSync(join(tmpdir(), 'seenstore-kernel-'));
try {
  const version = execFileSync('wat2wasm', ['--version']).toString().trim();
  const text = readFileSync(wat, 'utf8');
  // Two builds of one source: over a shared memory (filters' views survive growth) and over a
  // private one (JavaScript copies into a shared memory more slowly: hashing alone uses this one).
  const compile = (name, source) => {
    writeFileSync(join(dir, `${name}.wat`), source);
    execFileSync('wat2wasm', ['--enable-threads', join(dir, `${name}.wat`), '-o', join(dir, `${name}.wasm`)]);
    return readFileSync(join(dir, `${name}.wasm`)).toString('base64');
  };
  const shared = compile('shared', text);
  const priv = compile('private', text.replace('(memory 1 65536 shared)', '(memory 1 65536)'));
  const source =
    `/** kernel.wat compiled by wat2wasm ${version} --enable-threads, over a shared memory: \`npm run build:kernel\` writes this file. */\n` +
    `export const KERNEL_WASM_SHARED: Uint8Array = Buffer.from(\n  '${shared}',\n  'base64',\n);\n\n` +
    `/** The same over a private memory. */\n` +
    `export const KERNEL_WASM_PRIVATE: Uint8Array = Buffer.from(\n  '${priv}',\n  'base64',\n);\n`;
  if (process.argv.includes('--check')) {
    if (readFileSync(target, 'utf8') !== source) {
      process.stderr.write(
        'src/hash/kernel-wasm.ts is not what src/hash/kernel.wat compiles to: run npm run build:kernel\n',
      );
      process.exit(1);
    }
  } else {
    writeFileSync(target, source);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
