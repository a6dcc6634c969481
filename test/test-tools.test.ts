import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ROOT } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

interface Tools {
  missingPackages(options: {
    path?: string;
    fileExists?: (path: string) => boolean;
    pythonMissing?: (modules: string[]) => string[];
  }): string[];
  decide(missing: string[], how: { isRoot: boolean; hasAptGet: boolean }): { action: string; line?: string };
  TOOLS: ReadonlyArray<{ pkg: string }>;
}

const tools = async (): Promise<Tools> =>
  (await import(pathToFileURL(join(ROOT, 'scripts', 'test-tools.mjs')).href)) as Tools;

test('npm test tool check: a PATH without wat2wasm and luacheck names wabt and lua-check; a tool on the PATH counts', async () => {
  const { missingPackages, TOOLS } = await tools();
  const bin = tempDir();
  const none = missingPackages({ path: bin, fileExists: () => true, pythonMissing: () => [] });
  assert.deepEqual(none, ['wabt', 'lua-check', 'redis-server', 'redis-tools', 'strace', 'git', 'protobuf-compiler']);
  writeFileSync(join(bin, 'wat2wasm'), '#!/bin/sh\n');
  chmodSync(join(bin, 'wat2wasm'), 0o755);
  writeFileSync(join(bin, 'luacheck'), 'not executable');
  assert.ok(
    !missingPackages({ path: bin, fileExists: () => true, pythonMissing: () => [] }).includes('wabt'),
    'an executable on the PATH was not found',
  );
  assert.ok(
    missingPackages({ path: bin, fileExists: () => true, pythonMissing: () => [] }).includes('lua-check'),
    'a file that is not executable counted',
  );
  const everything = missingPackages({ path: '', fileExists: () => false, pythonMissing: (modules) => modules });
  assert.deepEqual(
    everything,
    TOOLS.map((tool) => tool.pkg),
    'every tool maps to its package',
  );
  assert.deepEqual(
    missingPackages({
      path: process.env.PATH ?? '',
      fileExists: () => true,
      pythonMissing: (m) => m.filter((x) => x === 'grpc'),
    }).filter((p) => p.startsWith('python3')),
    ['python3-grpcio'],
  );
});

test('npm test tool check: installs as root with apt-get, else stops with the exact apt-get line', async () => {
  const { decide } = await tools();
  assert.deepEqual(decide([], { isRoot: false, hasAptGet: false }), { action: 'none' });
  const install = decide(['wabt', 'lua-check'], { isRoot: true, hasAptGet: true });
  assert.equal(install.action, 'install');
  assert.equal(install.line, 'seenstore test: installing the Debian packages the suite needs: wabt lua-check');
  const user = decide(['wabt', 'lua-check'], { isRoot: false, hasAptGet: true });
  assert.equal(user.action, 'stop');
  assert.match(user.line!, /\n {2}sudo apt-get install -y wabt lua-check$/);
  assert.match(decide(['wabt'], { isRoot: true, hasAptGet: false }).line!, /\n {2}apt-get install -y wabt$/);
});

test('npm test stops before any test when tools are missing and apt-get is not there', () => {
  const bin = tempDir();
  symlinkSync(process.execPath, join(bin, 'node'));
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts', 'test.mjs')], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, PATH: bin },
  });
  assert.equal(run.status, 1, run.stderr);
  assert.match(
    run.stderr,
    /^seenstore test: the suite needs Debian packages that are missing: wabt lua-check .*\n {2}install them, then run npm test again:\n {2}(sudo )?apt-get install -y wabt lua-check /,
  );
  assert.equal(run.stdout, '', 'a test ran');
});
