#!/usr/bin/env node
// `npm test`: node's test runner over dist/test/*.test.js, three files at a time (README, "Tests"),
// the longest files first. The runner starts files in the order given; started last, one of these
// would run alone on a core while the other idles (the suite is CPU-bound on 2 cores). Files named
// on the command line run instead of the whole suite, in their order; arguments starting with --
// go to node (`npm test -- --test-reporter=tap`). Before the whole suite, the system tools it needs
// are checked (scripts/test-tools.mjs): missing ones are installed as root with apt-get (one line
// on stderr says which), else it stops before any test with the exact apt-get line.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTools } from './test-tools.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TESTS = join('dist', 'test');

/** The longest files, longest first (docs/benchmarks.md, "Test suite duration"); the rest follow by name. */
const LONGEST = [
  'package',
  'redis-frontier',
  'crawlee',
  'soak',
  'redis-scale',
  'contract-redis',
  'page-damage',
  'redis-faults',
  'redis',
  'bad-input',
  'counting',
  'crash',
  'create-kill',
  'scrapy',
  'server',
  'cli',
  'politeness',
].map((name) => `${name}.test.js`);

function suiteFiles() {
  const all = readdirSync(join(ROOT, TESTS))
    .filter((name) => name.endsWith('.test.js'))
    .sort();
  const first = LONGEST.filter((name) => all.includes(name));
  return [...first, ...all.filter((name) => !first.includes(name))].map((name) => join(TESTS, name));
}

const flags = process.argv.slice(2).filter((arg) => arg.startsWith('--'));
const named = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
if (named.length === 0) {
  const status = ensureTools();
  if (status !== 0) process.exit(status);
}
const files = named.length > 0 ? named : suiteFiles();
const run = spawnSync(process.execPath, ['--test', '--test-concurrency=3', ...flags, ...files], {
  cwd: ROOT,
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
