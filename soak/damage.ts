/**
 * Part 7, a damaged data file through every command (issue 17, items 3 and 4): a store with two
 * scopes (a plain one with three epochs, a counting one), a snapshot and an export file beside it;
 * STORES damaged copies of its data.mdb, half with a few bytes of one page flipped (a meta page's
 * record, a B-tree page or any page), half truncated (to 0, within the last 64 pages, or anywhere). Every CLI command,
 * read and write, runs on a fresh copy of each damaged store. No command may end by a signal (or
 * hang past its time limit), end with INTERNAL, or, when it only reads, change data.mdb: only
 * answers or typed errors. Reported besides, not failures: raw lines on stderr (LMDB's C code
 * prints some itself, e.g. `Write error: ...`, which JavaScript cannot hold back).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ERROR_CODES } from '../src/index.js';
import { foreignLines, runCli, type CliRun, type SoakContext } from './context.js';

const PAGE_BYTES = 4096;
/** A command that has not finished by then counts as hung. */
const COMMAND_LIMIT_MS = 60_000;
/** Commands in flight at once (the machine has 2 cores). */
const PARALLEL = 2;
const SNAPSHOT = 'before-damage';
/** The exits a command may end with: 0 and the documented codes. */
const TYPED_EXITS = new Set<number>([0, ...Object.values(ERROR_CODES)]);

interface Command {
  readonly name: string;
  readonly args: (store: string, work: string) => string[];
  readonly input?: string;
  /** Reads only: data.mdb must stay byte-identical (issue 17, item 2). */
  readonly readOnly: boolean;
}

export interface DamageResult {
  readonly stores: number;
  readonly flips: number;
  readonly truncations: number;
  readonly commands: number;
  readonly runs: number;
  /** Exit codes (or `signal SIGBUS`, `hung`) and how often. */
  readonly outcomes: Record<string, number>;
  readonly signals: number;
  readonly hung: number;
  /** Exits that are neither 0, a documented code nor a signal's (node's 1 for an uncaught exception). */
  readonly untyped: number;
  readonly internal: number;
  readonly rawLines: number;
  readonly readOnlyChanged: number;
  /** A few of the raw stderr lines and INTERNAL messages seen, for the report. */
  readonly examples: string[];
}

function commands(urls: string, exportFile: string): Command[] {
  const s = (store: string): string[] => ['--store', store];
  return [
    { name: 'filter-new', args: (st) => ['filter-new', ...s(st)], input: urls, readOnly: false },
    { name: 'add', args: (st) => ['add', ...s(st)], input: urls, readOnly: false },
    { name: 'has', args: (st) => ['has', ...s(st), '--epochs', 'all'], input: urls, readOnly: true },
    { name: 'count', args: (st) => ['count', ...s(st), '--scope', 'counting'], input: urls, readOnly: true },
    { name: 'delete', args: (st) => ['delete', ...s(st), '--scope', 'counting'], input: urls, readOnly: false },
    { name: 'diff', args: (st) => ['diff', ...s(st), '--from', '1', '--to', '2'], input: urls, readOnly: true },
    { name: 'diff --against', args: (st) => ['diff', ...s(st), '--against', exportFile], input: urls, readOnly: true },
    { name: 'classify', args: (st) => ['classify', ...s(st)], input: urls, readOnly: true },
    { name: 'epoch list', args: (st) => ['epoch', 'list', ...s(st)], readOnly: true },
    { name: 'epoch show', args: (st) => ['epoch', 'show', '2', ...s(st)], readOnly: true },
    { name: 'epoch rotate', args: (st) => ['epoch', 'rotate', ...s(st)], readOnly: false },
    { name: 'epoch prune', args: (st) => ['epoch', 'prune', ...s(st), '--keep-last', '1'], readOnly: false },
    { name: 'stats', args: (st) => ['stats', ...s(st)], readOnly: true },
    { name: 'export', args: (st, work) => ['export', ...s(st), '--out', join(work, 'out.ssx')], readOnly: true },
    { name: 'import', args: (st) => ['import', ...s(st), '--scope', 'imported', exportFile], readOnly: false },
    {
      name: 'merge --into-epoch',
      args: (st) => ['merge', ...s(st), '--scope', 'merged', '--into-epoch', '1', exportFile],
      readOnly: false,
    },
    {
      name: 'merge --out',
      args: (st, work) => ['merge', ...s(st), '--out', join(work, 'merged.ssx'), exportFile, exportFile],
      readOnly: true,
    },
    { name: 'verify', args: (st) => ['verify', ...s(st)], readOnly: true },
    { name: 'snapshot create', args: (st) => ['snapshot', 'create', ...s(st)], readOnly: false },
    { name: 'snapshot list', args: (st) => ['snapshot', 'list', ...s(st)], readOnly: true },
    { name: 'snapshot restore', args: (st) => ['snapshot', 'restore', SNAPSHOT, ...s(st)], readOnly: false },
    { name: 'snapshot delete', args: (st) => ['snapshot', 'delete', SNAPSHOT, ...s(st)], readOnly: false },
    { name: 'migrate', args: (st) => ['migrate', ...s(st)], readOnly: false },
  ];
}

