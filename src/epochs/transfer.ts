import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import type { Backend, EpochBits } from '../store/backend.js';
import { readExport, writeExport, type ExportContents, type ExportHeader } from '../store/export-file.js';
import { safePoint } from '../store/interruption.js';
import { checkEpochSupported, type EpochHeader } from '../store/records.js';
import type { NormalizeMode } from '../url/normalize.js';
import { strategyOf } from '../filters/strategy.js';
import { filterGeometries } from '../filters/keying.js';
import { ExportedEpoch } from './exported.js';
import { checkScopeName, newEpochHeader } from './create.js';
import { capacityFromHistory } from './sizing-policy.js';

export interface ExportResult {
  readonly path: string;
  readonly scope: string;
  readonly epoch: number;
  readonly fileBytes: number;
  /** Bytes of the filters themselves: what the file would take without sparse-chunk coding. */
  readonly rawBytes: number;
}

export async function exportEpoch(
  hash: XxHash,
  epoch: EpochBits,
  path: string,
  signal?: AbortSignal,
): Promise<ExportResult> {
  const { header, summary, sliceAdded, filters } = await epoch.contents();
  const { fileBytes, rawBytes } = await writeExport(
    hash,
    path,
    {
      v: 1,
      exportedAtMs: Date.now(),
      epoch: header,
      counts: { submitted: summary.submitted, added: summary.added, sliceAdded: [...sliceAdded] },
      summary: {
        estimatedDistinct: summary.estimatedDistinct,
        fillRatio: summary.fillRatio,
        estimatedFpr: summary.estimatedFpr,
      },
    },
    filters,
    signal,
  );
  return { path, scope: header.scope, epoch: header.epoch, fileBytes, rawBytes };
}

export interface ImportOptions {
  /** Scope to create (default: the exported epoch's scope). It must not exist yet. */
  readonly scope?: string;
  /**
   * Make the imported epoch the scope's open epoch, with the same seeds: how parallel crawlers
   * share one epoch's seeds (so their exports can be merged), or how a crawl moves machines.
   * Default: the epoch is imported sealed and a fresh open epoch follows it.
   */
  readonly open?: boolean;
  /** Stops the import at its next safe point (INTERRUPTED); what it wrote so far is removed. */
  readonly signal?: AbortSignal;
}

export interface ImportResult {
  readonly scope: string;
  readonly imported: number;
  readonly openEpoch: number;
}

/**
 * Creates a scope from an export file. The file is read and checked whole before anything is
 * written; the backend then writes the data and makes the scope appear in one atomic step, so a
 * crash mid-import leaves no scope.
 */
