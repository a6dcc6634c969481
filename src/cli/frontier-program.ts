import { type Command, Option } from 'commander';
import { DURATION_HELP, parseDuration } from './duration.js';
import { count, examples, inputOptions, planOptions, redeliverOption } from './command-options.js';
import { DEFAULT_PUSH_BATCH_SIZE } from './defaults.js';
import { parseFpr, validated } from './parse.js';

/* The `frontier` commands of the program (docs/frontier.md); each command module loads when it runs. */

type QueueActionName = 'set-delay' | 'block' | 'crawl-limit' | 'delete-queue' | 'queue';

export function addFrontierCommands(program: Command): void {
  const frontier = program
    .command('frontier')
    .description("the scope's durable queue of URLs found new and not yet finished (docs/frontier.md)");
  const load = async () => import('./commands/frontier.js');
  examples(
    redeliverOption(planOptions(inputOptions(frontier.command('push [file]'), true, DEFAULT_PUSH_BATCH_SIZE)))
      .description('queue the URLs not seen before (recording them as seen, in one step) and print them')
      .action(async (file: string | undefined, _o, command: Command) => (await load()).frontierPush(file, command)),
    ['extract-links page.html | seenstore --scope example.org frontier push > /dev/null'],
  );
  examples(
    frontier
      .command('take')
      .description(
        'lease up to --count queued URLs of queues (hosts) whose delay has passed, oldest ready first; prints ID<TAB>URL per URL',
      )
      .addOption(new Option('--count <n>', 'URLs to take (default 1)').argParser(count('count')))
      .addOption(new Option('--per-queue <n>', 'most URLs of one queue (default 1)').argParser(count('per-queue')))
      .addOption(
        new Option('--max-queues <n>', 'most queues to take from (default: no limit but --count)').argParser(
          count('max-queues'),
        ),
      )
      .option('--queue <key>', 'only URLs of this queue (a host, by default)')
      .addOption(
        new Option(
          '--lease-ms <ms>',
          'lease length in milliseconds (default 300000): unfinished URLs come back after it',
        ).argParser(count('lease-ms')),
      )
      .option('--owner <name>', 'who takes (1-128 of A-Z a-z 0-9 . _ : -), for `frontier reclaim` and affinity')
      .option('--affinity', 'only queues this owner owns on the consistent-hash ring of live owners (needs --owner)')
      .action(async (_o, command: Command) => (await load()).frontierTake(command)),
    ['seenstore --scope example.org frontier take --count 100 --per-queue 2 > batch.tsv'],
  );
  examples(
    frontier
      .command('done [ids...]')
      .description("finish leased URLs: IDs as arguments, or take's lines on stdin")
      .addOption(
        new Option(
          '--refetch-in <duration>',
          `schedule the URLs to be fetched again after ${DURATION_HELP}, instead of finishing them`,
        ).argParser(validated((text) => parseDuration('refetch-in', text))),
      )
      .option('--failed', 'the URLs were given up on: finished, counted as failed in frontier stats instead of done')
      .action(async (ids: string[], _o, command: Command) => (await load()).frontierFinish('done', ids, command)),
    ['seenstore --scope example.org frontier done < batch.tsv'],
  );
  examples(
    frontier
      .command('release [ids...]')
      .description('give leased URLs back before their lease runs out: IDs as arguments, or on stdin')
      .action(async (ids: string[], _o, command: Command) => (await load()).frontierFinish('release', ids, command)),
    ['seenstore --scope example.org frontier release 17 18'],
  );
  examples(
    frontier
      .command('reclaim <owner>')
      .description(
        "give back at once every lease OWNER holds (take --owner): a dead worker's URLs, without waiting out their leases",
      )
      .action(async (owner: string, _o, command: Command) => (await load()).frontierReclaim(owner, command)),
    ['seenstore --scope example.org frontier reclaim worker-3'],
  );
  examples(
    frontier
      .command('stats')
      .description('URLs pending, leased, done and failed, and queues that hold URLs')
      .action(async (_o, command: Command) => (await load()).frontierStats(command)),
    ['seenstore --scope example.org --json frontier stats'],
  );
  addFrontierQueueCommands(frontier);
  addFrontierDumpCommands(frontier);
}