/** The undamaged store: scope `default` with epochs 1–3, scope `counting`, a snapshot; an export file beside it. */
async function template(ctx: SoakContext, root: string): Promise<{ store: string; exportFile: string; urls: string }> {
  const store = join(root, 'store');
  const exportFile = join(root, 'default-1.ssx');
  const part = (i: number): string => `${ctx.urls.slice(i * 3000, (i + 1) * 3000).join('\n')}\n`;
  const steps: [string[], string][] = [
    [['add', '--store', store, '--capacity', '100000'], part(0)],
    [['epoch', 'rotate', '--store', store], ''],
    [['add', '--store', store], part(1)],
    [['epoch', 'rotate', '--store', store], ''],
    [['add', '--store', store], part(2)],
    [['add', '--store', store, '--scope', 'counting', '--strategy', 'counting', '--capacity', '50000'], part(3)],
    [['export', '--store', store, '--epoch', '1', '--out', exportFile], ''],
    [['snapshot', 'create', '--store', store, SNAPSHOT], ''],
  ];
  for (const [args, input] of steps) {
    const run = await runCli(ctx, args, input, 120_000);
    if (run.code !== 0) throw new Error(`soak: building the damage template: ${args.join(' ')}: ${run.stderr}`);
  }
  // Some URLs of each epoch and some never added: every command has work to do.
  const urls = `${[...ctx.urls.slice(0, 50), ...ctx.urls.slice(3000, 3050), ...ctx.urls.slice(6000, 6050), ...ctx.urls.slice(20_000, 20_050)].join('\n')}\n`;
  return { store, exportFile, urls };
}

/** This lmdb build's page header: the page flags are a little-endian u16 at byte 18. */
const PAGE_FLAGS_OFFSET = 18;
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
/** LMDB's meta record (txn id, root pages of both B-trees, last page) fits in a page's first 200 bytes. */
const META_RECORD_BYTES = 200;
/** Cuts within this many pages of the end are where the open-time check has its slack (docs/errors.md). */
const SLACK_PAGES = 64;

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/**
 * Which page a flip hits: a quarter of them a meta page's record (the open-time check reads only
 * its magic and flags), half a branch or leaf page (the B-trees' structure; most other pages are
 * chunk payloads, which checksums guard), a quarter any page.
 */
function flipTarget(data: Buffer, pages: number): { page: number; span: number } {
  const roll = Math.random();
  if (roll < 0.25) return { page: Math.floor(Math.random() * 2), span: META_RECORD_BYTES };
  if (roll < 0.75) {
    const tree: number[] = [];
    for (let page = 2; page < pages; page++) {
      if ((data.readUInt16LE(page * PAGE_BYTES + PAGE_FLAGS_OFFSET) & (P_BRANCH | P_LEAF)) !== 0) tree.push(page);
    }
    if (tree.length > 0) return { page: pick(tree), span: PAGE_BYTES };
  }
  return { page: Math.floor(Math.random() * pages), span: PAGE_BYTES };
}

/**
 * Where a cut lands: a tenth of the time at 0 bytes, four tenths within the last 64 pages (1 to 64
 * pages short, at a page boundary or inside a page: the open-time check's slack), the rest
 * anywhere in the file.
 */
function cutLength(bytes: number, pages: number): number {
  const roll = Math.random();
  if (roll < 0.1) return 0;
  if (roll < 0.5) {
    const short = 1 + Math.floor(Math.random() * Math.min(SLACK_PAGES, pages - 1));
    const inside = Math.random() < 0.5 ? 0 : Math.floor(Math.random() * PAGE_BYTES);
    return Math.max(0, (pages - short) * PAGE_BYTES + inside);
  }
  return Math.floor(Math.random() * bytes);
}

/** Damages `file` in place: a few bytes of one page flipped, or the file cut short. Says what it did. */
function damage(file: string, flip: boolean): string {
  const bytes = statSync(file).size;
  const pages = Math.max(1, Math.floor(bytes / PAGE_BYTES));
  if (flip) {
    const data = readFileSync(file);
    const { page, span } = flipTarget(data, pages);
    const count = 1 + Math.floor(Math.random() * 4);
    const at: number[] = [];
    for (let i = 0; i < count; i++) {
      const offset = page * PAGE_BYTES + Math.floor(Math.random() * span);
      data[offset] = data[offset]! ^ (1 + Math.floor(Math.random() * 255));
      at.push(offset);
    }
    writeFileSync(file, data);
    return `page ${page} of ${pages}: bytes ${at.join(', ')} flipped`;
  }
  const length = cutLength(bytes, pages);
  truncateSync(file, length);
  return `truncated from ${bytes} to ${length} bytes`;
}

