import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from './helpers/data.js';
import { FULL } from './helpers/scale.js';
import { tempDir } from './helpers/tmp.js';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
};
const VERSION = PACKAGE.version;

/** What a fresh clone holds that `npm pack` needs: sources and files, no dist/. */
const CLONE_ENTRIES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'scripts',
  'src',
  'migrations',
  'cjs',
  'docs',
  'README.md',
  'CHANGELOG.md',
  'LICENSE',
];

/** A TypeScript file that uses the public API with its types; any leaked or broken type fails it. */
const CONSUMER_TS = `import { SeenStore, SeenStoreError, type EpochDetails, type Scope, type ScopeStats } from 'seenstore';
const store: SeenStore = await SeenStore.open('./store', { create: true });
const scope: Scope = store.scope('example.org', { capacityUrls: 1000, fprTarget: 0.01 });
const fresh: boolean[] = await scope.addIfAbsent(['https://example.org/a']);
const stats: ScopeStats = await scope.stats();
const details: EpochDetails = await scope.epoch(1);
const code: string = new SeenStoreError('USAGE', 'x').code;
console.log(fresh, stats.epochs.length, details.sizing.policy, code);
await store.close();
`;

/** The same API misused: the type check must fail on it, or it checks nothing. */
const WRONG_TS = `import { SeenStore } from 'seenstore';
const store = await SeenStore.open('./store');
const n: number = await store.scope('s').addIfAbsent(['a']);
console.log(n);
`;

/**
 * The module resolutions a consumer's TypeScript may use. node16 resolves this package as nodenext
 * does (its exports' import and types conditions): `npm test` checks nodenext and bundler, `npm run
 * test:full` node16 as well (a compiler run costs ~6 s of CPU here).
 */
const RESOLUTIONS = [
  ...(FULL ? ([{ module: 'node16', moduleResolution: 'node16' }] as const) : []),
  { module: 'nodenext', moduleResolution: 'nodenext' },
  { module: 'esnext', moduleResolution: 'bundler' },
] as const;

async function sh(command: string, args: readonly string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run(command, args, {
    cwd,
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
    maxBuffer: 16 << 20,
  });
}

/**
 * Type-checks the consumer and the misuse in one compiler run: it must fail, and only by the misuse's
 * TS2322 (any error in the consumer or in the package's own types shows up under its own file name).
 */
