import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BENCH_DIR } from './data.js';

const ROOT = resolve(BENCH_DIR, '..');

/**
 * seenstore as it was at `commit`, compiled into `work` (a temporary directory): `git archive`
 * of its sources, this checkout's node_modules, its own build steps. Resolves with its library
 * module and the path of its CLI, for side-by-side runs against this build.
 */
export async function oldBuild<T>(commit: string, work: string): Promise<{ module: T; cli: string }> {
  mkdirSync(work, { recursive: true });
  execFileSync('sh', [
    '-c',
    `git -C "${ROOT}" archive ${commit} src migrations scripts tsconfig.json package.json | tar -x -C "${work}"`,
  ]);
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
  execFileSync(process.execPath, [
    join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    join(work, 'tsconfig.json'),
  ]);
  execFileSync(process.execPath, [join(work, 'scripts', 'build-assets.mjs')]);
  execFileSync(process.execPath, [join(work, 'scripts', 'build-cli.mjs')], { cwd: work });
  const module = (await import(join(work, 'dist', 'src', 'index.js'))) as T;
  return { module, cli: join(work, 'dist', 'src', 'cli', 'bin.cjs') };
}
