import { type Command, Option } from 'commander';
import { LAYOUTS } from '../filters/bloom.js';
import { STRATEGY_HELP, parseStrategy } from '../filters/strategy.js';
import { KEY_MODES, NORMALIZE_MODES } from '../url/normalize.js';
import { DEFAULT_BATCH_DELAY_MS, DEFAULT_BATCH_SIZE } from './defaults.js';
import { parseCount, parseFpr, parseSeeds, validated } from './parse.js';

/* Options and help shared by the program's command groups (program.ts, frontier-program.ts). */

/** A parser of a whole-number option value of at least `min`. */
export const count = (name: string, min = 1): ((text: string) => string) =>
  validated((text) => parseCount(name, text, min));

export function examples(command: Command, lines: readonly string[]): Command {
  return command.addHelpText('after', `\nExamples:\n${lines.map((line) => `  ${line}`).join('\n')}\n`);
}

/** Options of the commands that read URLs; `writes`: whether each batch is a durable commit. */
export function inputOptions(command: Command, writes: boolean, batchSize = DEFAULT_BATCH_SIZE): Command {
  const batch = writes ? 'URLs per durable commit' : 'URLs looked up together';
  return command
    .addOption(
      new Option(
        '--on-invalid <mode>',
        'skip (default): count and report invalid lines; fail: stop at the first one',
      ).choices(['skip', 'fail']),
    )
    .addOption(new Option('--batch-size <n>', `${batch} (default ${batchSize})`).argParser(count('batch-size')))
    .addOption(
      new Option(
        '--batch-delay-ms <ms>',
        `close a partial batch this long after its first line (default ${DEFAULT_BATCH_DELAY_MS})`,
      ).argParser(count('batch-delay-ms', 0)),
    );
}

/** Options that shape a scope's first epoch (filter-new, add). */
export function planOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--capacity <n>',
        "URLs the scope's first epoch is sized for (default 1000000; ignored, with a warning, once the scope exists)",
      ).argParser(count('capacity')),
    )
    .addOption(
      new Option('--fpr <p>', 'target false-positive rate at capacity (default 0.01)').argParser(validated(parseFpr)),
    )
    .addOption(
      new Option('--strategy <name>', `${STRATEGY_HELP}; default classic (docs/strategies.md)`).argParser(
        validated(parseStrategy),
      ),
    )
    .addOption(new Option('--layout <layout>', 'older spelling of --strategy classic|blocked').choices(LAYOUTS))
    .addOption(
      new Option(
        '--normalize <mode>',
        'none (default): the exact bytes; whatwg: the URL-standard form; crawler: whatwg without the fragment, query parameters sorted',
      ).choices(NORMALIZE_MODES),
    )
    .addOption(
      new Option(
        '--keys <mode>',
        "a new scope's keys: url (default): trimmed lines that start like scheme://host, others counted invalid; raw: any line as it is",
      ).choices(KEY_MODES),
    )
    .addOption(
      new Option(
        '--seeds <hex>',
        "the first epoch's seeds (16 hex digits per filter, comma-separated, from epoch show) instead of fresh ones: parallel crawlers that will merge",
      ).argParser(validated(parseSeeds)),
    )
    .addOption(
      new Option('--epoch <n>', 'only add to epoch N; fail with EPOCH_SEALED once it is not the open epoch').argParser(
        count('epoch'),
      ),
    )
    .addOption(
      new Option(
        '--threads <n>',
        'threads for adds (default 1; 2: a second thread sets the bits while this one hashes)',
      ).argParser(count('threads')),
    );
}

/** `--no-redeliver` of the commands that record URLs and print them (docs/reliability.md "Delivery"). */
export function redeliverOption(command: Command): Command {
  return command.option(
    '--no-redeliver',
    'do not print first the URLs that earlier runs recorded and did not surely deliver (they stay kept)',
  );
}
