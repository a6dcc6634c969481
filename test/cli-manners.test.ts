import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Command } from 'commander';
import { ERROR_CODES } from '../src/index.js';
import { MAX_DURATION_MS, parseDuration } from '../src/cli/duration.js';
import { buildProgram } from '../src/cli/program.js';
import { CLI, runCli, type CliResult } from './helpers/cli.js';
import { ROOT } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function assertUsage(out: CliResult, what: string): void {
  assert.equal(out.code, ERROR_CODES.USAGE, `${what}: exit ${out.code}\n${out.stderr}`);
  const lines = out.stderr.split('\n').filter(Boolean);
  assert.match(lines.at(-1) ?? '', /^seenstore: error USAGE: \S/, `${what}: ${out.stderr}`);
  assert.equal(
    lines.filter((line) => /^(seenstore: )?error/.test(line)).length,
    1,
    `${what}: one error line\n${out.stderr}`,
  );
}

/** Every command that runs (leaves of the command tree), as argument lists. */
function leafCommands(command: Command, path: readonly string[] = []): string[][] {
  if (command.commands.length === 0) return [path as string[]];
  return command.commands.flatMap((sub) => leafCommands(sub, [...path, sub.name()]));
}

/**
 * What `seenstore PATH --help` prints, rendered in this process from the commander objects the CLI
 * builds (one CLI process per command costs ~45 starts; the test compares two with the real thing).
 */
function helpOf(program: Command, path: readonly string[]): string {
  let command = program;
  for (const name of path) command = command.commands.find((sub) => sub.name() === name)!;
  let text = '';
  command.configureOutput({ writeOut: (chunk) => (text += chunk) });
  command.outputHelp();
  return text;
}

/** `script` runs a command on a pseudo-terminal: what a user at a terminal sees, stdout and stderr together. */
const SCRIPT = ['/usr/bin/script', '/bin/script'].find((path) => existsSync(path));

