import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES, encodeChunk } from '../store/chunks.js';
import type { StoreEnv } from '../store/lmdb/env.js';
import { EpochFilters } from '../store/lmdb/epoch-filters.js';
import { readExport, writeExport, type ExportContents, type ExportHeader } from '../store/export-file.js';
import { ExportedEpoch } from './exported.js';
import { faultPoint } from '../store/faults.js';
import { safePoint } from '../store/interruption.js';
import { checkpointKey, chunkKey, dropKey, epochKey, scopeKey } from '../store/lmdb/keys.js';
import type { EpochHeader, ScopeRecord } from '../store/records.js';
import type { NormalizeMode } from '../url/normalize.js';
import { strategyOf } from '../filters/strategy.js';
import { checkScopeName, emptyCheckpoint, newEpochHeader } from './create.js';
import { finishPendingDrops } from './retention.js';
import { capacityFromHistory } from './sizing-policy.js';
import { filterGeometries } from '../filters/keying.js';

/** Chunks written per transaction while importing. */
const IMPORT_CHUNKS_PER_TXN = 256;

export interface ExportResult {
  readonly path: string;
  readonly scope: string;
  readonly epoch: number;
  readonly fileBytes: number;
  /** Bytes of the filters themselves: what the file would take without sparse-chunk coding. */
  readonly rawBytes: number;
}

