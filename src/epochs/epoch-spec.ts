import { SeenStoreError } from '../errors.js';

/**
 * Which epochs a query covers: `current` (the open epoch), `previous` (the one before it), one
 * epoch number, an inclusive range, the K most recent epochs, or every epoch still kept.
 */
export type EpochSpec =
  | 'current'
  | 'previous'
  | 'all'
  | number
  | { readonly from: number; readonly to: number }
  | { readonly last: number };

export type MembershipMode = 'any' | 'all';

/**
 * The largest epoch number a spec may name (2^32 - 1: a rotation a second for 136 years). A
 * bound, so that a mistyped number is a usage error and not an attempt to list trillions of epochs.
 */
export const MAX_EPOCH_NUMBER = 2 ** 32 - 1;

/** Parses the CLI form: current, previous, all, N, N..M, last:K. */
export function parseEpochSpec(text: string): EpochSpec {
  if (text === 'current' || text === 'previous' || text === 'all') return text;
  const whole = (s: string): number | undefined => {
    if (!/^[1-9][0-9]*$/.test(s)) return undefined;
    const n = Number(s);
    if (n > MAX_EPOCH_NUMBER)
      throw new SeenStoreError('USAGE', `--epochs: ${s} is past the largest epoch number, ${MAX_EPOCH_NUMBER}`);
    return n;
  };
  const single = whole(text);
  if (single !== undefined) return single;
  const range = /^([0-9]+)\.\.([0-9]+)$/.exec(text);
  if (range !== null) {
    const from = whole(range[1]!);
    const to = whole(range[2]!);
    if (from !== undefined && to !== undefined && from <= to) return { from, to };
  }
  const last = /^last:([0-9]+)$/.exec(text);
  if (last !== null && whole(last[1]!) !== undefined) return { last: Number(last[1]) };
  throw new SeenStoreError(
    'USAGE',
    `--epochs must be current, previous, all, N, N..M or last:K, got ${JSON.stringify(text)}`,
  );
}

/** The epoch numbers a spec names, ascending; every one must exist. */
export function resolveEpochs(
  spec: EpochSpec,
  existing: readonly number[],
  openEpoch: number,
  scope: string,
): number[] {
  const missing = (n: number): SeenStoreError =>
    new SeenStoreError(
      'NOT_FOUND',
      `scope ${scope} has no epoch ${n} (${n < openEpoch ? 'it was pruned' : 'not created yet'}); it has ${existing.join(', ')}`,
    );
  const need = (numbers: number[]): number[] => {
    for (const n of numbers) if (!existing.includes(n)) throw missing(n);
    return numbers;
  };
  checkSpec(spec);
  if (spec === 'current') return [openEpoch];
  if (spec === 'previous') {
    if (openEpoch === 1)
      throw new SeenStoreError('NOT_FOUND', `scope ${scope} has no previous epoch: epoch 1 is the first`);
    return need([openEpoch - 1]);
  }
  if (spec === 'all') return [...existing];
  if (typeof spec === 'number') return need([spec]);
  if ('last' in spec) return existing.slice(-spec.last);
  return need(rangeOf(spec.from, spec.to, existing));
}

/**
 * The numbers from..to when `existing` holds them all; otherwise the first one it lacks (for the
 * error). Never builds more numbers than `existing` has, however wide the range.
 */
function rangeOf(from: number, to: number, existing: readonly number[]): number[] {
  const held = existing.filter((n) => n >= from && n <= to);
  if (held.length === to - from + 1) return held;
  let n = from;
  for (const m of held) {
    if (m !== n) break;
    n++;
  }
  return [n];
}

/** API misuse (a spec of the wrong shape) is a TypeError, as for any wrong argument type. */
function checkSpec(spec: EpochSpec): void {
  const whole = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 1;
  const ok =
    spec === 'current' ||
    spec === 'previous' ||
    spec === 'all' ||
    whole(spec) ||
    (typeof spec === 'object' &&
      spec !== null &&
      (('last' in spec && whole(spec.last)) ||
        ('from' in spec && whole(spec.from) && whole(spec.to) && spec.from <= spec.to)));
  if (!ok)
    throw new TypeError(
      `not an epoch spec: ${JSON.stringify(spec)} (use 'current', 'previous', 'all', N, { from, to } or { last })`,
    );
}
