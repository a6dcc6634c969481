import { parseArgs } from 'node:util';

/** The soak's parts, in the order they run; `--only a,b` runs some of them. */
export const PARTS = [
  'kills',
  'writers',
  'locks',
  'disk',
  'many',
  'race',
  'damage',
  'corpus',
  'checkpointers',
  'engine',
] as const;
export type Part = (typeof PARTS)[number];

/** The soak's options, each a count or a duration, with its default (`npm run soak` runs these). */
const DEFAULTS = {
  trials: 100,
  writers: 4,
  rounds: 5,
  'lock-trials': 6,
  processes: 200,
  'race-rounds': 4,
  'race-writers': 3,
  'race-openers': 2,
  'race-library-openers': 2,
  'race-round-ms': 15_000,
  'damaged-stores': 16,
  'checkpointer-rounds': 30,
  'engine-seeds': 4,
  'engine-rounds': 24,
} as const;
type Name = keyof typeof DEFAULTS;

const USAGE = `usage: node dist/soak/run.js [--only ${PARTS.join(',')}] ${Object.entries(DEFAULTS)
  .map(([name, n]) => `[--${name} ${n}]`)
  .join(' ')}\n`;

function usageError(message: string): never {
  process.stderr.write(`soak: ${message}\n${USAGE}`);
  process.exit(2);
}

/**
 * The command line, strictly: a mistyped option or part ends the run at once (exit 2) instead of
 * starting an hour of soak with its defaults; `--help` prints the options and their defaults.
 */
export function parseCommandLine(args: readonly string[]): {
  readonly counts: Readonly<Record<Name, number>>;
  readonly only: ReadonlySet<Part>;
} {
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(
      ['only', ...Object.keys(DEFAULTS)].map((name) => [name, { type: 'string' as const }]),
    );
    values = parseArgs({
      args: [...args],
      options: { ...options, help: { type: 'boolean' } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    usageError((error as Error).message);
  }
  if (values.help === true) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const counts = { ...DEFAULTS } as Record<Name, number>;
  for (const name of Object.keys(DEFAULTS) as Name[]) {
    const given = values[name];
    if (typeof given !== 'string') continue;
    const n = Number(given);
    if (!Number.isSafeInteger(n) || n < 0) usageError(`--${name} takes a whole number, not ${JSON.stringify(given)}`);
    counts[name] = n;
  }
  const named = typeof values.only === 'string' ? values.only.split(',') : PARTS;
  for (const part of named)
    if (!(PARTS as readonly string[]).includes(part)) usageError(`unknown part ${part} (${PARTS.join(', ')})`);
  return { counts, only: new Set(named as Part[]) };
}
