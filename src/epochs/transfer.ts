import { SeenStoreError } from '../errors.js';
import type { XxHash } from '../hash/xxhash.js';
import { CHUNK_PAYLOAD_BYTES, encodeChunk } from '../store/chunks.js';
import type { StoreEnv } from '../store/env.js';
import { EpochFilters } from '../store/epoch-filters.js';
import { readExport, writeExport, type ExportContents } from '../store/export-file.js';
import { faultPoint } from '../store/faults.js';
import { checkpointKey, chunkKey, dropKey, epochKey, scopeKey } from '../store/keys.js';
import type { EpochHeader, ScopeRecord } from '../store/records.js';
import type { NormalizeMode } from '../url/normalize.js';
import type { Layout } from '../filters/bloom.js';
import { checkScopeName, emptyCheckpoint, newEpochHeader } from './create.js';
import { finishPendingDrops } from './retention.js';
import { capacityFromHistory } from './sizing-policy.js';

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

export function exportEpoch(hash: XxHash, epoch: EpochFilters, path: string): ExportResult {
  const summary = epoch.summary();
  const { fileBytes, rawBytes } = writeExport(
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
export function importEpoch(env: StoreEnv, hash: XxHash, path: string, options: ImportOptions): ImportResult {
  const contents = readExport(hash, path);
  const source = contents.header.epoch;
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
  writeChunks(env, hash, scope, n, contents);
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
        layout: source.slices[0]!.layout as Layout,
        normalize: source.normalize as NormalizeMode,
        sizing: sizing.sizing,
      }, source.slices[0]!.seeds.length);
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

function writeChunks(env: StoreEnv, hash: XxHash, scope: string, epoch: number, contents: ExportContents): void {
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
  }
}
