import { Command, Option } from 'commander';
import { STRATEGY_HELP } from '../filters/strategy.js';
import { add } from './commands/add.js';
import { classify } from './commands/classify.js';
import { diff } from './commands/diff.js';
import { epochList, epochPrune, epochRotate, epochShow } from './commands/epoch.js';
import { demo } from './commands/demo.js';
import { filterNew } from './commands/filter-new.js';
import { has } from './commands/has.js';
import { stats } from './commands/stats.js';
import { verify } from './commands/verify.js';
import { exportCommand, importCommand, mergeCommand } from './commands/transfer.js';
import { migrate, snapshotCreate, snapshotDelete, snapshotList, snapshotRestore } from './commands/snapshot.js';
import { DEFAULT_BATCH_DELAY_MS, DEFAULT_BATCH_SIZE } from './context.js';
import { plan } from './commands/plan.js';
import { simulateCommand } from './commands/simulate.js';
import { countCommand, deleteCommand } from './commands/count.js';

function inputOptions(command: Command): Command {
  return command
    .option('--on-invalid <mode>', 'skip (default: count and report) or fail (stop at the first invalid line)')
    .option('--batch-size <n>', `URLs per durable commit (default ${DEFAULT_BATCH_SIZE})`)
    .option('--batch-delay-ms <ms>', `close a partial batch this long after its first line (default ${DEFAULT_BATCH_DELAY_MS})`);
}

function planOptions(command: Command): Command {
  return command
    .option('--capacity <n>', 'URLs the first epoch is sized for (default 1000000)')
    .option('--fpr <p>', 'target false-positive rate at capacity (default 0.01)')
    .option('--strategy <name>', `${STRATEGY_HELP}; default classic (docs/strategies.md)`)
    .option('--layout <layout>', 'classic or blocked (older spelling of --strategy)')
    .option('--normalize <mode>', 'none (default: exact bytes) or whatwg (URL-standard form)')
    .option('--seeds <hex>', "the first epoch's seeds (16 hex digits per filter, comma-separated, from epoch show) instead of fresh ones: parallel crawlers that will merge")
    .option('--epoch <n>', 'only add to epoch N; fail with EPOCH_SEALED once it is not the open epoch')
    .option('--threads <n>', 'threads for adds (default 1; 2: a second thread sets the bits while this one hashes)');
}

