// The system tools the test suite needs (the Debian packages .ci/run installs), checked before
// any test runs: a fresh machine missing one would otherwise fail deep inside a test file
// (`spawnSync wat2wasm ENOENT`) or skip it. scripts/test.mjs calls `ensureTools`; the functions
// take their surroundings (PATH, file checks, the Python probe) as arguments so that
// test/test-tools.test.ts checks the logic without uninstalling anything.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Each tool: the Debian package that provides it, and how a test finds it: a command on the PATH,
 * a fixed path (tests that name one), or a module of /usr/bin/python3.
 */
export const TOOLS = Object.freeze([
  { pkg: 'wabt', command: 'wat2wasm', why: 'test/kernel.test.ts compiles src/hash/kernel.wat' },
  { pkg: 'lua-check', command: 'luacheck', why: "test/redis-lua.test.ts lints the Redis functions' Lua" },
  { pkg: 'redis-server', command: 'redis-server', why: "the local Redis Cluster of the Redis backend's tests" },
  { pkg: 'redis-tools', command: 'redis-cli', why: 'the Redis Cluster helper and the RESP server tests' },
  { pkg: 'strace', command: 'strace', why: "test/open-race.test.ts holds a process inside LMDB's open" },
  { pkg: 'git', command: 'git', why: 'test/readme-recipe.test.ts clones the checkout' },
  {
    pkg: 'protobuf-compiler',
    command: 'protoc',
    why: "test/urlfrontier-serve.test.ts compiles the Python client's messages",
  },
  { pkg: 'chromium', file: '/usr/bin/chromium', why: 'test/report.test.ts opens the HTML report headless' },
  {
    pkg: 'prometheus-node-exporter',
    file: '/usr/bin/prometheus-node-exporter',
    why: 'test/operations.test.ts reads the textfile metrics',
  },
  { pkg: 'python3', file: '/usr/bin/python3', why: 'the Scrapy, redis-py and URLFrontier clients' },
  { pkg: 'python3-redis', python: 'redis', why: 'redis-py, a real client of test/server*.test.ts' },
  { pkg: 'python3-scrapy', python: 'scrapy', why: 'test/scrapy.test.ts' },
  { pkg: 'python3-venv', python: 'ensurepip', why: 'test/scrapy.test.ts installs the integration in a venv' },
  { pkg: 'python3-setuptools', python: 'setuptools', why: 'pip install ./integrations/scrapy, offline' },
  { pkg: 'python3-grpcio', python: 'grpc', why: 'the Python URLFrontier client of test/urlfrontier-serve.test.ts' },
  { pkg: 'python3-protobuf', python: 'google.protobuf', why: 'the same client' },
]);

/** Whether `command` is an executable file in one of PATH's directories. */
export function onPath(command, path) {
  return (path ?? '').split(delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The modules of `modules` that /usr/bin/python3 cannot import (all of them without it), in one run. */
export function missingPythonModules(modules, python = '/usr/bin/python3') {
  const probe =
    'import importlib.util, sys\nfor m in sys.argv[1:]:\n    try:\n        ok = importlib.util.find_spec(m) is not None\n    except Exception:\n        ok = False\n    if not ok: print(m)';
  const run = spawnSync(python, ['-c', probe, ...modules], { encoding: 'utf8' });
  if (run.status !== 0) return [...modules];
  return run.stdout.split('\n').filter((line) => line !== '');
}

/** The Debian packages of TOOLS missing here, in TOOLS's order. */
export function missingPackages({
  path = process.env.PATH,
  fileExists = existsSync,
  pythonMissing = missingPythonModules,
} = {}) {
  const absentModules = new Set(pythonMissing(TOOLS.filter((tool) => tool.python).map((tool) => tool.python)));
  return TOOLS.filter((tool) => {
    if (tool.command) return !onPath(tool.command, path);
    if (tool.file) return !fileExists(tool.file);
    return absentModules.has(tool.python);
  }).map((tool) => tool.pkg);
}

/** The exact command that installs `packages`. */
export function installLine(packages) {
  return `apt-get install -y ${packages.join(' ')}`;
}

/**
 * What to do about missing packages: nothing; install them (as root, with apt-get on the PATH);
 * or stop with the command to run.
 */
export function decide(missing, { isRoot, hasAptGet }) {
  if (missing.length === 0) return { action: 'none' };
  if (isRoot && hasAptGet)
    return {
      action: 'install',
      line: `seenstore test: installing the Debian packages the suite needs: ${missing.join(' ')}`,
    };
  const sudo = isRoot ? '' : 'sudo ';
  return {
    action: 'stop',
    line: `seenstore test: the suite needs Debian packages that are missing: ${missing.join(' ')}\n  install them, then run npm test again:\n  ${sudo}${installLine(missing)}`,
  };
}

/** Checks the tools; installs the missing ones as root with apt-get, else stops. Returns the exit code to stop with, or 0. */
export function ensureTools({ env = process.env, stderr = process.stderr } = {}) {
  const missing = missingPackages({ path: env.PATH });
  const plan = decide(missing, { isRoot: process.getuid?.() === 0, hasAptGet: onPath('apt-get', env.PATH) });
  if (plan.action === 'none') return 0;
  stderr.write(`${plan.line}\n`);
  if (plan.action === 'stop') return 1;
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env: aptEnv });
  const install =
    update.status === 0
      ? spawnSync('apt-get', ['install', '-y', '-qq', ...missing], {
          stdio: ['ignore', 'ignore', 'inherit'],
          env: aptEnv,
        })
      : update;
  if (install.status !== 0) {
    stderr.write(
      `seenstore test: apt-get failed (exit ${install.status}); install the packages by hand:\n  ${installLine(missing)}\n`,
    );
    return 1;
  }
  const still = missingPackages({ path: env.PATH });
  if (still.length > 0) {
    stderr.write(`seenstore test: still missing after apt-get: ${still.join(' ')}\n`);
    return 1;
  }
  return 0;
}
