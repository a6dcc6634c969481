import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { parseEpochSpec } from '../epochs/epoch-spec.js';
import { STRATEGY_HELP, parseStrategy } from '../filters/strategy.js';
import { NORMALIZE_MODES } from '../url/normalize.js';
import { DURATION_HELP, parseDuration } from './duration.js';
import { parseFpr, parseSeeds, validated } from './parse.js';
import { SERVE_FLAGS } from './serve-flags.js';
import { count, examples, inputOptions, planOptions, redeliverOption } from './command-options.js';
import { addFrontierCommands } from './frontier-program.js';
import { addStoreCommands } from './store-program.js';

/*
 * The command line. Command modules (and through them the store and LMDB) are imported only when
 * their command runs, so `--version`, `--help` and usage errors cost no more than commander.
 * Settings made on the program before its commands are added (exitOverride, output, help) are
 * inherited by every subcommand.
 */

/** The package's version, from the package.json this file ships in (dist/src/cli -> the package root). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

const epochsOption = (what: string): Option =>
  new Option('--epochs <spec>', `current (default), previous, N, N..M, last:K or all${what}`).argParser(
    validated(parseEpochSpec),
  );

function addUrlCommands(program: Command): void {
  examples(
    redeliverOption(planOptions(inputOptions(program.command('filter-new [file]'), true)))
      .description('print each URL (FILE or stdin, one per line) not seen before, and record it')
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/filter-new.js')).filterNew(file, command),
      ),
    [
      'extract-links pages/*.html | seenstore --scope example.org filter-new | fetcher',
      'seenstore --scope example.org filter-new --capacity 5e6 --fpr 0.001 links.txt > to-fetch.txt',
    ],
  );
  examples(
    planOptions(inputOptions(program.command('add [file]'), true))
      .description('record URLs; prints read, new, already seen and invalid counts (stderr; --json: stdout)')
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/add.js')).add(file, command),
      ),
    ['seenstore --scope example.org add fetched.txt', 'cat fetched-*.txt | seenstore --scope example.org --json add'],
  );
  examples(
    inputOptions(program.command('has [file]'), false)
      .description('print the input URLs that are (probably) seen; never creates a store or scope')
      .option('--invert', 'print the unseen URLs instead')
      .option('--count', 'print only the seen, unseen and invalid counts (on stdout)')
      .addOption(epochsOption(''))
      .addOption(
        new Option('--mode <mode>', 'any (default): seen in one of the epochs; all: seen in every one').choices([
          'any',
          'all',
        ]),
      )
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/has.js')).has(file, command),
      ),
    [
      'seenstore --scope example.org has --invert < candidates.txt',
      'seenstore --scope example.org has --epochs last:3 --count links.txt',
    ],
  );
  examples(
    inputOptions(program.command('count [file]'), false)
      .description('counting scopes: print N<TAB>URL, how many times each input URL was added (minus deletes)')
      .addOption(epochsOption(' (counts are summed)'))
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/count.js')).countCommand(file, command),
      ),
    ['seenstore --scope jobs count --epochs all urls.txt'],
  );
  examples(
    inputOptions(program.command('delete [file]'), true)
      .description('counting scopes: take one occurrence of each input URL out of the open epoch')
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/count.js')).deleteCommand(file, command),
      ),
    ['seenstore --scope jobs delete finished.txt'],
  );
  const epochArg = validated(parseEpochSpec);
  examples(
    inputOptions(program.command('diff [file]'), false)
      .description(
        'compare two epochs over the input URLs (both, only-from, only-to, neither), or print the URLs another machine has not seen (--against)',
      )
      .option('--against <export-file>', "another machine's export: print the input URLs it has not seen")
      .addOption(new Option('--from <epoch>', 'epoch A: N, current or previous').argParser(epochArg))
      .addOption(new Option('--to <epoch>', 'epoch B: N, current or previous').argParser(epochArg))
      .addOption(
        new Option('--print <category>', 'print only the URLs of one category').choices([
          'both',
          'only-from',
          'only-to',
          'neither',
        ]),
      )
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/diff.js')).diff(file, command),
      ),
    [
      'seenstore --scope example.org diff --from previous --to current --print only-to < crawl-2.txt',
      'seenstore diff --against their-epoch.ssx < our-urls.txt > send-them.txt',
    ],
  );
  examples(
    inputOptions(program.command('classify [file]'), false)
      .description('print new<TAB>URL or revisit<TAB>URL, against the previous epoch (the last crawl)')
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/classify.js')).classify(file, command),
      ),
    ['seenstore --scope example.org classify links.txt | grep ^new'],
  );
}

/** `setdiff`: seed 004's approximate set difference between two machines (docs/setdiff.md). */
function addSetdiffCommands(program: Command): void {
  const boost = (what: string): Option => new Option('--boost <r>', what).argParser(count('boost'));
  const setdiff = examples(
    inputOptions(program.command('setdiff [file]'), false)
      .description(
        "print the input URLs judged not in another machine's set, from its summary (time grows with the difference; docs/setdiff.md)",
      )
      .option('--against <summary>', "the other machine's summary (setdiff summarize)")
      .addOption(boost('trees of the summary to use (default: all it has)'))
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/setdiff.js')).setdiffCommand(file, command),
      ),
    [
      'seenstore setdiff summarize a-urls.txt --out a.sum   # on machine A',
      'seenstore setdiff b-urls.txt --against a.sum > only-in-b.txt   # on machine B',
    ],
  );
  examples(
    inputOptions(setdiff.command('summarize [file]'), false)
      .description(
        'write the summary of the input URLs (a compressed Bloom filter of their Merkle tree) for the other machine',
      )
      .option('--out <file>', 'where the summary is written (required)')
      .addOption(
        new Option('--normalize <mode>', 'none (default), whatwg or crawler: the URL form both sides hash').choices(
          NORMALIZE_MODES,
        ),
      )
      .addOption(boost('independent trees, each with its own filter (default 1): more recall per run, more bytes'))
      .option('--recall <p>', 'fraction of B − A to report, in expectation (default 0.93)')
      .addOption(
        new Option('--b-urls <n>', "the other machine's URL count, if known (default: this one's)").argParser(
          count('b-urls'),
        ),
      )
      .action(async (file: string | undefined, _o, command: Command) =>
        (await import('./commands/setdiff.js')).summarizeCommand(file, command),
      ),
    ['seenstore setdiff summarize --normalize crawler --out a.sum < a-urls.txt'],
  );
}

