import { type Command, Option } from 'commander';
import { parseEpochSpec } from '../epochs/epoch-spec.js';
import { validated } from './parse.js';
import { count, examples } from './command-options.js';

/*
 * The commands on a store as a whole and its snapshots, added to the program by program.ts. As
 * there, a command's module is imported only when it runs.
 */

/** `stats`, `verify`, `salvage`, `migrate` and the other commands on the store as a whole. */
export function addStoreCommands(program: Command): void {
  examples(
    program
      .command('stats')
      .description(
        'per scope and epoch: capacity, adds (with repeats), new (without), estimated distinct URLs, fill, estimated FPR, bytes on disk; or metrics for Prometheus; or a health check',
      )
      .addOption(
        new Option(
          '--format <format>',
          'text (default), json (as --json) or prometheus (node_exporter textfile format)',
        ).choices(['text', 'json', 'prometheus']),
      )
      .option(
        '--check',
        "print what is wrong and exit 1 if an open epoch is past its capacity or any epoch's estimated FPR is above its target",
      )
      .action(async (_o, command: Command) => (await import('./commands/stats.js')).stats(command)),
    [
      'seenstore stats',
      'seenstore --scope example.org --json stats',
      'seenstore stats --format prometheus > /var/lib/node_exporter/seenstore.prom.$$ && mv /var/lib/node_exporter/seenstore.prom.$$ /var/lib/node_exporter/seenstore.prom',
      'seenstore stats --check || alert "seenstore needs attention"',
    ],
  );
  examples(
    program
      .command('export')
      .description('write one epoch to a portable, checksummed export file')
      .addOption(new Option('--epoch <n>', 'N, current (default) or previous').argParser(epochArgParser()))
      .option('--out <file>', 'the file to write (replaced atomically)')
      .action(async (_o, command: Command) => (await import('./commands/transfer.js')).exportCommand(command)),
    ['seenstore --scope shop export --epoch previous --out shop-prev.ssx'],
  );
  examples(
    program
      .command('import <file>')
      .description('create a scope from an export file (sealed, followed by a fresh open epoch)')
      .option('--open', 'keep the imported epoch open with its seeds (parallel crawlers sharing seeds)')
      .action(async (file: string, _o, command: Command) =>
        (await import('./commands/transfer.js')).importCommand(file, command),
      ),
    ['seenstore --scope shop import shop-prev.ssx', 'seenstore --scope shop import part1.ssx --open'],
  );
  examples(
    program
      .command('merge <files...>')
      .description(
        'OR export files with identical seeds and geometry into the open epoch (--into-epoch) or a new export file (--out)',
      )
      .addOption(
        new Option('--into-epoch <n>', 'the open epoch of --scope to merge into').argParser(count('into-epoch')),
      )
      .option('--out <file>', 'write the union to this export file instead')
      .action(async (files: string[], _o, command: Command) =>
        (await import('./commands/transfer.js')).mergeCommand(files, command),
      ),
    ['seenstore --scope shop merge part2.ssx part3.ssx --into-epoch 1', 'seenstore merge a.ssx b.ssx --out union.ssx'],
  );
  examples(
    program
      .command('verify [export-files...]')
      .description(
        'check every header, chunk and journal record of the store (or the given export files); exit 6 with the exact place of any damage',
      )
      .action(async (files: string[], _o, command: Command) =>
        (await import('./commands/verify.js')).verify(files, command),
      ),
    ['seenstore --store /var/lib/crawler/seen verify', 'seenstore verify shop-prev.ssx'],
  );
  examples(
    program
      .command('salvage')
      .description(
        'copy everything readable of the store, even one open refuses as damaged, into a new store (--to); exit 20 when something had to be skipped',
      )
      .requiredOption('--to <dir>', 'the new store: a directory that does not exist, or an empty one')
      .action(async (_o, command: Command) => (await import('./commands/salvage.js')).salvage(command)),
    ['seenstore --store /var/lib/crawler/seen salvage --to /var/lib/crawler/seen-salvaged'],
  );
  examples(
    program
      .command('report')
      .description(
        "write one self-contained HTML page with charts of every epoch (or --scope's): URLs added and new, distinct vs capacity, fill, FPR vs target, slices, sizing, prunes",
      )
      .option('--out <file>', 'write the page to FILE (default: stdout)')
      .action(async (_o, command: Command) => (await import('./commands/report.js')).report(command)),
    ['seenstore report --out crawl-report.html', 'seenstore --scope example.org report > example.html'],
  );
  addSnapshotCommands(program);
  examples(
    program
      .command('migrate')
      .description(
        "bring an older store to this version's format, after a snapshot (refused while another process has it open)",
      )
      .option('--no-snapshot', 'do not take the safety snapshot first')
      .action(async (_o, command: Command) => (await import('./commands/snapshot.js')).migrate(command)),
    ['seenstore --store /var/lib/crawler/seen migrate'],
  );
}

function epochArgParser(): (text: string) => string {
  return validated(parseEpochSpec);
}

/** `snapshot create | list | restore | delete`: consistent copies of the store while it is in use. */
function addSnapshotCommands(program: Command): void {
  const snapshot = program
    .command('snapshot')
    .description('consistent copies of the whole store, taken while writers run');
  examples(
    snapshot
      .command('create [name]')
      .description(
        'snapshot the store into <store>/snapshots/NAME (default name: the UTC time), or into a new directory elsewhere (--out)',
      )
      .option(
        '--out <dir>',
        'write the snapshot to DIR, a new directory (a backup on another disk); its last part is the snapshot name',
      )
      .action(async (name: string | undefined, _o, command: Command) =>
        (await import('./commands/snapshot.js')).snapshotCreate(name, command),
      ),
    ['seenstore snapshot create nightly', 'seenstore snapshot create --out /mnt/backup/seen-$(date +%F)'],
  );
  examples(
    snapshot
      .command('prune')
      .description(
        'delete all but the N newest snapshots in the store (pre-restore and pre-migrate snapshots count too)',
      )
      .addOption(new Option('--keep-last <n>', 'snapshots to keep, newest first').argParser(count('keep-last', 0)))
      .action(async (_o, command: Command) => (await import('./commands/snapshot.js')).snapshotPrune(command)),
    ['seenstore snapshot prune --keep-last 7'],
  );
  examples(
    snapshot
      .command('list')
      .description('name, time, reason, format and size of every snapshot')
      .action(async (_o, command: Command) => (await import('./commands/snapshot.js')).snapshotList(command)),
    ['seenstore snapshot list'],
  );
  examples(
    snapshot
      .command('restore <name>')
      .description(
        'replace the store with a snapshot (refused while another process has the store open; the current data is kept as a snapshot)',
      )
      .action(async (name: string, _o, command: Command) =>
        (await import('./commands/snapshot.js')).snapshotRestore(name, command),
      ),
    ['seenstore snapshot restore nightly'],
  );
  examples(
    snapshot
      .command('delete <name>')
      .description('delete a snapshot')
      .action(async (name: string, _o, command: Command) =>
        (await import('./commands/snapshot.js')).snapshotDelete(name, command),
      ),
    ['seenstore snapshot delete pre-restore-2026-11-01T00-00-00Z'],
  );
}
