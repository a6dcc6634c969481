// Bundles the CLI (dist/src/cli/main.js and every module it can load) into one CommonJS file,
// dist/src/cli/bundle.cjs, which dist/src/cli/bin.cjs (the `seenstore` command) runs through V8's
// code cache; then runs one short command so that the cache exists (docs/architecture.md,
// "Start-up").
//
// Left out of the bundle, loaded from node_modules as before: lmdb and msgpackr (they find their
// native addons beside their own files), and what only `serve`, the Redis backend and the
// URLFrontier server load (redis, prom-client, @grpc/*: 1.8 MB that every short command would
// read), and the optional peer crawlee.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const cliDir = join(root, 'dist', 'src', 'cli');
const outfile = join(cliDir, 'bundle.cjs');
const cacheFile = join(cliDir, 'bundle.code-cache');
const EXTERNAL = ['lmdb', 'msgpackr', 'redis', 'prom-client', '@grpc/*', 'crawlee'];

// A module's import.meta.url names its own file: worker scripts, Lua sources, the .proto and
// package.json are found beside it. In the bundle each module gets the URL of the file it came
// from, which stays in dist/src.
const moduleUrls = {
  name: 'module-urls',
  setup(context) {
    context.onLoad({ filter: /[\\/]dist[\\/]src[\\/].*\.js$/ }, (args) => {
      const from = JSON.stringify(relative(cliDir, args.path).split('\\').join('/'));
      const text = readFileSync(args.path, 'utf8').replaceAll(
        'import.meta.url',
        `require("node:url").pathToFileURL(require("node:path").join(__dirname, ${from})).href`,
      );
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

const result = await build({
  entryPoints: [join(cliDir, 'main.js')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  charset: 'ascii',
  external: EXTERNAL,
  plugins: [moduleUrls],
  logLevel: 'silent',
});
if (result.warnings.length > 0) {
  // Any warning (an import.meta left over, a require it cannot follow) is a bundle that may fail at run time.
  for (const warning of result.warnings)
    console.error(`build-cli: ${warning.text} (${warning.location?.file}:${warning.location?.line})`);
  process.exit(1);
}
// bin.cjs compiles the bundle inside CommonJS's function wrapper, where a #! line cannot stand.
const text = readFileSync(outfile, 'latin1').replace(/^#!.*\n/, '');
// A dynamic import() would need a loader that vm.Script does not have: each package must be require()d.
const dynamic = text.match(/\bimport\(\s*["'][^."']/);
if (dynamic !== null) {
  console.error(
    `build-cli: the bundle still holds a dynamic import of a package (${dynamic[0]}); bundle it or list it in EXTERNAL`,
  );
  process.exit(1);
}
writeFileSync(outfile, text, 'latin1');
// npm makes a package's bin executable when it installs it; a checkout runs it as built.
chmodSync(join(cliDir, 'bin.cjs'), 0o755);

// The cache: one filter-new of one URL into a new store, the path that the short commands share
// (module loading, the store's open, deciding a batch). Any later command that finds the cache
// missing or refused (another Node) writes it again.
rmSync(cacheFile, { force: true });
const store = mkdtempSync(join(tmpdir(), 'seenstore-build-cli-'));
try {
  const run = spawnSync(process.execPath, [join(cliDir, 'bin.cjs'), '--store', store, '--quiet', 'filter-new'], {
    input: 'https://example.org/\n',
    env: { ...process.env, SEENSTORE_CODE_CACHE: cacheFile },
    encoding: 'utf8',
  });
  if (run.status !== 0) {
    console.error(`build-cli: the bundled CLI failed (exit ${run.status}): ${run.stderr}`);
    process.exit(1);
  }
} finally {
  rmSync(store, { recursive: true, force: true });
}