function addEpochCommands(program: Command): void {
  const epoch = program.command('epoch').description('list, show, rotate and prune the epochs of a scope');
  examples(
    epoch
      .command('list')
      .description('one row per epoch')
      .action(async (_o, command: Command) => (await import('./commands/epoch.js')).epochList(command)),
    ['seenstore --scope example.org epoch list'],
  );
  examples(
    epoch
      .command('show')
      .argument('<n>', 'the epoch number', count('epoch'))
      .description('header, seeds, geometry, slices, sizing decision and inputs of epoch N')
      .action(async (n: string, _o, command: Command) => (await import('./commands/epoch.js')).epochShow(n, command)),
    [
      'seenstore --scope example.org epoch show 3',
      "seenstore --scope shop --json epoch show 1 | jq -r '.sliceDetails[0].seeds[0]'",
    ],
  );
  examples(
    epoch
      .command('rotate')
      .description('seal the open epoch and open the next with fresh seeds, sized from history')
      .addOption(
        new Option('--capacity <n>', 'capacity of the new epoch (default: from history)').argParser(count('capacity')),
      )
      .addOption(
        new Option('--fpr <p>', "target FPR of the new epoch (default: the previous epoch's)").argParser(
          validated(parseFpr),
        ),
      )
      .addOption(
        new Option(
          '--strategy <name>',
          `strategy of the new epoch (default: the previous epoch's): ${STRATEGY_HELP}`,
        ).argParser(validated(parseStrategy)),
      )
      .addOption(
        new Option(
          '--seeds <hex>',
          'seeds of the new epoch instead of fresh ones (parallel crawlers that will merge)',
        ).argParser(validated(parseSeeds)),
      )
      .addOption(
        new Option(
          '--if-epoch <n>',
          'rotate only if N is the open epoch, else print that nothing was rotated and exit 0 (two schedulers rotate once)',
        ).argParser(count('if-epoch')),
      )
      .addOption(
        new Option(
          '--if-older-than <duration>',
          `rotate only if the open epoch was created longer ago than DURATION, else print its age and exit 0 (for cron): ${DURATION_HELP}`,
        ).argParser(validated((text) => parseDuration('if-older-than', text))),
      )
      .action(async (_o, command: Command) => (await import('./commands/epoch.js')).epochRotate(command)),
    [
      'seenstore --scope example.org epoch rotate',
      'seenstore --scope example.org epoch rotate --capacity 2e6 --strategy blocked',
      'seenstore --scope example.org epoch rotate --if-epoch 4',
      'seenstore --scope example.org epoch rotate --if-older-than 7d   # from cron, daily',
    ],
  );
  examples(
    epoch
      .command('prune')
      .description('drop sealed epochs; an epoch is kept if either option keeps it, the open one always')
      .addOption(new Option('--keep-last <n>', 'keep the N most recent epochs').argParser(count('keep-last')))
      .addOption(
        new Option('--sealed-within <duration>', `keep epochs sealed within DURATION: ${DURATION_HELP}`).argParser(
          validated((text) => parseDuration('sealed-within', text)),
        ),
      )
      .action(async (_o, command: Command) => (await import('./commands/epoch.js')).epochPrune(command)),
    [
      'seenstore --scope example.org epoch prune --keep-last 3',
      'seenstore --scope example.org epoch prune --keep-last 2 --sealed-within 30d',
    ],
  );
}

