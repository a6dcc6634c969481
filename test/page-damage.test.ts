import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeSync,
  closeSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { walkPages } from '../src/store/lmdb/page-walk.js';
import { CLI, runCli, type CliResult } from './helpers/cli.js';
import { sharedUrls } from './helpers/data.js';
import { structuralPlaces } from './helpers/lmdb-pages.js';
import { gridPairRuns } from './helpers/scale.js';
import { tempDir } from './helpers/tmp.js';

const TAIL_URL = 'https://tail.example/not-yet-checkpointed';
const PAGE_BYTES = 4096;

/**
 * A store with a sealed and an open epoch in scope `v`, a counting scope `c`, and a journal tail:
 * the last adds of both scopes were committed by a process killed before any checkpoint.
 */
async function storeWithTail(): Promise<string> {
  pristine ??= makeStoreWithTail(PRISTINE_DIR);
  await pristine;
  const dir = tempDir();
  cpSync(PRISTINE_DIR, dir, { recursive: true });
  return dir;
}

/** The store storeWithTail copies, made once per file (each test damages a copy of its own); removed when the file ends. */
const PRISTINE_DIR = tempDir('seenstore-pristine-');
let pristine: Promise<void> | undefined;

async function makeStoreWithTail(dir: string): Promise<void> {
  const store = await SeenStore.open(dir);
  // Epoch 1 sized for 10M URLs: its chunks need branch pages, so child pointers are among the structural places.
  const scope = store.scope('v', { capacityUrls: 10_000_000 });
  await scope.add(sharedUrls('crawl-sitelist-15k.txt'));
  await scope.rotate();
  await scope.add(sharedUrls('crawl-benign-35k.txt').slice(0, 5000));
  await store.scope('c', { strategy: 'counting', capacityUrls: 10_000 }).add(['https://c.example/1']);
  await store.close();
  const script = `
    import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const store = await SeenStore.open(process.argv[1]);
    await store.scope('v').add([${JSON.stringify(TAIL_URL)}]);
    await store.scope('c').add([${JSON.stringify(TAIL_URL)}]);
    process.kill(process.pid, 'SIGKILL');`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir]);
  assert.equal(child.signal, 'SIGKILL', child.stderr.toString());
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Every file and directory under `dir` with its size: what a command that only reads must leave alone. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return `${path.slice(dir.length)} ${entry.isFile() && entry.name !== 'lock.mdb' ? statSync(path).size : ''}`;
    })
    .sort();
}

/** The read-only commands with their input, each paired with what it must print to show it saw the journal tail. */
function readOnlyCommands(
  dir: string,
  out: string,
): { args: string[]; input: string; sawTail: (r: CliResult) => boolean }[] {
  const store = ['--store', dir];
  return [
    { args: ['has', ...store, '--scope', 'v'], input: `${TAIL_URL}\n`, sawTail: (r) => r.stdout === `${TAIL_URL}\n` },
    {
      args: ['stats', ...store, '--json'],
      input: '',
      sawTail: (r) =>
        JSON.parse(r.stdout).scopes.find((s: { scope: string }) => s.scope === 'v').epochs[1].submitted === 5001,
    },
    {
      args: ['epoch', 'list', ...store, '--scope', 'v', '--json'],
      input: '',
      sawTail: (r) => JSON.parse(r.stdout).epochs[1].journalRecords === 1,
    },
    {
      args: ['epoch', 'show', '2', ...store, '--scope', 'v', '--json'],
      input: '',
      sawTail: (r) => JSON.parse(r.stdout).submitted === 5001,
    },
    {
      args: ['classify', ...store, '--scope', 'v'],
      input: `${TAIL_URL}\n`,
      sawTail: (r) => r.stdout === `new\t${TAIL_URL}\n`,
    },
    {
      args: ['diff', ...store, '--scope', 'v', '--from', '1', '--to', '2'],
      input: `${TAIL_URL}\n`,
      sawTail: (r) => r.stdout === `only-to\t${TAIL_URL}\n`,
    },
    {
      args: ['count', ...store, '--scope', 'c'],
      input: `${TAIL_URL}\n`,
      sawTail: (r) => r.stdout === `1\t${TAIL_URL}\n`,
    },
    { args: ['verify', ...store, '--json'], input: '', sawTail: (r) => JSON.parse(r.stdout).journalRecords === 2 },
    {
      args: ['export', ...store, '--scope', 'v', '--out', out],
      input: '',
      sawTail: (r) => /exported v\/2/.test(r.stdout),
    },
  ];
}