function sameFile(path: string, bytes: Buffer): boolean {
  try {
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

function outcomeOf(run: CliRun): string {
  if (run.timedOut) return 'hung';
  if (run.signal !== null) return `signal ${run.signal}`;
  return `exit ${run.code}`;
}

/** The counts of a DamageResult, kept as the commands finish. */
class Tally {
  readonly outcomes: Record<string, number> = {};
  readonly examples: string[] = [];
  runs = 0;
  signals = 0;
  hung = 0;
  untyped = 0;
  internal = 0;
  rawLines = 0;
  readOnlyChanged = 0;

  constructor(private readonly ctx: SoakContext) {}

  record(what: string, command: Command, run: CliRun, dataChanged: boolean): void {
    const outcome = outcomeOf(run);
    this.runs++;
    this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + 1;
    if (run.timedOut) {
      this.hung++;
      this.ctx.fail(`${what}: still running after ${COMMAND_LIMIT_MS / 1000} s`);
    } else if (run.signal !== null || run.code! >= 128) {
      this.signals++;
      this.ctx.fail(`${what}: ended by ${run.signal ?? `exit ${run.code}`}`);
    } else if (!TYPED_EXITS.has(run.code!)) {
      this.untyped++;
      this.ctx.fail(`${what}: exit ${run.code}, not a documented code: ${run.stderr.trim().split('\n')[0]}`);
    }
    if (run.code === ERROR_CODES.INTERNAL) {
      this.internal++;
      this.ctx.fail(
        `${what}: INTERNAL where damage must be a typed error: ${(/seenstore: error [^\n]*/.exec(run.stderr)?.[0] ?? run.stderr.trim()).slice(0, 200)}`,
      );
      this.example(
        `${command.name}: ${(/seenstore: error [^\n]*/.exec(run.stderr)?.[0] ?? run.stderr.trim()).slice(0, 200)}`,
      );
    }
    const raw = foreignLines(run.stderr);
    this.rawLines += raw.length;
    if (raw.length > 0) this.example(`${command.name} (${outcome}): raw line ${JSON.stringify(raw[0]!.slice(0, 120))}`);
    if (command.readOnly && dataChanged) {
      this.readOnlyChanged++;
      this.ctx.fail(`${what}: a read-only command changed data.mdb`);
    }
  }

  example(text: string): void {
    if (this.examples.length < 12) this.examples.push(text);
  }
}

/** Runs `command` on a fresh copy of the damaged store; says whether data.mdb changed. */
async function runOnCopy(
  ctx: SoakContext,
  root: string,
  damaged: string,
  command: Command,
): Promise<{ run: CliRun; dataChanged: boolean }> {
  const work = mkdtempSync(join(root, 'run-'));
  try {
    const store = join(work, 'store');
    cpSync(damaged, store, { recursive: true });
    const before = readFileSync(join(store, 'data.mdb'));
    const run = await runCli(ctx, command.args(store, work), command.input ?? '', COMMAND_LIMIT_MS);
    return { run, dataChanged: !sameFile(join(store, 'data.mdb'), before) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export async function damagedStores(ctx: SoakContext, stores: number): Promise<DamageResult> {
  const root = mkdtempSync(join(tmpdir(), 'soak-damage-'));
  const base = await template(ctx, root);
  const list = commands(base.urls, base.exportFile);
  const tally = new Tally(ctx);
  let flips = 0;
  for (let n = 0; n < stores; n++) {
    const flip = n % 2 === 0;
    if (flip) flips++;
    const damaged = join(root, `damaged-${n}`);
    cpSync(base.store, damaged, { recursive: true });
    const how = damage(join(damaged, 'data.mdb'), flip);
    const queue = [...list];
    const worker = async (): Promise<void> => {
      for (let command = queue.shift(); command !== undefined; command = queue.shift()) {
        const { run, dataChanged } = await runOnCopy(ctx, root, damaged, command);
        tally.record(`damaged store ${n} (${how}): ${command.name}`, command, run, dataChanged);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    rmSync(damaged, { recursive: true, force: true });
    ctx.note(`damaged store ${n + 1}/${stores} (${how}): ${list.length} commands run`);
  }
  rmSync(root, { recursive: true, force: true });
  const { outcomes, examples, runs, signals, hung, untyped, internal, rawLines, readOnlyChanged } = tally;
  return {
    stores,
    flips,
    truncations: stores - flips,
    commands: list.length,
    runs,
    outcomes,
    signals,
    hung,
    untyped,
    internal,
    rawLines,
    readOnlyChanged,
    examples,
  };
}