function addScopeCommands(program: Command): void {
  const scope = program.command('scope').description('list and delete the scopes of a store');
  const load = async () => import('./commands/scope.js');
  examples(
    scope
      .command('list')
      .description('the names of the scopes in the store, one per line')
      .action(async (_o, command: Command) => (await load()).scopeList(command)),
    ['seenstore scope list'],
  );
  examples(
    scope
      .command('delete <name>')
      .description(
        'delete a scope with all its epochs, its frontier and its settings, for good (refused without --yes)',
      )
      .option('--yes', 'really delete it')
      .action(async (name: string, _o, command: Command) => (await load()).scopeDelete(name, command)),
    ['seenstore scope delete exmaple.org --yes'],
  );
}

function addServeCommand(program: Command): void {
  const serveCommand = program
    .command('serve')
    .description(
      'a RedisBloom-compatible RESP server over the store, with epoch and frontier commands and durable group-committed adds (docs/server.md)',
    );
  // The option list lives with the command, which is loaded only when it runs: the flags are repeated here for help and parsing.
  for (const [flags, help] of SERVE_FLAGS) serveCommand.option(flags, help);
  examples(
    serveCommand.action(async (_o, command: Command) => (await import('./commands/serve.js')).serve(command)),
    [
      'seenstore --store /var/lib/seenstore serve --port 6380',
      'redis-cli -p 6380 BF.MADD example.org https://example.org/a https://example.org/b',
    ],
  );
}

