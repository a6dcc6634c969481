import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ERROR_CODES, SeenStore } from '../src/index.js';
import { CLI, CLI_MODULES, collectCli, runCli, type CliResult } from './helpers/cli.js';
import { ROOT, sharedUrls } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

const SITELIST = sharedUrls('crawl-sitelist-15k.txt');
const FAULTS = pathToFileURL(join(ROOT, 'dist', 'src', 'store', 'faults.js')).href;

/**
 * A store whose scope has sealed epochs 1-3 and an open epoch 4, each of 5M URLs' capacity (a
 * 6 MB filter: past the export writer's first safe point), and an export file of epoch 1.
 */
async function storeWithEpochs(): Promise<{ dir: string; exportPath: string }> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  const scope = store.scope('default', { capacityUrls: 5_000_000, fprTarget: 0.01 });
  for (let epoch = 1; epoch <= 3; epoch++) {
    await scope.add(SITELIST.slice((epoch - 1) * 2000, epoch * 2000));
    await scope.rotate({ capacityUrls: 5_000_000 });
  }
  const exportPath = join(tempDir(), 'epoch1.ssx');
  await scope.export(exportPath, 1);
  await store.close();
  return { dir, exportPath };
}

/**
 * Runs the CLI with a fault hook that sends `signal` to the process itself the first time `point`
 * is reached: the signal then arrives mid-operation, at a known place, every run. The child is
 * killed if it has not finished within `limitMs`.
 */
function runSignalled(
  point: string,
  signal: 'SIGINT' | 'SIGTERM',
  args: readonly string[],
  limitMs = 30_000,
): Promise<CliResult> {
  const script = `
    import { setFaultHook } from ${JSON.stringify(FAULTS)};
    let sent = false;
    setFaultHook((reached) => {
      if (reached !== ${JSON.stringify(point)} || sent) return;
      sent = true;
      process.stderr.write('signalled at ${point}\\n');
      process.kill(process.pid, ${JSON.stringify(signal)});
    });
    process.argv = [process.argv[0], ${JSON.stringify(CLI_MODULES)}, ...process.argv.slice(1)];
    await import(${JSON.stringify(pathToFileURL(CLI_MODULES).href)});`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  return collectCli(child).finally(() => clearTimeout(timer));
}

function assertStopped(out: CliResult, point: string, code: number): void {
  assert.match(out.stderr, new RegExp(`signalled at ${point}`), `the operation never reached ${point}`);
  assert.equal(out.code, code, `exit ${out.code} (${out.signal})\n${out.stderr}`);
  assert.match(out.stderr, /seenstore: error INTERRUPTED: .*stopped \(SIG(INT|TERM)\) at a safe point/);
}

function leftovers(dir: string): string[] {
  return readdirSync(dir).filter((name) => /\.tmp-|\.restoring-|^\.deleting-/.test(name));
}

async function verifyClean(dir: string): Promise<void> {
  const verified = await runCli(['verify', '--store', dir]);
  assert.equal(verified.code, 0, verified.stdout + verified.stderr);
}