export async function importEpoch(
  backend: Backend,
  hash: XxHash,
  path: string,
  options: ImportOptions,
): Promise<ImportResult> {
  const contents = await readExport(hash, path, options.signal);
  const source = contents.header.epoch;
  checkEpochSupported(source);
  const scope = options.scope ?? source.scope;
  checkScopeName(scope);
  if ((await backend.scopeRecord(scope)) !== undefined) {
    throw SeenStoreError.scopeExists(scope);
  }
  const n = source.epoch;
  const { counts } = contents.header;
  const imported: EpochHeader = options.open
    ? { ...source, scope, state: 'open', sealedAtMs: null, final: null }
    : {
        ...source,
        scope,
        state: 'sealed',
        sealedAtMs: source.sealedAtMs ?? Date.now(),
        final: source.final ?? { submitted: counts.submitted, added: counts.added, ...contents.header.summary },
      };
  const sizing = options.open
    ? undefined
    : capacityFromHistory(imported, contents.header.summary.estimatedDistinct, undefined);
  const next =
    sizing === undefined
      ? undefined
      : newEpochHeader(scope, n + 1, {
          capacityUrls: sizing.capacityUrls,
          fprTarget: source.fprTarget,
          strategy: strategyOf(source.slices[0]!, source.growth),
          normalize: source.normalize as NormalizeMode,
          sizing: sizing.sizing,
        });
  const record = await backend.importEpoch({
    scope,
    epoch: imported,
    counts: { submitted: counts.submitted, added: counts.added, sliceAdded: counts.sliceAdded },
    filters: contents.filters,
    ...(next === undefined ? {} : { next }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return { scope, imported: n, openEpoch: record.openEpoch };
}

/**
 * Why the filters of `source` cannot be ORed into those of `target`, or undefined when they can:
 * the same hash scheme, normalisation and chunk size, and every slice of `source` identical in
 * layout, geometry and seeds to the slice of `target` at the same place. `source` may have fewer
 * slices than `target` (a crawler that did not grow past its capacity), never more.
 */
export function mergeMismatch(target: EpochHeader, source: EpochHeader): string | undefined {
  const what = `${source.scope}/${source.epoch} into ${target.scope}/${target.epoch}`;
  if (source.hashScheme !== target.hashScheme)
    return `${what}: hash scheme ${source.hashScheme} vs ${target.hashScheme}`;
  if (source.normalize !== target.normalize) return `${what}: normalisation ${source.normalize} vs ${target.normalize}`;
  if (source.chunkBytes !== target.chunkBytes)
    return `${what}: chunk size ${source.chunkBytes} vs ${target.chunkBytes}`;
  if (source.slices[0]?.keying?.kind === 'counting-v1' || target.slices[0]?.keying?.kind === 'counting-v1') {
    return `${what}: counting epochs cannot be merged (their counters would have to be added, not OR-ed)`;
  }
  if (source.slices.length > target.slices.length) {
    return `${what}: ${source.slices.length} slices vs ${target.slices.length} (merge the one with more slices into the other, or with --out)`;
  }
  for (let j = 0; j < source.slices.length; j++) {
    const a = source.slices[j]!;
    const b = target.slices[j]!;
    if (a.layout !== b.layout) return `${what}: slice ${j} layout ${a.layout} vs ${b.layout}`;
    if (a.mBits !== b.mBits || a.k !== b.k)
      return `${what}: slice ${j} geometry m=${a.mBits} k=${a.k} vs m=${b.mBits} k=${b.k}`;
    if (JSON.stringify(a.keying ?? null) !== JSON.stringify(b.keying ?? null)) {
      return `${what}: slice ${j} keying ${JSON.stringify(a.keying ?? 'url')} vs ${JSON.stringify(b.keying ?? 'url')}`;
    }
    if (a.seeds.length !== b.seeds.length || a.seeds.some((seed, f) => seed !== b.seeds[f])) {
      return `${what}: slice ${j} seeds ${a.seeds.join(',')} vs ${b.seeds.join(',')} (filters hashed with different seeds cannot be merged; share seeds with import --open or --seeds)`;
    }
  }
  return undefined;
}

function refuseMismatch(target: EpochHeader, source: EpochHeader): void {
  const mismatch = mergeMismatch(target, source);
  if (mismatch !== undefined) throw new SeenStoreError('INCOMPATIBLE', `cannot merge ${mismatch}`);
}

/** ORs the filters of every file into arrays shaped like `target`'s filters (missing slices stay zero). */
function unionOf(target: EpochHeader, files: readonly ExportContents[]): Uint8Array[] {
  const union = target.slices.flatMap((slice) => filterGeometries(slice).map((g) => new Uint8Array(g.mBits / 8)));
  for (const file of files) {
    file.filters.forEach((bytes, f) => {
      const into = union[f]!;
      for (let i = 0; i < bytes.length; i++) into[i]! |= bytes[i]!;
    });
  }
  return union;
}

export interface MergeResult {
  readonly scope: string;
  readonly epoch: number;
  readonly files: number;
  /** Distinct URLs the merge brought in that the epoch did not hold, estimated from the fill. */
  readonly estimatedNewUrls: number;
  readonly estimatedDistinct: number;
  readonly estimatedFpr: number;
}

/**
 * ORs the filters of export files into the open epoch `epoch` (parallel crawlers sharing its
 * seeds). Every file is read and checked, and every file's compatibility too, before anything is
 * written; the merge itself is one transaction.
 */
export async function mergeIntoEpoch(
  hash: XxHash,
  epoch: EpochBits,
  paths: readonly string[],
  signal?: AbortSignal,
): Promise<MergeResult> {
  if (paths.length === 0) throw new SeenStoreError('USAGE', 'merge needs at least one export file');
  const files = await readAll(hash, paths, signal);
  await safePoint(signal, `merging into ${epoch.header.scope}/${epoch.header.epoch}`);
  for (const file of files) refuseMismatch(epoch.header, file.header.epoch);
  const estimatedNewUrls = await epoch.merge(unionOf(epoch.header, files), (header) => {
    for (const file of files) refuseMismatch(header, file.header.epoch);
  });
  const summary = await epoch.summary();
  return {
    scope: epoch.header.scope,
    epoch: epoch.header.epoch,
    files: files.length,
    estimatedNewUrls,
    estimatedDistinct: summary.estimatedDistinct,
    estimatedFpr: summary.estimatedFpr,
  };
}

export interface MergeFilesResult {
  readonly path: string;
  readonly files: number;
  readonly fileBytes: number;
  readonly rawBytes: number;
  readonly estimatedDistinct: number;
  readonly estimatedFpr: number;
}

/**
 * Writes the union of export files to a new export file. The file with the most slices gives the
 * header (seeds, geometry); every other must match it slice for slice.
 */
export async function mergeFiles(
  hash: XxHash,
  paths: readonly string[],
  out: string,
  signal?: AbortSignal,
): Promise<MergeFilesResult> {
  if (paths.length === 0) throw new SeenStoreError('USAGE', 'merge needs at least one export file');
  const files = await readAll(hash, paths, signal);
  const base = files.reduce((a, b) => (b.header.epoch.slices.length > a.header.epoch.slices.length ? b : a));
  for (const file of files) refuseMismatch(base.header.epoch, file.header.epoch);
  const filters = unionOf(base.header.epoch, files);
  const exported = new ExportedEpoch(hash, base.header.epoch, filters, base.header);
  const summary = exported.summary();
  const counts = files.reduce(
    (sum, file) => ({
      submitted: sum.submitted + file.header.counts.submitted,
      added: sum.added + file.header.counts.added,
    }),
    { submitted: 0, added: 0 },
  );
  const header: ExportHeader = {
    v: 1,
    exportedAtMs: Date.now(),
    epoch: base.header.epoch,
    counts: { ...counts, sliceAdded: summary.sliceEstimates },
    summary: {
      estimatedDistinct: summary.estimatedDistinct,
      fillRatio: summary.fillRatio,
      estimatedFpr: summary.estimatedFpr,
    },
    mergedFrom: files.map((file) => ({
      scope: file.header.epoch.scope,
      epoch: file.header.epoch.epoch,
      exportedAtMs: file.header.exportedAtMs,
      estimatedDistinct: file.header.summary.estimatedDistinct,
    })),
  };
  const { fileBytes, rawBytes } = await writeExport(hash, out, header, filters, signal);
  return {
    path: out,
    files: files.length,
    fileBytes,
    rawBytes,
    estimatedDistinct: summary.estimatedDistinct,
    estimatedFpr: summary.estimatedFpr,
  };
}

/** Reads and checks export files one after another (each whole before the next). */
async function readAll(
  hash: XxHash,
  paths: readonly string[],
  signal: AbortSignal | undefined,
): Promise<ExportContents[]> {
  const files: ExportContents[] = [];
  for (const path of paths) files.push(await readExport(hash, path, signal));
  return files;
}