/** import and export of the reference URLFrontier client's DumpURLs files: a crawl moves between the two either way. */
function addFrontierDumpCommands(frontier: Command): void {
  const load = async () => import('./commands/frontier-dump.js');
  examples(
    frontier
      .command('import [file]')
      .description(
        "load a dump of the reference URLFrontier client's DumpURLs (JSON lines, gzipped or not; FILE or stdin): discovered URLs are queued if new, known ones scheduled or recorded as done; each line goes to the scope of its crawlID (DEFAULT when empty) unless --scope is given",
      )
      .addOption(
        new Option(
          '--on-invalid <mode>',
          'fail (default): stop at the first bad line, naming it; skip: count and report bad lines',
        ).choices(['skip', 'fail']),
      )
      .addOption(
        new Option(
          '--batch-size <n>',
          'lines handled together, a few durable commits per scope (default 1000)',
        ).argParser(count('batch-size')),
      )
      .addOption(
        new Option(
          '--capacity <n>',
          'URLs the first epoch of each scope the import creates is sized for (default 1000000)',
        ).argParser(count('capacity')),
      )
      .addOption(
        new Option('--fpr <p>', 'target false-positive rate of the scopes the import creates (default 0.01)').argParser(
          validated(parseFpr),
        ),
      )
      .action(async (file: string | undefined, _o, command: Command) => (await load()).frontierImport(file, command)),
    [
      'seenstore --store /var/lib/seenstore frontier import crawl-dump.jsonl.gz',
      'seenstore --scope news frontier import --on-invalid skip < dump.jsonl',
    ],
  );
  examples(
    frontier
      .command('export')
      .description(
        "write the frontier of every scope (or of --scope) as the reference URLFrontier client's DumpURLs does: waiting and leased URLs as discovered, scheduled ones as known with their date; finished URLs are not in it (they are only bits of the filter)",
      )
      .option('--out <file>', 'write to FILE (gzipped when it ends in .gz) instead of stdout')
      .action(async (_o, command: Command) => (await load()).frontierExport(command)),
    ['seenstore frontier export --out crawl-dump.jsonl.gz', 'seenstore --scope news frontier export > news.jsonl'],
  );
}

function addFrontierQueueCommands(frontier: Command): void {
  const load = async () => import('./commands/frontier-queues.js');
  examples(
    frontier
      .command('config')
      .description(
        "show or change the frontier's queue key (before any URL is queued), default delay and in-flight limit per queue",
      )
      .addOption(
        new Option(
          '--queue-key <mode>',
          'how URLs are grouped into queues: host (default), domain (registrable domain), none (one queue)',
        ).choices(['host', 'domain', 'none']),
      )
      .addOption(
        new Option(
          '--delay-ms <ms>',
          'milliseconds between two takes of one queue, unless it has its own (default 1000)',
        ).argParser(count('delay-ms', 0)),
      )
      .addOption(
        new Option('--max-in-flight <n>', 'most URLs of one queue leased at once (0: no limit, the default)').argParser(
          count('max-in-flight', 0),
        ),
      )
      .action(async (_o, command: Command) => (await load()).frontierConfig(command)),
    ['seenstore --scope example.org frontier config --delay-ms 2000 --max-in-flight 2'],
  );
  const queueCommands: Array<[string, QueueActionName, string, string]> = [
    [
      'set-delay <key> <ms>',
      'set-delay',
      "a queue's own delay between two takes, in ms, such as a robots Crawl-delay ('default': the frontier's again)",
      'frontier set-delay example.org 5000',
    ],
    [
      'block <key> <duration>',
      'block',
      "hand out nothing of a queue for a while (a 429 or 503 with Retry-After; a robots Crawl-delay is set-delay); '0' unblocks",
      'frontier block example.org 10m',
    ],
    [
      'crawl-limit <key> <n>',
      'crawl-limit',
      "once n URLs of the queue are done it hands out no more ('none': no limit)",
      'frontier crawl-limit example.org 500',
    ],
    [
      'delete-queue <key>',
      'delete-queue',
      'remove a queue with its waiting, scheduled and leased URLs',
      'frontier delete-queue spam.example',
    ],
    ['queue <key>', 'queue', "one queue's counts and settings", 'frontier queue example.org'],
  ];
  for (const [usage, action, description, example] of queueCommands) {
    examples(
      frontier
        .command(usage)
        .description(description)
        .action(async (...args: unknown[]) => {
          // Commander calls with the arguments, then the options and the command: (key, [value,] options, command).
          const value = args.length === 4 ? (args[1] as string) : undefined;
          await (await load()).frontierQueue(action, args[0] as string, value, args[args.length - 1] as Command);
        }),
      [`seenstore --scope example.org ${example}`],
    );
  }
  examples(
    frontier
      .command('queues')
      .description('the queues that hold URLs, in key order: waiting, leased, completed, when ready, own settings')
      .option('--after <key>', 'start after this queue key (paging)')
      .addOption(new Option('--limit <n>', 'most queues to list (default 1000)').argParser(count('limit')))
      .action(async (_o, command: Command) => (await load()).frontierQueues(command)),
    ['seenstore --scope example.org frontier queues --limit 20'],
  );
  examples(
    inputOptions(frontier.command('schedule [file]'), false)
      .description(
        'revisits: the URLs (one per line) wait, queued before or not, until --in from now; --in 0 finishes them',
      )
      .requiredOption('--in <duration>', `when: ${DURATION_HELP}, or 0`)
      .action(async (file: string | undefined, _o, command: Command) => (await load()).frontierSchedule(file, command)),
    ['seenstore --scope example.org frontier schedule --in 7d < refetch.txt'],
  );
  examples(
    frontier
      .command('status <url>')
      .description('where a URL is in the frontier: waiting, scheduled or leased, in which queue')
      .action(async (url: string, _o, command: Command) => (await load()).frontierStatus(url, command)),
    ["seenstore --scope example.org frontier status 'https://example.org/'"],
  );
}