/**
 * Runs the CLI in a private mount namespace where `dir` is bind-mounted read-only (`unshare -m`):
 * even root cannot write there. Undefined when this system cannot make such a mount.
 */
function runOnReadOnlyMount(dir: string, args: readonly string[], input: string): CliResult | undefined {
  const quoted = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const script = `mount --bind ${quoted(dir)} ${quoted(dir)} && mount -o remount,bind,ro ${quoted(dir)} && ! touch ${quoted(join(dir, '.probe'))} 2>/dev/null || exit 99; exec ${quoted(process.execPath)} ${quoted(CLI)} ${args.map(quoted).join(' ')}`;
  const r = spawnSync('unshare', ['-m', 'sh', '-c', script], { input });
  if (r.error !== undefined || r.status === 99 || (r.status === 1 && /unshare/.test(r.stderr.toString())))
    return undefined;
  return { code: r.status, signal: r.signal, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe('read-only commands', () => {
  test('leave data.mdb byte-identical and the directory as it was, and see the journal tail', async () => {
    const dir = await storeWithTail();
    const data = join(dir, 'data.mdb');
    const before = sha256(data);
    const files = listing(dir);
    const out = join(tempDir(), 'v.ssx');
    for (const { args, input, sawTail } of readOnlyCommands(dir, out)) {
      const r = await runCli(args, input);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(sawTail(r), `${args.join(' ')} did not see the journal tail: ${r.stdout}`);
      assert.equal(sha256(data), before, `${args.join(' ')} changed data.mdb`);
      assert.deepEqual(listing(dir), files, `${args.join(' ')} changed the store directory`);
    }
    // The export holds the tail: the other side's filter has it.
    const against = await runCli(['diff', '--against', out], `${TAIL_URL}\n`);
    assert.equal(against.stdout, '');
  });

  test('the library: readOnly opens never write, reads see the tail, every write is USAGE', async () => {
    const dir = await storeWithTail();
    const before = sha256(join(dir, 'data.mdb'));
    const files = listing(dir);
    const store = await SeenStore.open(dir, { readOnly: true });
    const scope = store.scope('v');
    assert.deepEqual(await scope.has([TAIL_URL]), [true]);
    const writes: [string, () => unknown][] = [
      ['addIfAbsent', () => scope.addIfAbsent(['https://w.example/'])],
      ['add', () => scope.add(['https://w.example/'])],
      ['rotate', () => scope.rotate()],
      ['prune', () => scope.prune({ keepLast: 1 })],
      ['checkpoint', () => scope.checkpoint()],
      ['delete', () => store.scope('c').delete([TAIL_URL])],
      ['store checkpoint', () => store.checkpoint()],
      ['snapshot', () => store.snapshot('x')],
      ['a new scope', () => store.scope('new').add(['https://w.example/'])],
    ];
    for (const [name, write] of writes) {
      await assert.rejects(
        async () => write(),
        (error: { code?: string }) => error.code === 'USAGE',
        name,
      );
    }
    await store.close();
    assert.equal(sha256(join(dir, 'data.mdb')), before);
    assert.deepEqual(listing(dir), files, 'no file created, no checkpoint lock taken');
    await assert.rejects(
      SeenStore.open(join(dir, 'missing'), { readOnly: true }),
      (error: { code?: string }) => error.code === 'NOT_FOUND',
    );
    assert.equal(existsSync(join(dir, 'missing')), false, 'a read-only open creates nothing');
  });

  test('a read-only mount serves reads (has, stats, verify, export elsewhere)', async (t) => {
    const dir = await storeWithTail();
    const out = join(tempDir(), 'v.ssx');
    const probe = runOnReadOnlyMount(dir, ['stats', '--store', dir], '');
    if (probe === undefined) {
      t.skip('this system cannot bind-mount read-only in a private namespace (unshare -m needs root)');
      return;
    }
    assert.equal(probe.code, 0, probe.stderr);
    for (const { args, input, sawTail } of readOnlyCommands(dir, out)) {
      const r = runOnReadOnlyMount(dir, args, input)!;
      assert.equal(r.code, 0, `${args.join(' ')} on a read-only mount: ${r.stderr}`);
      assert.ok(sawTail(r), `${args.join(' ')}: ${r.stdout}`);
    }
    const writer = runOnReadOnlyMount(dir, ['filter-new', '--store', dir, '--scope', 'v'], 'https://w.example/\n')!;
    assert.equal(writer.code, 10, `a writer on a read-only mount is IO_ERROR: ${writer.stderr}`);
    assert.equal(writer.stdout, '', 'nothing printed as new that was not stored');
  });
});

/** The commands run on a damaged store: the read-only ones first, then a writer. */
const DAMAGE_COMMANDS: readonly (readonly string[])[] = [
  ['stats'],
  ['has', '--scope', 'v'],
  ['verify'],
  ['filter-new', '--scope', 'v'],
];

/**
 * Every command answers (0) or exits STORE_CORRUPT (6), never by a signal; the read-only ones
 * change nothing. `runs(i)` picks which of DAMAGE_COMMANDS run (all by default).
 */
async function assertNoCrash(
  dir: string,
  what: string,
  mustRefuse: boolean,
  runs: (i: number) => boolean = () => true,
): Promise<void> {
  const data = join(dir, 'data.mdb');
  const before = existsSync(data) ? sha256(data) : '';
  for (const [i, args] of DAMAGE_COMMANDS.entries()) {
    if (!runs(i)) continue;
    const r = await runCli([...args, '--store', dir], 'https://damage.example/\nhttps://www.google.com/\n');
    const line = `${what}: ${args.join(' ')} -> ${r.signal ?? r.code}: ${r.stderr.trim()}`;
    assert.equal(r.signal, null, line);
    assert.ok(r.code === 0 || r.code === 6, line);
    if (mustRefuse) assert.equal(r.code, 6, line);
    if (r.code === 6 && args[0] !== 'verify')
      assert.match(r.stderr, /^seenstore: error STORE_CORRUPT: [^\n]+\n$/, line);
    assert.doesNotMatch(r.stderr, /mdb_|MDB_/, `${line}: raw LMDB text`);
    if (args[0] === 'filter-new') assert.ok(r.code === 0 || r.stdout === '', `${line}: printed URLs and failed`);
    else if (existsSync(data)) assert.equal(sha256(data), before, `${line}: a read-only command changed data.mdb`);
  }
}

describe('a damaged data.mdb', () => {
  test('truncated 64, 40, 10 and 1 pages short: refused as STORE_CORRUPT naming the cut, never a signal', async () => {
    const source = await storeWithTail();
    // Cut from the highest page a database uses, not from the file's end: LMDB may leave unused
    // pages past it (the file grows ahead of its use), and a cut of those damages nothing.
    const used = walkPages(join(source, 'data.mdb')).highestUsedPage + 1;
    assert.ok(used > 70, `the store must use more pages than the longest cut (${used})`);
    for (const short of [64, 40, 10, 1]) {
      const dir = tempDir();
      cpSync(source, dir, { recursive: true });
      truncateSync(join(dir, 'data.mdb'), (used - short) * PAGE_BYTES);
      await assertNoCrash(dir, `${short} pages short`, true);
      const report = JSON.parse((await runCli(['verify', '--store', dir, '--json'])).stdout);
      assert.match(report.damage[0].problem, /beyond the end of the file|cut short/, JSON.stringify(report.damage));
    }
  });

  test("truncated to 0 bytes, or removed, beside the store's other files: STORE_CORRUPT, not a new store", async () => {
    const source = await storeWithTail();
    for (const cut of ['empty', 'missing'] as const) {
      const dir = tempDir();
      cpSync(source, dir, { recursive: true });
      if (cut === 'empty') truncateSync(join(dir, 'data.mdb'), 0);
      else rmSync(join(dir, 'data.mdb'));
      await assertNoCrash(dir, `data.mdb ${cut}`, true);
      const again = await runCli(
        ['filter-new', '--store', dir, '--scope', 'v'],
        `${sharedUrls('crawl-sitelist-15k.txt')[0]}\n`,
      );
      assert.equal(again.stdout, '', 'no acknowledged URL printed again');
      assert.match(again.stderr, new RegExp(`data.mdb is ${cut} while the store's lock.mdb`));
    }
  });

  test('snapshot restore repairs a cut or emptied store, keeping the damaged file as a snapshot', async () => {
    const dir = await storeWithTail();
    assert.equal((await runCli(['snapshot', 'create', 'good', '--store', dir])).code, 0);
    for (const size of [20 * PAGE_BYTES, 0]) {
      truncateSync(join(dir, 'data.mdb'), size);
      const restore = await runCli(['snapshot', 'restore', 'good', '--store', dir]);
      assert.equal(restore.code, 0, restore.stderr);
      const has = await runCli(['has', '--store', dir, '--scope', 'v'], `${TAIL_URL}\n`);
      assert.equal(has.stdout, `${TAIL_URL}\n`, has.stderr);
    }
    const list = JSON.parse((await runCli(['snapshot', 'list', '--store', dir, '--json'])).stdout) as {
      reason: string;
      bytes: number;
    }[];
    assert.deepEqual(
      list.filter((s) => s.reason === 'pre-restore (damaged)').map((s) => s.bytes),
      [20 * PAGE_BYTES, 0],
    );
  });

  test('flipped bytes at structural places (page headers, node offsets, child pointers, overflow page numbers): an answer or STORE_CORRUPT, never a signal', async () => {
    const source = await storeWithTail();
    const places = structuralPlaces(join(source, 'data.mdb'));
    // One place of each kind (the same field on another page adds little), spread over the pages.
    const kinds = new Map<string, (typeof places)[number]>();
    for (const place of places) kinds.set(place.what.replace(/\d+/g, 'N').replace(/ \(\w+\)/, ''), place);
    assert.ok(kinds.size >= 15, [...kinds.keys()].join(', '));
    assert.ok(
      [...kinds.keys()].some((kind) => kind.includes('child pointer')),
      'the store has branch pages',
    );
    // `npm test` runs half the commands on each place, every command on every other kind (stats
    // and verify on one, has and filter-new on the next); `npm run test:full` all four on each.
    for (const [k, place] of [...kinds.values()].entries()) {
      const dir = tempDir();
      cpSync(source, dir, { recursive: true });
      const fd = openSync(join(dir, 'data.mdb'), 'r+');
      const byte = Buffer.alloc(1);
      readSync(fd, byte, 0, 1, place.offset);
      byte[0] = byte[0]! ^ 0x7c;
      writeSync(fd, byte, 0, 1, place.offset);
      closeSync(fd);
      await assertNoCrash(dir, `${place.what} (byte ${place.offset})`, false, (c) => gridPairRuns(k, c % 2, 2));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the walker finds every page the store uses and reports damage with its page and database', async () => {
    const dir = await storeWithTail();
    const path = join(dir, 'data.mdb');
    const sound = walkPages(path);
    assert.deepEqual(sound.damage, []);
    assert.ok(sound.pagesRead > 5 && sound.highestUsedPage < statSync(path).size / PAGE_BYTES);
    const child =
      structuralPlaces(path).find((p) => p.what.includes('child pointer')) ??
      structuralPlaces(path).find((p) => p.what.includes('overflow page number'))!;
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from([0xff]), 0, 1, child.offset + 3);
    closeSync(fd);
    const damaged = walkPages(path);
    assert.equal(damaged.damage.length, 1, JSON.stringify(damaged.damage));
    assert.match(damaged.damage[0]!.problem, /points to page \d+, outside pages 2\.\.\d+/);
    assert.ok(['main', 'meta', 'chunks', 'journal', 'free'].includes(damaged.damage[0]!.db));
  });
});
