import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

/**
 * The README's Quick start and its first recipe, followed from a fresh clone of the repository's
 * committed state (issue 30). Kept cheap for CI, which has just installed and built this checkout:
 * in the clone, `npm install && npm run build` are stood in for by links to this checkout's
 * node_modules and dist (a second install and build would cost minutes and test npm, not the
 * README), then the recipe's shell block runs exactly as the README shows it, `npx seenstore`
 * included (offline: npx must find the clone's own bin, never a registry's package).
 */
const NOT_A_CLONE = !existsSync(join(ROOT, '.git'))
  ? 'not a git checkout (a packed copy): nothing to clone'
  : spawnSync('git', ['--version']).status !== 0
    ? 'git is not installed (apt-get install git; CI installs it)'
    : false;

/** The ```sh block after the `<!-- recipe: NAME -->` marker. */
function recipe(readme: string, name: string): string {
  const at = readme.indexOf(`<!-- recipe: ${name} `);
  assert.ok(at >= 0, `README has no recipe ${name}`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(block, `recipe ${name} has no sh block`);
  return block[1]!;
}

describe('README from a fresh clone', { skip: NOT_A_CLONE }, () => {
  test('the Quick start gives a working `npx seenstore`, and recipe 1 does what the README says', () => {
    const clone = join(tempDir('seenstore-clone-'), 'seenstore');
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone], { stdio: 'pipe' });
    const readme = readFileSync(join(clone, 'README.md'), 'utf8');
    assert.match(readme, /```sh\nnpm install && npm run demo\nnpm test\n```/, 'the two Quick start commands');
    assert.match(readme, /`npx seenstore`/);
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
    symlinkSync(join(ROOT, 'dist'), join(clone, 'dist'));
    const env = { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false', SEENSTORE_DIR: '' };
    const version = spawnSync('npx', ['seenstore', '--version'], { cwd: clone, env, encoding: 'utf8' });
    assert.equal(version.status, 0, version.stderr);
    assert.equal(
      version.stdout.trim(),
      (JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { version: string }).version,
    );
    const run = spawnSync('bash', ['-eo', 'pipefail', '-c', recipe(readme, 'dedup')], {
      cwd: clone,
      env,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, 'https://example.org/a\nhttps://example.org/b\n', 'cat to-fetch.txt, then nothing new');
    const lines = run.stderr.split('\n');
    assert.equal(lines[0], `seenstore: created store at ${join(clone, 'crawl-store')}`);
    assert.ok(
      lines.includes(`seenstore: created scope example.org in store ${join(clone, 'crawl-store')}`),
      run.stderr,
    );
    assert.match(run.stderr, /filter-new: read 3, new 2, already seen 1, invalid 1 in /);
    assert.match(run.stderr, /filter-new: read 3, new 0, already seen 3, invalid 1 in /);
  });
});
