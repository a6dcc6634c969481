import { SeenStoreError } from '../errors.js';
import { isSeedHex } from '../hash/scheme.js';

/**
 * Parsers of option values, light enough to load before any command runs: commander calls them
 * (through `validated`) while it parses the command line, so a bad value is a usage error before
 * the store is opened.
 */

/** A whole number >= min, written as digits or in exponent form (1e6). */
export function parseCount(name: string, text: string | undefined, min = 1): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\s*[0-9.eE+]+\s*$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new SeenStoreError('USAGE', `--${name} must be a whole number >= ${min}, got ${JSON.stringify(text)}`);
  }
  return value;
}

export function parseFpr(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !(value > 0 && value < 1)) {
    throw new SeenStoreError(
      'USAGE',
      `--fpr must be a probability strictly between 0 and 1, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

export function parseChoice<T extends string>(
  name: string,
  text: string | undefined,
  choices: readonly T[],
): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text)) {
    throw new SeenStoreError('USAGE', `--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
  }
  return text as T;
}

/** --seeds HEX[,HEX...]: as `epoch show` prints them. */
export function parseSeeds(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const seeds = text.split(',').map((seed) => seed.trim());
  if (!seeds.every(isSeedHex)) {
    throw new SeenStoreError(
      'USAGE',
      `--seeds must be 16 lower-case hex digits per filter, comma-separated, as epoch show prints them; got ${JSON.stringify(text)}`,
    );
  }
  return seeds;
}

/**
 * An argParser for commander that checks a value with `check` and keeps the text as given (the
 * command parses it again, the same way). The parsers throw SeenStoreError USAGE, which commander
 * lets through (it rewords only its own InvalidArgumentError), so the message is the parser's own.
 */
export function validated(check: (text: string) => unknown): (text: string) => string {
  return (text) => {
    check(text);
    return text;
  };
}