describe('bounded export-file reading', () => {
  test('a device, a FIFO or a directory given as an export file is refused at once, without reading it', async () => {
    const { dir } = await storeWithEpochs();
    const fifo = join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    const directory = tempDir();
    for (const path of ['/dev/zero', fifo, directory]) {
      for (const args of [
        ['import', path, '--scope', 'x'],
        ['verify', path],
        ['diff', '--against', path],
        ['merge', path, '--out', join(tempDir(), 'm.ssx')],
      ]) {
        const started = Date.now();
        const child = spawn(process.execPath, [CLI, ...args, '--store', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
        child.stdin.end('https://a.example/\n');
        // Reading /dev/zero whole grows without bound: stop such a run long before it hurts.
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        const out = await collectCli(child).finally(() => clearTimeout(timer));
        const tookMs = Date.now() - started;
        assert.equal(
          out.code,
          ERROR_CODES.USAGE,
          `${args.join(' ')}: exit ${out.code} (${out.signal}) after ${tookMs} ms\n${out.stderr}`,
        );
        assert.match(out.stderr, /is (a device|a FIFO|a directory); give the path of an export file/);
        // A refusal costs a command's start (0.3 s here, over a second on a loaded CI machine); a
        // read of /dev/zero or of a FIFO without a writer would run into the kill above.
        assert.ok(tookMs < 4_000, `${args.join(' ')} took ${tookMs} ms`);
      }
    }
  });

  test('a file larger than its header allows is refused before its body is read', async () => {
    const { exportPath } = await storeWithEpochs();
    const padded = join(tempDir(), 'padded.ssx');
    copyFileSync(exportPath, padded);
    appendFileSync(padded, Buffer.alloc(8 * 2 ** 20));
    const out = await runCli(['verify', padded]);
    assert.equal(out.code, ERROR_CODES.STORE_CORRUPT, out.stdout + out.stderr);
    assert.match(out.stdout, /more than the \d+ its header's filters can take/);
    assert.equal((await runCli(['verify', exportPath])).code, 0, 'the file itself is sound');
  });
});

describe('SIGINT and SIGTERM stop admin commands at a safe point', () => {
  test('import: stopped between chunk transactions, exit 143, no scope and no data left', async () => {
    const { dir, exportPath } = await storeWithEpochs();
    const chunksBefore = await chunksOf(dir);
    const out = await runSignalled('import:mid-chunks', 'SIGTERM', [
      'import',
      exportPath,
      '--scope',
      'copy',
      '--store',
      dir,
    ]);
    assertStopped(out, 'import:mid-chunks', 143);
    const store = await SeenStore.open(dir);
    assert.deepEqual(await store.scopeNames(), ['default']);
    const report = await store.verify();
    assert.ok(report.ok, JSON.stringify(report.damage));
    assert.equal(report.chunks, chunksBefore, 'no chunk of the stopped import is left');
    await store.close();
    const again = await runCli(['import', exportPath, '--scope', 'copy', '--store', dir]);
    assert.equal(again.code, 0, again.stderr);
  });

  test('import and verify of an export file: stopped while reading it, exit 130', async () => {
    const { dir, exportPath } = await storeWithEpochs();
    assertStopped(
      await runSignalled('export:mid-read', 'SIGINT', ['import', exportPath, '--scope', 'copy', '--store', dir]),
      'export:mid-read',
      130,
    );
    assertStopped(await runSignalled('export:mid-read', 'SIGINT', ['verify', exportPath]), 'export:mid-read', 130);
    const store = await SeenStore.open(dir);
    assert.deepEqual(await store.scopeNames(), ['default']);
    await store.close();
  });

  test('export and merge --out: stopped mid-write, exit 143 / 130, no file and no temporary file', async () => {
    const { dir, exportPath } = await storeWithEpochs();
    const outDir = tempDir();
    const exported = join(outDir, 'e.ssx');
    assertStopped(
      await runSignalled('export:mid-write', 'SIGTERM', ['export', '--epoch', '2', '--out', exported, '--store', dir]),
      'export:mid-write',
      143,
    );
    const merged = join(outDir, 'm.ssx');
    assertStopped(
      await runSignalled('export:mid-write', 'SIGINT', ['merge', exportPath, '--out', merged]),
      'export:mid-write',
      130,
    );
    assert.deepEqual(readdirSync(outDir), [], 'neither file nor temporary file');
    assert.equal(
      (await runCli(['merge', exportPath, '--out', merged])).code,
      0,
      'the same merge runs to the end unsignalled',
    );
  });

  test('epoch prune: stopped between epochs, exit 130; the epoch it was dropping is dropped whole, the rest kept', async () => {
    const { dir } = await storeWithEpochs();
    const out = await runSignalled('prune:mid-delete', 'SIGINT', [
      'epoch',
      'prune',
      '--keep-last',
      '1',
      '--store',
      dir,
    ]);
    assertStopped(out, 'prune:mid-delete', 130);
    assert.match(out.stderr, /after dropping epoch 1/);
    const list = await runCli(['epoch', 'list', '--json', '--store', dir]);
    assert.deepEqual(
      JSON.parse(list.stdout).epochs.map((e: { epoch: number }) => e.epoch),
      [2, 3, 4],
    );
    await verifyClean(dir);
  });

  test('snapshot create: stopped after the copy, exit 130, no snapshot and no temporary directory', async () => {
    const { dir } = await storeWithEpochs();
    const out = await runSignalled('snapshot:after-copy', 'SIGINT', ['snapshot', 'create', 'stopped', '--store', dir]);
    assertStopped(out, 'snapshot:after-copy', 130);
    const root = join(dir, 'snapshots');
    assert.deepEqual(existsSync(root) ? readdirSync(root) : [], []);
    assert.deepEqual(leftovers(dir), []);
    await verifyClean(dir);
  });
});

/** Chunks in the store, as verify counts them. */
async function chunksOf(dir: string): Promise<number> {
  const out = await runCli(['verify', '--json', '--store', dir]);
  return (JSON.parse(out.stdout) as { chunks: number }).chunks;
}
