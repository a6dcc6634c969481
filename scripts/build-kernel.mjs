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
  const wasmPath = join(dir, 'kernel.wasm');
  execFileSync('wat2wasm', ['--enable-threads', wat.pathname, '-o', wasmPath]);
  const version = execFileSync('wat2wasm', ['--version']).toString().trim();
  const bytes = readFileSync(wasmPath);
  const source =
    `/** The compiled kernel.wat (wat2wasm ${version} --enable-threads, ${bytes.length} bytes): \`npm run build:kernel\` writes this file. */\n` +
    `export const KERNEL_WASM: Uint8Array = Buffer.from(\n  '${bytes.toString('base64')}',\n  'base64',\n);\n`;
  if (process.argv.includes('--check')) {
    const committed = readFileSync(target, 'utf8').match(/Buffer\.from\(\n  '([^']*)'/)?.[1];
    if (committed !== bytes.toString('base64')) {
      process.stderr.write('src/hash/kernel-wasm.ts is not what src/hash/kernel.wat compiles to: run npm run build:kernel\n');
      process.exit(1);
    }
  } else {
    writeFileSync(target, source);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