async function typeCheck(
  dir: string,
  files: readonly string[],
  resolution: (typeof RESOLUTIONS)[number],
): Promise<{ ok: boolean; output: string }> {
  const config = join(dir, `tsconfig.${resolution.moduleResolution}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      compilerOptions: {
        ...resolution,
        target: 'es2022',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules', '@types')],
      },
      files,
    }),
  );
  try {
    const { stdout } = await sh(process.execPath, [TSC, '-p', config], dir);
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: String((error as { stdout?: string }).stdout ?? error) };
  }
}

/**
 * Packs a copy of the checkout. Under `npm run test:full`, a fresh clone (no dist/) that prepack
 * builds whole; in `npm test`, the checkout with the dist/ that `npm test` has just built (in CI,
 * from a fresh checkout), where only prepack's last step is left to run: its compiler run of the
 * sources would repeat the build's (~17 CPU-s here). Returns the tarball's path.
 */
async function pack(): Promise<string> {
  const clone = tempDir('seenstore-clone-');
  for (const entry of CLONE_ENTRIES) cpSync(join(ROOT, entry), join(clone, entry), { recursive: true });
  // The repository's node_modules stands in for `npm install` there.
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packed = tempDir('seenstore-tarball-');
  if (FULL) {
    await sh(NPM, ['pack', '--silent', '--pack-destination', packed], clone);
  } else {
    assert.equal(
      PACKAGE.scripts.prepack,
      'npm run build && npm run build:types',
      'prepack builds what npm test builds, then the types',
    );
    for (const built of ['src', 'migrations'])
      cpSync(join(ROOT, 'dist', built), join(clone, 'dist', built), { recursive: true });
    await sh(NPM, ['run', '--silent', 'build:types'], clone);
    await sh(NPM, ['pack', '--silent', '--ignore-scripts', '--pack-destination', packed], clone);
  }
  const tarballs = readdirSync(packed).filter((name) => name.endsWith('.tgz'));
  assert.deepEqual(tarballs, [`seenstore-${VERSION}.tgz`]);
  return join(packed, tarballs[0]!);
}

describe('the npm package, packed from a checkout and installed elsewhere', () => {
  test(`${FULL ? 'prepack builds a fresh clone' : 'the built checkout packs'}; the tarball installs; the CLI, ESM import, require() and types work`, {
    timeout: 300_000,
  }, async () => {
    const tarball = await pack();
    const packed = dirname(tarball);

    const { stdout: listing } = await sh('tar', ['-tzf', tarball], packed);
    const files = listing.trim().split('\n');
    for (const needed of [
      'package/dist/src/cli/bin.cjs',
      'package/dist/src/cli/bundle.cjs',
      'package/dist/src/cli/bundle.code-cache',
      'package/dist/src/cli/main.js',
      'package/dist/src/index.js',
      'package/dist/seenstore.d.ts',
      'package/cjs/index.cjs',
      'package/LICENSE',
      'package/dist/migrations/index.js',
      'package/dist/src/store/redis/lua/library.lua',
      'package/dist/src/urlfrontier/urlfrontier.proto',
    ]) {
      assert.ok(files.includes(needed), `${needed} is in the tarball`);
    }
    assert.deepEqual(
      files.filter((f) => f.endsWith('.map')),
      [],
      'no source maps pointing at sources the tarball lacks',
    );
    assert.deepEqual(
      files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
      [],
      'no TypeScript sources',
    );

    const project = tempDir('seenstore-consumer-');
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
    );
    await sh(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock', tarball], project);
    // The Redis backend reads its Lua beside its compiled modules: the installed package must have it all.
    const libraryModule = join(project, 'node_modules', 'seenstore', 'dist', 'src', 'store', 'redis', 'library.js');
    const { stdout: library } = await sh(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(pathToFileURL(libraryModule).href)}); console.log(m.LIBRARY_VERSION, m.LIBRARY.length)`,
      ],
      project,
    );
    assert.match(library.trim(), new RegExp(`^${VERSION.replace(/\./g, '\\.')}\\+[0-9a-f]{16} [0-9]{4,}$`));

    // The command npm linked (`npx seenstore` runs the same link; readme-recipe.test.ts runs npx).
    const { stdout: version } = await sh(join(project, 'node_modules', '.bin', 'seenstore'), ['--version'], project);
    assert.equal(version.trim(), VERSION);
    // The installed command runs a store command from the bundle, through the code cache that
    // prepack made with this Node: the cache is taken as it is, not written again.
    const cliDir = join(project, 'node_modules', 'seenstore', 'dist', 'src', 'cli');
    const shipped = statSync(join(cliDir, 'bundle.code-cache')).ino;
    const filtered = execFileSync(
      join(project, 'node_modules', '.bin', 'seenstore'),
      ['--store', './cli-store', '--quiet', 'filter-new'],
      { cwd: project, input: 'https://a/\nhttps://a/\nhttps://b/\n', encoding: 'utf8' },
    );
    assert.equal(filtered, 'https://a/\nhttps://b/\n');
    // A cache written anew replaces the file by a rename: another inode.
    assert.equal(statSync(join(cliDir, 'bundle.code-cache')).ino, shipped, 'the shipped code cache was accepted');

    const esm = `import { SeenStore } from 'seenstore';
const store = await SeenStore.open('./store');
const scope = store.scope('s');
console.log(JSON.stringify([await scope.addIfAbsent(['https://a/', 'https://a/']), await scope.has(['https://a/', 'https://b/'])]));
await store.close();`;
    const { stdout: answers } = await sh(process.execPath, ['--input-type=module', '-e', esm], project);
    assert.equal(
      answers.trim(),
      JSON.stringify([
        [true, false],
        [true, false],
      ]),
    );

    // require(esm): this Node (>= 20.19) takes the module-sync condition; with require(esm) turned
    // off, as on older Node, the require condition's stub says what to do instead.
    const cjs =
      "try { console.log(typeof require('seenstore').SeenStore); } catch (e) { console.log(e.code + ': ' + e.message); }";
    assert.equal((await sh(process.execPath, ['-e', cjs], project)).stdout.trim(), 'function');
    const old = (await sh(process.execPath, ['--no-experimental-require-module', '-e', cjs], project)).stdout.trim();
    assert.match(old, /^ERR_REQUIRE_ESM: seenstore is an ES module.*await import\('seenstore'\)/);

    mkdirSync(join(project, 'src'));
    writeFileSync(join(project, 'src', 'consumer.ts'), CONSUMER_TS);
    writeFileSync(join(project, 'src', 'wrong.ts'), WRONG_TS);
    for (const resolution of RESOLUTIONS) {
      const checked = await typeCheck(project, ['src/consumer.ts', 'src/wrong.ts'], resolution);
      const errors = checked.output.split('\n').filter((line) => /error TS\d+/.test(line));
      assert.ok(
        !checked.ok && errors.some((line) => line.startsWith('src/wrong.ts(') && /TS2322/.test(line)),
        `${resolution.moduleResolution}: the misuse is caught:\n${checked.output}`,
      );
      assert.deepEqual(
        errors.filter((line) => !line.startsWith('src/wrong.ts(')),
        [],
        `${resolution.moduleResolution}, skipLibCheck false: the consumer and the package's types check`,
      );
    }
  });
});
