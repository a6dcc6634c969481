import { SeenStoreError } from '../errors.js';
import { redactLocation } from '../store/open.js';
import { keyModeOf, type NormalizeMode } from '../url/normalize.js';
import type { SeenStore } from '../epochs/seen-store.js';
import type { Scope, ScopeOptions } from '../epochs/scope.js';
import { inform, scopeName, warn, type GlobalOptions } from './context.js';
import { formatCount } from './output.js';

/** The values of a scope's first epoch given on the command line (scopeOptions' result). */
export interface RequestedPlan {
  readonly capacityUrls?: number;
  readonly fprTarget?: number;
  readonly strategy?: string;
  readonly layout?: string;
  readonly seeds?: readonly string[];
  readonly keys?: string;
}

/** What an adding command remembers of the open epoch before it runs, to notice growth after. */
export interface EpochWatch {
  readonly epoch: number | null;
  readonly slices: number;
}

/**
 * Before an add: when the scope exists, the plan options (--capacity, --fpr, --strategy, --layout,
 * --seeds) shape nothing, since they apply to a scope's first epoch only. Say so for each one that
 * differs from the open epoch, instead of ignoring it silently. Returns what `noteGrowth` needs.
 */
export async function noteIgnoredPlan(
  scope: Scope,
  requested: RequestedPlan,
  warn: (message: string) => void,
): Promise<EpochWatch> {
  const open = await scope.openEpoch();
  if (open === null) return { epoch: null, slices: 0 };
  const epoch = await scope.settings(open);
  const ignored: string[] = [];
  if (requested.capacityUrls !== undefined && requested.capacityUrls !== epoch.capacityUrls) {
    ignored.push(`--capacity ${requested.capacityUrls} (epoch ${open} has ${epoch.capacityUrls})`);
  }
  if (requested.fprTarget !== undefined && requested.fprTarget !== epoch.fprTarget)
    ignored.push(`--fpr ${requested.fprTarget} (it has ${epoch.fprTarget})`);
  if (requested.strategy !== undefined && requested.strategy !== epoch.strategy)
    ignored.push(`--strategy ${requested.strategy} (it has ${epoch.strategy})`);
  if (requested.layout !== undefined && requested.layout !== epoch.strategy)
    ignored.push(`--layout ${requested.layout} (it has ${epoch.strategy})`);
  const seeds = epoch.seeds[0]?.join(',');
  if (requested.seeds !== undefined && requested.seeds.join(',') !== seeds) ignored.push(`--seeds (it has ${seeds})`);
  if (requested.keys !== undefined && requested.keys !== keyModeOf(epoch.normalize as NormalizeMode))
    ignored.push(`--keys ${requested.keys} (it has ${keyModeOf(epoch.normalize as NormalizeMode)})`);
  if (ignored.length > 0) {
    warn(
      `warning: scope ${scope.name} exists, so ${ignored.join(', ')} ${ignored.length === 1 ? 'is' : 'are'} ignored: ` +
        'they shape only the first epoch of a new scope (epoch rotate --capacity/--fpr/--strategy/--seeds set the next one)',
    );
  }
  return { epoch: open, slices: epoch.slices };
}

/**
 * After an add: an epoch that outgrew its capacity grew slices to keep its FPR promise. Say so,
 * with the slice count, once per run that grew it.
 */
export async function noteGrowth(scope: Scope, before: EpochWatch, warn: (message: string) => void): Promise<void> {
  const n = before.epoch ?? (await scope.openEpoch());
  if (n === null) return;
  const slicesBefore = before.epoch === null ? 1 : before.slices;
  if ((await scope.settings(n)).slices <= slicesBefore) return;
  // Grown: the estimate of distinct URLs reads the fill of every slice (rare: once per growth).
  const epoch = await scope.epoch(n);
  warn(
    `warning: epoch ${n} of scope ${scope.name} grew past its capacity of ${formatCount(epoch.capacityUrls)} URLs ` +
      `(~${formatCount(epoch.estimatedDistinct)} distinct now): ${epoch.slices} slices (was ${slicesBefore}); its FPR target ${epoch.fprTarget} still holds, ` +
      'at more bytes and hashes per URL. Rotate with a larger --capacity (seenstore plan shows the cost of growth)',
  );
}

/**
 * The scope an adding command writes to, with the notes it owes: the plan options a scope that
 * exists ignores, and a new scope's creation. `ready` creates a missing scope and says so on
 * stderr: the commands call it before each batch (it does the work once), so that an input
 * refused before its first batch creates nothing. With `create` false (--no-create) a missing
 * scope is NOT_FOUND before any input is read: a mistyped --scope would otherwise re-crawl
 * everything.
 */
export async function addingScope(
  store: SeenStore,
  options: GlobalOptions,
  requested: ScopeOptions,
): Promise<{ scope: Scope; watch: EpochWatch; ready: () => Promise<void> }> {
  const name = scopeName(options);
  const create = options.create !== false;
  const scope = store.scope(name, { ...requested, create });
  const watch = await noteIgnoredPlan(scope, requested, warn);
  if (watch.epoch !== null) return { scope, watch, ready: () => Promise.resolve() };
  if (!create) {
    const known = await store.scopeNames();
    const hint =
      known.length === 0
        ? 'the store has no scopes'
        : `its scopes: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', ...' : ''}`;
    throw new SeenStoreError(
      'NOT_FOUND',
      `scope ${name} does not exist in ${redactLocation(store.dir)} and --no-create forbids creating it (${hint})`,
    );
  }
  let creating: Promise<void> | undefined;
  const ready = (): Promise<void> =>
    (creating ??= scope.create().then((created) => {
      if (created) inform(options, `created scope ${name} in store ${redactLocation(store.dir)}`);
    }));
  return { scope, watch, ready };
}
