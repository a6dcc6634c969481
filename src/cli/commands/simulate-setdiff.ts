import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { XxHash } from '../../hash/xxhash.js';
import { runSetdiffExperiment, type SetdiffExperimentResult } from '../../setdiff/experiment.js';
import { MAX_TREES } from '../../setdiff/universe.js';
import { parseCount, warn, type GlobalOptions } from '../context.js';
import { formatCount, writeAll } from '../output.js';
import { parseRecall } from './setdiff.js';
import { percent, readDistinct } from './simulate.js';

interface SimulateSetdiffOptions extends GlobalOptions {
  readonly urls?: string;
  readonly insert?: string;
  readonly query?: string;
  readonly runs?: string;
  readonly boost?: string;
  readonly recall?: string;
  readonly strategy?: string;
  readonly hashes?: string;
  readonly bitsPerHash?: string;
  readonly fpr?: string;
}

/**
 * `simulate --mode setdiff`: seed 004's set difference on the caller's URLs, in memory
 * (src/setdiff/experiment.ts). A is the first --insert distinct URLs (default 10/11 of them); B is
 * as large, sharing all but --query of them (default 1 % of A) with A, and --query others.
 */
export async function simulateSetdiff(command: Command): Promise<void> {
  const options = command.optsWithGlobals<SimulateSetdiffOptions>();
  if (options.urls === undefined) throw new SeenStoreError('USAGE', 'simulate needs --urls FILE (one URL per line)');
  for (const [name, value] of [
    ['strategy', options.strategy],
    ['hashes', options.hashes],
    ['bits-per-hash', options.bitsPerHash],
    ['fpr', options.fpr],
  ] as const) {
    if (value !== undefined)
      throw new SeenStoreError(
        'USAGE',
        `--${name} has no meaning in setdiff mode (the summary's geometry follows from --recall)`,
      );
  }
  const insertWanted = parseCount('insert', options.insert);
  const queryWanted = parseCount('query', options.query);
  const runs = parseCount('runs', options.runs) ?? 1;
  const trees = parseCount('boost', options.boost) ?? 1;
  if (trees > MAX_TREES) throw new SeenStoreError('USAGE', `--boost must be at most ${MAX_TREES}, got ${trees}`);
  const recallTarget = parseRecall(options.recall);
  const urls = await readDistinct(
    options.urls,
    insertWanted === undefined ? Infinity : insertWanted + (queryWanted ?? Math.ceil(insertWanted / 100)),
  );
  const aUrls = insertWanted ?? Math.floor((urls.length * 10) / 11);
  const diffUrls = queryWanted ?? Math.max(1, Math.floor(aUrls / 100));
  if (aUrls + diffUrls > urls.length || diffUrls > aUrls) {
    throw new SeenStoreError(
      'USAGE',
      `${options.urls} has ${formatCount(urls.length)} distinct URLs; setdiff needs ${formatCount(aUrls)} for A and ${formatCount(diffUrls)} others for B − A (at most |A|)`,
    );
  }
  const input = {
    common: urls.slice(0, aUrls - diffUrls),
    onlyA: urls.slice(aUrls - diffUrls, aUrls),
    onlyB: urls.slice(aUrls, aUrls + diffUrls),
  };
  const hash = await XxHash.load();
  const results: SetdiffExperimentResult[] = [];
  for (let run = 0; run < runs; run++) {
    results.push(runSetdiffExperiment(hash, input, { trees, ...(recallTarget === undefined ? {} : { recallTarget }) }));
    if (runs > 1) warn(`simulate: run ${run + 1}/${runs} done`);
  }
  await writeAll(
    process.stdout,
    options.json ? `${JSON.stringify({ mode: 'setdiff', runs: results })}\n` : render(results),
  );
}

function render(results: readonly SetdiffExperimentResult[]): string {
  const r = results[0]!;
  const mean = (pick: (x: SetdiffExperimentResult) => number): number =>
    results.reduce((sum, x) => sum + pick(x), 0) / results.length;
  const ms = (pick: (x: SetdiffExperimentResult) => number): string => `${mean(pick).toFixed(1)} ms`;
  return (
    [
      `simulate   setdiff: |A| = |B| = ${formatCount(r.aUrls)}, |B − A| = ${formatCount(r.differenceUrls)}; ${r.trees} tree${r.trees === 1 ? '' : 's'}, m=${formatCount(r.mBits)} bits k=${r.k}, skip depth ${r.skipDepth}; ${results.length} run${results.length === 1 ? '' : 's'} with fresh seeds`,
      `summary    ${formatCount(Math.round(mean((x) => x.summaryBytes)))} bytes (${formatCount(Math.round(mean((x) => x.uncompressedBytes)))} uncompressed): ${mean((x) => x.bitsPerUrl).toFixed(2)} bits per URL of A, ${mean((x) => x.bitsOverLogLog).toFixed(2)} × |A| log2 log2 |B|`,
      `measured   recall ${percent(mean((x) => x.recall))} (per run ${results.map((x) => percent(x.recall)).join(' ')}), false reports ${mean((x) => x.falseReports)}, ε ${mean((x) => x.fprMeasured).toExponential(2)}`,
      `theory     recall ${percent(mean((x) => x.recallTheory))}: (1 − ε)^lookups over B's real depths (mean depth ${mean((x) => x.meanDepth).toFixed(1)})`,
      `time       A ${ms((x) => x.aBuildMs)}; B hash ${ms((x) => x.bHashMs)} + build ${ms((x) => x.bBuildMs)} (Θ(|B|)) + reconcile ${ms((x) => x.reconcileMs)} (∝ |B − A|, ${formatCount(Math.round(mean((x) => x.visitedNodes)))} lookups)`,
      `plain      BF(A) at the same recall (diff --against): ${mean((x) => x.plain.bitsPerUrl).toFixed(2)} bits per URL (${mean((x) => x.plain.compressedBitsPerUrl).toFixed(2)} compressed), B hash + query ${ms((x) => x.plain.queryMs)}`,
    ].join('\n') + '\n'
  );
}
