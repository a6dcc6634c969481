import { SeenStoreError } from '../errors.js';
import type { Layout } from './bloom.js';

/**
 * How an epoch's filters answer "seen?". Every strategy here is a group of seeded Bloom filters per
 * slice, so the store persists them all the same way; the strategy of an epoch is fixed by its
 * header (each slice's layout and number of seeds) and never changes.
 *
 * - `classic`: one filter, k positions anywhere in the array.
 * - `blocked`: one filter, the k positions inside one 64-byte block (one cache line per URL).
 * - `spatial:S`: S classic filters with their own seeds; a URL is seen only if all S hold it
 *   (the thesis's spatial strategy, 4.3). Across epochs with fresh seeds it is spatio-temporal (4.4).
 */
export interface Strategy {
  readonly kind: 'classic' | 'blocked' | 'spatial';
  readonly layout: Layout;
  /** Filters per slice, each with its own seed. */
  readonly filters: number;
}

export const MAX_SPATIAL_FILTERS = 16;

export const CLASSIC: Strategy = Object.freeze({ kind: 'classic', layout: 'classic', filters: 1 });

/** Named by the design but not available in this version; named so the error can say so. */
const NOT_BUILT = ['counting', 'eigen', 'multilayer', 'scalable'];

export const STRATEGY_HELP = `classic, blocked or spatial:S (S = 2..${MAX_SPATIAL_FILTERS})`;

export function parseStrategy(text: string): Strategy {
  if (typeof text !== 'string') throw new SeenStoreError('USAGE', `a strategy is a string: ${STRATEGY_HELP}`);
  if (text === 'classic') return CLASSIC;
  if (text === 'blocked') return Object.freeze({ kind: 'blocked', layout: 'blocked', filters: 1 });
  const spatial = /^spatial:([0-9]{1,2})$/.exec(text);
  if (spatial !== null) {
    const filters = Number(spatial[1]);
    if (filters >= 2 && filters <= MAX_SPATIAL_FILTERS) return Object.freeze({ kind: 'spatial', layout: 'classic', filters });
  }
  const name = text.split(':')[0]!;
  if (NOT_BUILT.includes(name)) {
    throw new SeenStoreError('USAGE', `strategy ${name} is not available in this version; use ${STRATEGY_HELP}`);
  }
  throw new SeenStoreError('USAGE', `unknown strategy ${JSON.stringify(text)}: use ${STRATEGY_HELP}`);
}

/** The strategy of a slice as its header records it. */
export function strategyOf(layout: string, filters: number): Strategy {
  if (filters > 1) return Object.freeze({ kind: 'spatial', layout: layout as Layout, filters });
  return layout === 'blocked' ? parseStrategy('blocked') : CLASSIC;
}

/** The name as `--strategy` takes it and `epoch show` prints it. */
export function strategyName(strategy: Strategy): string {
  return strategy.kind === 'spatial' ? `spatial:${strategy.filters}` : strategy.kind;
}