function addToolCommands(program: Command): void {
  examples(
    program
      .command('plan')
      .description(
        'sizing calculator: the bits, bytes and k of an epoch of this plan, and what each growth slice adds past its capacity',
      )
      .addOption(
        new Option('--capacity <n>', 'URLs the epoch is sized for (default 1000000)').argParser(count('capacity')),
      )
      .addOption(
        new Option('--fpr <p>', 'target false-positive rate, kept at any size (default 0.01)').argParser(
          validated(parseFpr),
        ),
      )
      .addOption(
        new Option('--strategy <name>', `${STRATEGY_HELP}; default classic`).argParser(validated(parseStrategy)),
      )
      .addOption(
        new Option('--slices <n>', 'slices to list: the first and those growth adds (default 4, at most 12)').argParser(
          count('slices'),
        ),
      )
      .action(async (_o, command: Command) => (await import('./commands/plan.js')).plan(command)),
    ['seenstore plan --capacity 5e6 --fpr 0.001', 'seenstore plan --capacity 1e8 --strategy blocked --slices 6'],
  );
  examples(
    program
      .command('simulate')
      .description(
        "measure a filter strategy's false-positive rate on your URLs, next to theory (the thesis's experiments)",
      )
      .option('--urls <file>', 'distinct URLs, one per line (required)')
      .addOption(
        new Option('--insert <n>', 'URLs inserted (default: all, or half for the non-incremental modes)').argParser(
          count('insert'),
        ),
      )
      .addOption(
        new Option(
          '--query <n>',
          'other URLs queried in non-incremental and revisit modes (default: the rest)',
        ).argParser(count('query')),
      )
      .addOption(
        new Option(
          '--mode <mode>',
          "the experiment (default non-incremental; setdiff: seed 004's set difference, A = --insert URLs, |B − A| = --query)",
        ).choices(['non-incremental', 'incremental', 'revisit', 'revisit-incremental', 'setdiff']),
      )
      .addOption(
        new Option('--strategy <name>', `${STRATEGY_HELP}; default classic`).argParser(validated(parseStrategy)),
      )
      .addOption(
        new Option('--hashes <k>', 'hashes per URL per filter (default with --fpr: the optimum)').argParser(
          count('hashes'),
        ),
      )
      .option('--bits-per-hash <M>', "each filter m = N·k·M bits (the thesis's equation 5.1)")
      .addOption(
        new Option('--fpr <p>', 'size each epoch for this false-positive rate instead (default 0.01)').argParser(
          validated(parseFpr),
        ),
      )
      .addOption(new Option('--runs <r>', 'repetitions with fresh seeds (default 1)').argParser(count('runs')))
      .addOption(new Option('--boost <r>', 'setdiff mode: independent trees (default 1)').argParser(count('boost')))
      .option('--recall <p>', 'setdiff mode: fraction of B − A to report, in expectation (default 0.93)')
      .action(async (_o, command: Command) => (await import('./commands/simulate.js')).simulateCommand(command)),
    [
      'seenstore simulate --urls urls.txt --fpr 0.01 --runs 5',
      'seenstore simulate --urls urls.txt --mode revisit --strategy spatial:2 --fpr 0.01',
      'seenstore simulate --urls urls.txt --mode setdiff --insert 100000 --query 1000 --runs 3',
    ],
  );
  examples(
    program
      .command('demo')
      .description('run two crawls of a synthetic site through filter-new on the store, and report')
      .action(async (_o, command: Command) => (await import('./commands/demo.js')).demo(command)),
    ['seenstore --store /tmp/demo-store demo'],
  );
}

export function buildProgram(): Command {
  const program = new Command('seenstore')
    .description(
      'A durable "have we seen this URL?" store for web crawlers: seeded Bloom filters in LMDB, per crawl epoch.',
    )
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .option(
      '--store <dir>',
      'store directory, or redis://HOST:PORT[,HOST:PORT...][?prefix=NAME] (default $SEENSTORE_DIR or ./.seenstore)',
    )
    .option(
      '--wait-replicas <n>',
      'Redis stores: replicas that must confirm each write before it is acknowledged (default 0)',
    )
    .option('--scope <name>', 'scope: a site or crawl job (default "default")')
    .option(
      '--no-create',
      'fail with NOT_FOUND instead of creating a store or scope that does not exist (filter-new, add, frontier push, import)',
    )
    .option(
      '--allow-nonempty-dir',
      'create a store in a --store directory that holds other files (refused by default: a mistyped --store)',
    )
    .option(
      '--quiet',
      'no informational lines on stderr (a store or scope created, the summary at the end); warnings and errors stay',
    )
    .option('--json', 'machine-readable output; errors as one JSON object on stderr')
    .addOption(new Option('--debug', 'print stack traces of errors'))
    .exitOverride()
    .showHelpAfterError(false)
    .configureHelp({ showGlobalOptions: true })
    // main.ts prints commander's errors itself, in seenstore's format.
    .configureOutput({ outputError: () => undefined });
  addUrlCommands(program);
  addSetdiffCommands(program);
  addEpochCommands(program);
  addScopeCommands(program);
  addStoreCommands(program);
  addFrontierCommands(program);
  addServeCommand(program);
  addToolCommands(program);
  return program;
}