export function buildProgram(): Command {
  const program = new Command('seenstore')
    .description('A durable "have we seen this URL?" store for web crawlers: seeded Bloom filters in LMDB, per crawl epoch.')
    .option('--store <dir>', 'store directory, or redis://HOST:PORT[,HOST:PORT...][?prefix=NAME] (default $SEENSTORE_DIR or ./.seenstore)')
    .option('--wait-replicas <n>', 'Redis stores: replicas that must confirm each write before it is acknowledged (default 0)')
    .option('--scope <name>', 'scope: a site or crawl job (default "default")')
    .option('--json', 'machine-readable output')
    .addOption(new Option('--debug', 'print stack traces of errors'))
    .showHelpAfterError(false)
    .configureOutput({ outputError: (text, write) => write(text) });

  planOptions(inputOptions(program.command('filter-new [file]')))
    .description('print each URL (FILE or stdin, one per line) not seen before, and record it')
    .action((file: string | undefined, _options, command: Command) => filterNew(file, command));
  planOptions(inputOptions(program.command('add [file]')))
    .description('record URLs; summary on stderr (or JSON on stdout)')
    .action((file: string | undefined, _options, command: Command) => add(file, command));
  inputOptions(program.command('has [file]'))
    .description('print the input URLs that are (probably) seen')
    .option('--invert', 'print the unseen URLs instead')
    .option('--count', 'print only the counts')
    .option('--epochs <spec>', 'current (default), previous, N, N..M, last:K or all')
    .option('--mode <mode>', 'any (default: seen in one of the epochs) or all (seen in every one)')
    .action((file: string | undefined, _options, command: Command) => has(file, command));
  inputOptions(program.command('count [file]'))
    .description('counting scopes: print N<TAB>URL, how many times each input URL was added (minus deletes)')
    .option('--epochs <spec>', 'current (default), previous, N, N..M, last:K or all (counts are summed)')
    .action((file: string | undefined, _options, command: Command) => countCommand(file, command));
  inputOptions(program.command('delete [file]'))
    .description('counting scopes: take one occurrence of each input URL out of the open epoch')
    .action((file: string | undefined, _options, command: Command) => deleteCommand(file, command));
  inputOptions(program.command('diff [file]'))
    .description('compare two epochs over the input URLs (both, only-from, only-to, neither), or print the URLs another machine has not seen (--against)')
    .option('--against <export-file>', "another machine's export: print the input URLs it has not seen")
    .option('--from <epoch>', 'epoch A: N, current or previous')
    .option('--to <epoch>', 'epoch B: N, current or previous')
    .option('--print <category>', 'print only the URLs of one category: both, only-from, only-to, neither')
    .action((file: string | undefined, _options, command: Command) => diff(file, command));
  inputOptions(program.command('classify [file]'))
    .description('print new<TAB>URL or revisit<TAB>URL, against the previous epoch (the last crawl)')
    .action((file: string | undefined, _options, command: Command) => classify(file, command));
  const epoch = program.command('epoch').description('list, show, rotate and prune the epochs of a scope');
  epoch.command('list').description('one row per epoch').action((_options, command: Command) => epochList(command));
  epoch
    .command('show <n>')
    .description('header, seeds, geometry, slices, sizing decision and inputs of epoch N')
    .action((n: string, _options, command: Command) => epochShow(n, command));
  epoch
    .command('rotate')
    .description('seal the open epoch and open the next with fresh seeds, sized from history')
    .option('--capacity <n>', 'capacity of the new epoch (default: from history)')
    .option('--fpr <p>', 'target FPR of the new epoch (default: the previous epoch\'s)')
    .option('--strategy <name>', "strategy of the new epoch (default: the previous epoch's)")
    .option('--seeds <hex>', 'seeds of the new epoch instead of fresh ones (parallel crawlers that will merge)')
    .option('--if-epoch <n>', 'rotate only if N is the open epoch, else print that nothing was rotated and exit 0 (two schedulers rotate once)')
    .action((_options, command: Command) => epochRotate(command));
  epoch
    .command('prune')
    .description('drop sealed epochs; an epoch is kept if either option keeps it, the open one always')
    .option('--keep-last <n>', 'keep the N most recent epochs')
    .option('--sealed-within <duration>', 'keep epochs sealed within DURATION (90s, 30m, 12h, 7d, 2w)')
    .action((_options, command: Command) => epochPrune(command));
  program
    .command('stats')
    .description('per scope and epoch: capacity, adds, estimated distinct URLs, fill, estimated FPR, bytes on disk')
    .action((_options, command: Command) => stats(command));
  program
    .command('export')
    .description('write one epoch to a portable, checksummed export file')
    .option('--epoch <n>', 'N, current (default) or previous')
    .option('--out <file>', 'the file to write (replaced atomically)')
    .action((_options, command: Command) => exportCommand(command));
  program
    .command('import <file>')
    .description('create a scope from an export file (sealed, followed by a fresh open epoch)')
    .option('--open', 'keep the imported epoch open with its seeds (parallel crawlers sharing seeds)')
    .action((file: string, _options, command: Command) => importCommand(file, command));
  program
    .command('merge <files...>')
    .description('OR export files with identical seeds and geometry into the open epoch (--into-epoch) or a new export file (--out)')
    .option('--into-epoch <n>', 'the open epoch of --scope to merge into')
    .option('--out <file>', 'write the union to this export file instead')
    .action((files: string[], _options, command: Command) => mergeCommand(files, command));
  program
    .command('verify [export-files...]')
    .description('check every header, chunk and journal record of the store (or the given export files); exit 6 with the exact place of any damage')
    .action((files: string[], _options, command: Command) => verify(files, command));
  const snapshot = program.command('snapshot').description('consistent copies of the whole store, taken while writers run');
  snapshot
    .command('create [name]')
    .description('snapshot the store into <store>/snapshots/NAME (default name: the UTC time)')
    .action((name: string | undefined, _options, command: Command) => snapshotCreate(name, command));
  snapshot.command('list').description('name, time, reason, format and size of every snapshot').action((_options, command: Command) => snapshotList(command));
  snapshot
    .command('restore <name>')
    .description('replace the store with a snapshot (refused while another process has the store open; the current data is kept as a snapshot)')
    .action((name: string, _options, command: Command) => snapshotRestore(name, command));
  snapshot
    .command('delete <name>')
    .description('delete a snapshot')
    .action((name: string, _options, command: Command) => snapshotDelete(name, command));
  program
    .command('migrate')
    .description('bring an older store to this version\'s format, after a snapshot (refused while another process has it open)')
    .option('--no-snapshot', 'do not take the safety snapshot first')
    .action((_options, command: Command) => migrate(command));
  program
    .command('plan')
    .description('sizing calculator: the bits, bytes and k of an epoch of this plan, and what each growth slice adds past its capacity')
    .option('--capacity <n>', 'URLs the epoch is sized for (default 1000000)')
    .option('--fpr <p>', 'target false-positive rate, kept at any size (default 0.01)')
    .option('--strategy <name>', `${STRATEGY_HELP}; default classic`)
    .option('--slices <n>', 'slices to list: the first and those growth adds (default 4, at most 12)')
    .action((_options, command: Command) => plan(command));
  program
    .command('simulate')
    .description("measure a filter strategy's false-positive rate on your URLs, next to theory (the thesis's experiments)")
    .option('--urls <file>', 'distinct URLs, one per line (required)')
    .option('--insert <n>', 'URLs inserted (default: all, or half for the non-incremental modes)')
    .option('--query <n>', 'other URLs queried in non-incremental and revisit modes (default: the rest)')
    .option('--mode <mode>', 'non-incremental (default), incremental, revisit or revisit-incremental')
    .option('--strategy <name>', `${STRATEGY_HELP}; default classic`)
    .option('--hashes <k>', 'hashes per URL per filter (default with --fpr: the optimum)')
    .option('--bits-per-hash <M>', "each filter m = N·k·M bits (the thesis's equation 5.1)")
    .option('--fpr <p>', 'size each epoch for this false-positive rate instead (default 0.01)')
    .option('--runs <r>', 'repetitions with fresh seeds (default 1)')
    .action((_options, command: Command) => simulateCommand(command));
  program
    .command('demo')
    .description('run two crawls of a synthetic site through filter-new on the store, and report')
    .action((_options, command: Command) => demo(command));
  return program;
}