function onTerminal(args: readonly string[], cwd: string): Promise<string> {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(SCRIPT!, ['-qfec', command, '/dev/null'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

describe('CLI manners: usage errors', () => {
  test('every usage error exits 2 with the one-line prefix, in subcommands too', async () => {
    const dir = tempDir();
    const cases: string[][] = [
      ['stats', '--bogus'],
      ['filter-new', '--batchsize', '1'],
      ['merge'],
      ['epoch', 'show'],
      ['epoch', 'show', 'x'],
      ['epoch', 'bogus'],
      ['add', '--on-invalid', 'maybe'],
      ['has', '--mode', 'some'],
      ['diff', '--print', 'most'],
      ['add', '--strategy', 'counting:3'],
      ['add', '--batch-size', '0'],
      ['epoch', 'prune', '--sealed-within', '3 fortnights'],
      ['epoch', 'prune', '--sealed-within', '12'],
      ['bogus-command'],
      [],
      ['epoch'],
      ['snapshot'],
      ['plan', '--capacity', 'lots'],
      ['simulate', '--mode', 'x'],
      ['import'],
    ];
    for (const args of cases) assertUsage(await runCli([...args, '--store', dir]), args.join(' ') || '(no command)');
  });

  test('with --json, an error is one JSON object on stderr: code, exitCode, message', async () => {
    const dir = tempDir();
    const usage = await runCli(['--json', 'stats', '--bogus', '--store', dir]);
    assert.equal(usage.code, 2);
    assert.deepEqual(JSON.parse(usage.stderr), { code: 'USAGE', exitCode: 2, message: "unknown option '--bogus'" });
    const missing = await runCli(['has', '--json', '--store', join(dir, 'none')], 'https://a.example/\n');
    assert.equal(missing.code, ERROR_CODES.NOT_FOUND);
    const error = JSON.parse(missing.stderr) as { code: string; exitCode: number; message: string };
    assert.equal(error.code, 'NOT_FOUND');
    assert.equal(error.exitCode, ERROR_CODES.NOT_FOUND);
    assert.match(error.message, /none/);
  });

  test('--version prints the version; help exits 0 and shows examples and the global options on every command', async () => {
    const version = await runCli(['--version']);
    assert.equal(version.code, 0);
    assert.equal(version.stdout, `${VERSION}\n`);
    const program = buildProgram();
    const leaves = leafCommands(program);
    assert.ok(leaves.length >= 20, `${leaves.length} commands`);
    for (const path of leaves) {
      const help = helpOf(program, path);
      assert.match(help, /\nExamples:\n {2}\S*.*seenstore /, `${path.join(' ')}: examples`);
      assert.match(
        help,
        /Global Options:[\s\S]*--store <dir>[\s\S]*--scope <name>[\s\S]*--json/,
        `${path.join(' ')}: global options`,
      );
    }
    // What the command prints is that text, and it exits 0, at the top and in a subcommand.
    for (const path of [[], ['epoch', 'prune']]) {
      const help = await runCli([...path, '--help']);
      assert.equal(help.code, 0, `${path.join(' ')} --help`);
      assert.equal(help.stdout, helpOf(buildProgram(), path), `${path.join(' ')} --help`);
    }
    const add = (await runCli(['add', '--help'])).stdout;
    assert.match(add, /counting/, '--strategy help names counting');
    assert.match(add, /URLs per durable commit/);
    assert.match(add, /choices: "skip", "fail"/);
    for (const reader of ['has', 'classify', 'diff', 'count']) {
      const help = (await runCli([reader, '--help'])).stdout;
      assert.doesNotMatch(help, /durable commit/, `${reader} never commits`);
      assert.match(help, /URLs looked up together/);
    }
  });
});

describe('CLI manners: durations', () => {
  test('parseDuration reads 3d, 12h, 90m, 3days, 1h30m, 1.5h; refuses what is not a duration', async () => {
    const cases: [string, number][] = [
      ['3d', 3 * 86_400_000],
      ['12h', 12 * 3_600_000],
      ['90m', 90 * 60_000],
      ['90s', 90_000],
      ['2w', 14 * 86_400_000],
      ['3days', 3 * 86_400_000],
      ['1 day', 86_400_000],
      ['2 weeks', 14 * 86_400_000],
      ['1h30m', 90 * 60_000],
      ['1d 12h', 36 * 3_600_000],
      ['1.5h', 90 * 60_000],
      ['250ms', 250],
      ['0s', 0],
      ['12H', 12 * 3_600_000],
      ['45min', 45 * 60_000],
      ['10 seconds', 10_000],
      [' 7d ', 7 * 86_400_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration('sealed-within', text), ms, text);
    for (const text of [
      '',
      '12',
      '3 fortnights',
      'soon',
      'd',
      '-1d',
      '1h1h',
      '1d-2h',
      '1e3s',
      '1..5h',
      '.5h',
      '101y',
      `${MAX_DURATION_MS / 86_400_000 + 1}d`,
      '3d!',
    ]) {
      const error = await expectCode('USAGE', () => parseDuration('sealed-within', text));
      assert.match(error.message, /^--sealed-within must be a duration/, text);
    }
  });

  test('epoch prune --sealed-within 3days is accepted', async () => {
    const dir = tempDir();
    await runCli(['add', '--store', dir], 'https://a.example/\n');
    const out = await runCli(['epoch', 'prune', '--store', dir, '--sealed-within', '3days']);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, 'nothing to drop\n');
  });
});

describe('CLI manners: warnings, creation, progress', () => {
  test('plan options on an existing scope are ignored with a warning; the same values say nothing', async () => {
    const dir = tempDir();
    const first = await runCli(
      ['add', '--store', dir, '--capacity', '5000', '--strategy', 'classic'],
      'https://a.example/\n',
    );
    assert.equal(first.code, 0);
    assert.doesNotMatch(first.stderr, /warning/);
    const same = await runCli(['add', '--store', dir, '--capacity', '5000'], 'https://b.example/\n');
    assert.doesNotMatch(same.stderr, /warning/);
    const other = await runCli(
      ['filter-new', '--store', dir, '--capacity', '9000', '--strategy', 'blocked', '--fpr', '0.01'],
      'https://c.example/\n',
    );
    assert.equal(other.code, 0);
    assert.equal(other.stdout, 'https://c.example/\n');
    assert.match(
      other.stderr,
      /^seenstore: warning: scope default exists, so --capacity 9000 \(epoch 1 has 5000\), --strategy blocked \(it has classic\) are ignored: /m,
    );
    assert.doesNotMatch(other.stderr, /--fpr 0/, 'an equal --fpr is not named');
  });

  test('an epoch that grows past its capacity says so, with the slice count', async () => {
    const dir = tempDir();
    const urls = Array.from({ length: 2_500 }, (_, i) => `https://grow.example/${i}`).join('\n');
    const out = await runCli(['add', '--store', dir, '--capacity', '1000'], `${urls}\n`);
    assert.equal(out.code, 0, out.stderr);
    assert.match(
      out.stderr,
      /warning: epoch 1 of scope default grew past its capacity of 1,000 URLs \(~[\d,]+ distinct now\): 2 slices \(was 1\)/,
    );
    const again = await runCli(['add', '--store', dir], `${urls}\n`);
    assert.doesNotMatch(again.stderr, /grew/, 'no growth, no warning');
    const more = Array.from({ length: 3_000 }, (_, i) => `https://grow.example/more/${i}`).join('\n');
    const grown = await runCli(['filter-new', '--store', dir], `${more}\n`);
    assert.match(grown.stderr, /: 3 slices \(was 2\)/);
  });

  test('--no-create refuses a missing store (NOT_FOUND) and creates nothing', async () => {
    const dir = join(tempDir(), 'typo');
    const out = await runCli(['add', '--store', dir, '--no-create'], 'https://a.example/\n');
    assert.equal(out.code, ERROR_CODES.NOT_FOUND, out.stderr);
    assert.match(out.stderr, /^seenstore: error NOT_FOUND: /);
    assert.equal(existsSync(dir), false);
    const created = await runCli(['add', '--store', dir], 'https://a.example/\n');
    assert.equal(created.code, 0);
    assert.match(created.stderr, /seenstore: created store at /, 'not on a terminal: the line too (issue 30)');
    const existing = await runCli(['add', '--store', dir, '--no-create'], 'https://b.example/\n');
    assert.equal(existing.code, 0, existing.stderr);
  });

  test('on a terminal: "created store at DIR", and progress with lines read, rate, new and percent', {
    skip: SCRIPT === undefined ? 'no script(1) to make a terminal' : false,
  }, async () => {
    const cwd = tempDir();
    const file = join(cwd, 'urls.txt');
    writeFileSync(file, `${Array.from({ length: 50_000 }, (_, i) => `https://progress.example/${i}`).join('\n')}\n`);
    const add = await onTerminal(['add', '--store', join(cwd, 'store'), '--batch-size', '1000', file], cwd);
    assert.match(add, new RegExp(`seenstore: created store at ${join(cwd, 'store')}`));
    assert.match(add, /add: [\d,]+ lines read \([\d,]+\/s\), [\d,]+ new, \d+\.\d%/);
    const has = await onTerminal(['has', '--store', join(cwd, 'store'), '--count', file], cwd);
    assert.match(has, /has: [\d,]+ lines read \([\d,]+\/s\), [\d,]+ seen, \d+\.\d%/);
    assert.doesNotMatch(has, /created store/);
    const piped = execFileSync(
      SCRIPT!,
      [
        '-qfec',
        `cat '${file}' | '${process.execPath}' '${CLI}' has --store '${join(cwd, 'store')}' --count`,
        '/dev/null',
      ],
      { cwd },
    ).toString();
    assert.match(piped, /has: [\d,]+ lines read \([\d,]+\/s\), [\d,]+ seen/, 'stdin: progress without a percentage');
    assert.doesNotMatch(piped, /seen, \d+\.\d%/);
  });
});
