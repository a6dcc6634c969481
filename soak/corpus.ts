/**
 * Part 8, the bad-input corpus of issue 7 in full: every input through every command that reads
 * URLs, both skipping and with `--on-invalid fail` (the test suite runs each input and command
 * once, in turn). Each run must end with 0 or INVALID_URL, by no signal, with no stack trace and
 * no raw line on stderr; the store must verify afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ERROR_CODES, SeenStore } from '../src/index.js';
import { CORPUS, urlReadingCommands } from '../test/helpers/bad-input-corpus.js';
import { foreignLines, runCli, type SoakContext } from './context.js';

/** A command that has not finished by then counts as hung. */
const COMMAND_LIMIT_MS = 60_000;

export interface CorpusResult {
  readonly runs: number;
}

export async function badInputCorpus(ctx: SoakContext): Promise<CorpusResult> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-corpus-'));
  const exportFile = join(mkdtempSync(join(tmpdir(), 'soak-corpus-export-')), 'e.ssx');
  const store = await SeenStore.open(dir);
  await store.scope().add(['https://seed.example/1', 'https://seed.example/2']);
  await store.scope('counts', { strategy: 'counting', capacityUrls: 1000 }).add(['https://seed.example/1']);
  await store.scope().export(exportFile);
  await store.close();
  const summaryFile = join(mkdtempSync(join(tmpdir(), 'soak-corpus-summary-')), 'b.sum');
  const summarized = await runCli(
    ctx,
    ['setdiff', 'summarize', '--out', summaryFile],
    Buffer.from('https://seed.example/1\n'),
    COMMAND_LIMIT_MS,
  );
  if (summarized.code !== 0)
    ctx.fail(`corpus: setdiff summarize for the corpus: exit ${summarized.code}: ${summarized.stderr.trim()}`);
  let runs = 0;
  for (const [name, input] of Object.entries(CORPUS)) {
    for (const command of urlReadingCommands(exportFile, summaryFile, join(dirname(summaryFile), 'a.sum'))) {
      for (const extra of [[], ['--on-invalid', 'fail']]) {
        const args = [...command, '--store', dir, ...extra];
        const what = `corpus: ${args.join(' ')} < ${name}`;
        const run = await runCli(ctx, args, input, COMMAND_LIMIT_MS);
        runs++;
        if (run.signal !== null || run.timedOut)
          ctx.fail(`${what}: ended by ${run.timedOut ? 'the time limit' : run.signal}`);
        else if (run.code !== 0 && run.code !== ERROR_CODES.INVALID_URL)
          ctx.fail(`${what}: exit ${run.code}: ${run.stderr.trim()}`);
        else if (/\n\s+at /.test(run.stderr) || foreignLines(run.stderr).length > 0)
          ctx.fail(`${what}: raw lines on stderr: ${run.stderr.slice(0, 300)}`);
      }
    }
    ctx.note(`corpus input ${name} done`);
  }
  const check = await SeenStore.open(dir);
  try {
    if (!(await check.verify()).ok) ctx.fail('corpus: the store does not verify after the whole corpus');
  } finally {
    await check.close();
  }
  return { runs };
}