export async function exportEpoch(hash: XxHash, epoch: EpochFilters, path: string, signal?: AbortSignal): Promise<ExportResult> {
  const summary = epoch.summary();
  const { fileBytes, rawBytes } = await writeExport(
    hash,
    path,
    {
      v: 1,
      exportedAtMs: Date.now(),
      epoch: epoch.header,
      counts: { submitted: summary.submitted, added: summary.added, sliceAdded: [...epoch.sliceAdded] },
      summary: { estimatedDistinct: summary.estimatedDistinct, fillRatio: summary.fillRatio, estimatedFpr: summary.estimatedFpr },
    },
    epoch.filterBytes(),
    signal,
  );
  return { path, scope: epoch.header.scope, epoch: epoch.header.epoch, fileBytes, rawBytes };
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
 * written. The data goes in under a drop marker, and one last transaction writes the headers and
 * the scope record, so a crash mid-import leaves no scope (the next import or prune clears the
 * leftovers).
 */
export async function importEpoch(env: StoreEnv, hash: XxHash, path: string, options: ImportOptions): Promise<ImportResult> {
  const contents = await readExport(hash, path, options.signal);
  const source = contents.header.epoch;
  EpochFilters.checkSupported(source);
  const scope = options.scope ?? source.scope;
  checkScopeName(scope);
  env.refresh();
  if (EpochFilters.readScope(env, scope) !== undefined) {
    throw new SeenStoreError('USAGE', `scope ${scope} exists; import into a new scope (--scope NAME), or merge into an epoch (merge --into-epoch)`);
  }
  finishPendingDrops(env, scope);
  const n = source.epoch;
  const now = Date.now();
  const imported: EpochHeader = options.open
    ? { ...source, scope, state: 'open', sealedAtMs: null, final: null }
    : {
        ...source,
        scope,
        state: 'sealed',
        sealedAtMs: source.sealedAtMs ?? now,
        final: source.final ?? { submitted: contents.header.counts.submitted, added: contents.header.counts.added, ...contents.header.summary },
      };
  env.write(() => env.putMeta(dropKey(scope, n), { v: 1, header: imported }));
  try {
    await writeChunks(env, hash, scope, n, contents, options.signal);
    await safePoint(options.signal, `importing ${path}`);
  } catch (error) {
    // Under its drop marker the partial data is no scope yet: remove it now rather than at the next import.
    finishPendingDrops(env, scope);
    throw error;
  }
  env.write(() => {
    env.putMeta(epochKey(scope, n), imported);
    const { counts } = contents.header;
    env.putMeta(checkpointKey(scope, n), { ...emptyCheckpoint(now), submitted: counts.submitted, added: counts.added, sliceAdded: [...counts.sliceAdded] });
    let openEpoch = n;
    if (!options.open) {
      openEpoch = n + 1;
      const sizing = capacityFromHistory(imported, contents.header.summary.estimatedDistinct, undefined);
      const next = newEpochHeader(scope, openEpoch, {
        capacityUrls: sizing.capacityUrls,
        fprTarget: source.fprTarget,
        strategy: strategyOf(source.slices[0]!, source.growth),
        normalize: source.normalize as NormalizeMode,
        sizing: sizing.sizing,
      });
      env.putMeta(epochKey(scope, openEpoch), next);
      env.putMeta(checkpointKey(scope, openEpoch), emptyCheckpoint(now));
    }
    const record: ScopeRecord = { v: 1, name: scope, openEpoch, createdAtMs: now };
    env.putMeta(scopeKey(scope), record);
    env.removeMeta(dropKey(scope, n));
    return openEpoch;
  });
  const record = EpochFilters.readScope(env, scope)!;
  return { scope, imported: n, openEpoch: record.openEpoch };
}

async function writeChunks(env: StoreEnv, hash: XxHash, scope: string, epoch: number, contents: ExportContents, signal: AbortSignal | undefined): Promise<void> {
  const pending: [number, number, Uint8Array][] = [];
  contents.filters.forEach((bytes, filter) => {
    for (let chunk = 0; chunk * CHUNK_PAYLOAD_BYTES < bytes.length; chunk++) {
      const payload = bytes.subarray(chunk * CHUNK_PAYLOAD_BYTES, (chunk + 1) * CHUNK_PAYLOAD_BYTES);
      if (payload.some((b) => b !== 0)) pending.push([filter, chunk, payload]);
    }
  });
  for (let start = 0; start < pending.length; start += IMPORT_CHUNKS_PER_TXN) {
    env.write(() => {
      for (const [filter, chunk, payload] of pending.slice(start, start + IMPORT_CHUNKS_PER_TXN)) {
        env.chunksDb.putSync(chunkKey(scope, epoch, filter, chunk), encodeChunk(hash, payload));
      }
    });
    faultPoint('import:mid-chunks');
    await safePoint(signal, `importing into ${scope}/${epoch}`);
  }
}

/**
 * Why the filters of `source` cannot be ORed into those of `target`, or undefined when they can:
 * the same hash scheme, normalisation and chunk size, and every slice of `source` identical in
 * layout, geometry and seeds to the slice of `target` at the same place. `source` may have fewer
 * slices than `target` (a crawler that did not grow past its capacity), never more.
 */
export function mergeMismatch(target: EpochHeader, source: EpochHeader): string | undefined {
  const what = `${source.scope}/${source.epoch} into ${target.scope}/${target.epoch}`;
  if (source.hashScheme !== target.hashScheme) return `${what}: hash scheme ${source.hashScheme} vs ${target.hashScheme}`;
  if (source.normalize !== target.normalize) return `${what}: normalisation ${source.normalize} vs ${target.normalize}`;
  if (source.chunkBytes !== target.chunkBytes) return `${what}: chunk size ${source.chunkBytes} vs ${target.chunkBytes}`;
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
    if (a.mBits !== b.mBits || a.k !== b.k) return `${what}: slice ${j} geometry m=${a.mBits} k=${a.k} vs m=${b.mBits} k=${b.k}`;
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
  epoch: EpochFilters,
  paths: readonly string[],
  expectOpen: () => void,
  signal?: AbortSignal,
): Promise<MergeResult> {
  if (paths.length === 0) throw new SeenStoreError('USAGE', 'merge needs at least one export file');
  const files = await readAll(hash, paths, signal);
  await safePoint(signal, `merging into ${epoch.header.scope}/${epoch.header.epoch}`);
  for (const file of files) refuseMismatch(epoch.header, file.header.epoch);
  const estimatedNewUrls = epoch.mergeFilters(unionOf(epoch.header, files), (header) => {
    expectOpen();
    for (const file of files) refuseMismatch(header, file.header.epoch);
  });
  const summary = epoch.summary();
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
export async function mergeFiles(hash: XxHash, paths: readonly string[], out: string, signal?: AbortSignal): Promise<MergeFilesResult> {
  if (paths.length === 0) throw new SeenStoreError('USAGE', 'merge needs at least one export file');
  const files = await readAll(hash, paths, signal);
  const base = files.reduce((a, b) => (b.header.epoch.slices.length > a.header.epoch.slices.length ? b : a));
  for (const file of files) refuseMismatch(base.header.epoch, file.header.epoch);
  const filters = unionOf(base.header.epoch, files);
  const exported = new ExportedEpoch(hash, base.header.epoch, filters, base.header);
  const summary = exported.summary();
  const counts = files.reduce(
    (sum, file) => ({ submitted: sum.submitted + file.header.counts.submitted, added: sum.added + file.header.counts.added }),
    { submitted: 0, added: 0 },
  );
  const header: ExportHeader = {
    v: 1,
    exportedAtMs: Date.now(),
    epoch: base.header.epoch,
    counts: { ...counts, sliceAdded: summary.sliceEstimates },
    summary: { estimatedDistinct: summary.estimatedDistinct, fillRatio: summary.fillRatio, estimatedFpr: summary.estimatedFpr },
    mergedFrom: files.map((file) => ({
      scope: file.header.epoch.scope,
      epoch: file.header.epoch.epoch,
      exportedAtMs: file.header.exportedAtMs,
      estimatedDistinct: file.header.summary.estimatedDistinct,
    })),
  };
  const { fileBytes, rawBytes } = await writeExport(hash, out, header, filters, signal);
  return { path: out, files: files.length, fileBytes, rawBytes, estimatedDistinct: summary.estimatedDistinct, estimatedFpr: summary.estimatedFpr };
}

/** Reads and checks export files one after another (each whole before the next). */
async function readAll(hash: XxHash, paths: readonly string[], signal: AbortSignal | undefined): Promise<ExportContents[]> {
  const files: ExportContents[] = [];
  for (const path of paths) files.push(await readExport(hash, path, signal));
  return files;
}
