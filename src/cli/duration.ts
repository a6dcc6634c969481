import { SeenStoreError } from '../errors.js';

/** Milliseconds per unit, under every spelling accepted (3d, 3days, 12h, 12 hours, 90m, 90min). */
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  sec: 1_000,
  secs: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
  w: 604_800_000,
  wk: 604_800_000,
  week: 604_800_000,
  weeks: 604_800_000,
};

/** One term: a decimal number, optional spaces, a unit of letters. */
const TERM = /^([0-9]+(?:\.[0-9]+)?)\s*([a-z]+)\s*/;

/** The longest duration accepted: 100 years, far past any retention and inside exact integers. */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000;

export const DURATION_HELP =
  'a duration: a number and a unit (ms, s, m, h, d, w, or spelled out: 90m, 12h, 3d, 3days, 2 weeks), or several (1h30m)';

/**
 * Parses durations like `90s`, `30m`, `12h`, `3d`, `3days`, `2w`, `1h30m` or `1d 12h` into
 * milliseconds (rounded to whole ms). A bare number is refused: minutes or days? Each unit may
 * appear once. Case does not matter. `name` is the option, for the message; `label` names a positional argument instead.
 */
export function parseDuration(name: string, text: string, label = `--${name}`): number {
  const refuse = (why: string): never => {
    throw new SeenStoreError('USAGE', `${label} must be ${DURATION_HELP}; ${JSON.stringify(text)} ${why}`);
  };
  let rest = text.trim().toLowerCase();
  if (rest === '') refuse('is empty');
  let totalMs = 0;
  const used = new Set<number>();
  while (rest.length > 0) {
    const match = TERM.exec(rest);
    if (match === null) refuse(/^[0-9.]+$/.test(rest) ? 'has no unit' : 'is not one');
    const [whole, amount, unit] = match as RegExpExecArray & [string, string, string];
    const unitMs = UNIT_MS[unit];
    if (unitMs === undefined) refuse(`has the unknown unit ${JSON.stringify(unit)}`);
    if (used.has(unitMs!)) refuse(`names ${unit} twice`);
    used.add(unitMs!);
    totalMs += Number(amount) * unitMs!;
    rest = rest.slice(whole.length);
  }
  if (totalMs > MAX_DURATION_MS) refuse('is longer than 100 years');
  return Math.round(totalMs);
}
