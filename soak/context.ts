import { spawn } from 'node:child_process';

/** What every part of the soak shares: the CLI, the URL lists and the failure log. */
export interface SoakContext {
  /** dist/src/cli/bin.cjs */
  readonly cli: string;
  /** The shared URL lists, deduplicated. */
  readonly urls: readonly string[];
  /** Records a failure (the soak then exits 1) and prints it at once. */
  readonly fail: (message: string) => void;
  /** A progress line on stderr. */
  readonly note: (message: string) => void;
}

export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Killed by the soak after its time limit. */
  readonly timedOut: boolean;
}

/**
 * Runs the CLI with `args` and `input` on stdin; SIGKILLs it after `limitMs`. `wrapper` is a
 * command line that ends with the node binary (e.g. strace's), to run the CLI under it.
 */
export function runCli(
  ctx: SoakContext,
  args: readonly string[],
  input: string | Buffer,
  limitMs: number,
  wrapper?: readonly string[],
): Promise<CliRun> {
  return new Promise((done) => {
    const [command, ...before] = wrapper ?? [process.execPath];
    const child = spawn(command!, [...before, ctx.cli, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(input);
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, limitMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr, timedOut });
    });
  });
}

/** How seenstore's own stderr lines start: its errors, JSON, and the summaries of its commands. */
const OWN_LINE =
  /^(seenstore[: ]|\{|(read|seen|unseen|invalid|epoch|against|the filter's|exported|imported|merged|restored|migrated|rotated|pruned|created|deleted|snapshot|wrote|summary of) )/;

/**
 * Lines on stderr that are not seenstore's own (`mdb_page_touch error`, a libc or node message):
 * raw lines a user should never see. The soak reports them with examples.
 */
export function foreignLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.length > 0 && !OWN_LINE.test(line));
}

/** The URLs among `urls` that the store at `dir` does not see (the CLI's `has --invert`). */
export async function unseen(
  ctx: SoakContext,
  dir: string,
  urls: readonly string[],
  scope = 'default',
): Promise<string[] | string> {
  if (urls.length === 0) return [];
  const run = await runCli(ctx, ['has', '--store', dir, '--scope', scope, '--invert'], `${urls.join('\n')}\n`, 120_000);
  if (run.code !== 0) return `has --invert exited ${run.code ?? run.signal}: ${run.stderr.trim()}`;
  return run.stdout.split('\n').filter((line) => line.length > 0);
}
