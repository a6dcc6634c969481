import type { Command } from 'commander';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SeenStoreError } from '../../errors.js';
import { XxHash } from '../../hash/xxhash.js';
import { SetDifference, SetSummary, SetSummaryBuilder, encodeSetSummary } from '../../setdiff/set-difference.js';
import { writeSummaryFile } from '../../setdiff/summary-file.js';
import { MAX_TREES } from '../../setdiff/universe.js';
import { NORMALIZE_MODES, type NormalizeMode } from '../../url/normalize.js';
import { batchOptions, inputProgress, parseCount, type GlobalOptions, type InputOptions } from '../context.js';
import { forEachBatch, openInput, openInputChunks, type BatchOptions } from '../input.js';
import { stopOnSignals } from '../interrupt.js';
import { formatCount, writeAll } from '../output.js';
import { parseChoice } from '../parse.js';

interface SummarizeOptions extends GlobalOptions, InputOptions {
  readonly out?: string;
  readonly normalize?: string;
  readonly boost?: string;
  readonly recall?: string;
  readonly bUrls?: string;
}

interface AgainstOptions extends GlobalOptions, InputOptions {
  readonly against?: string;
  readonly boost?: string;
}

/**
 * `setdiff summarize [FILE] --out a.sum`, on machine A: BF(MT_A), the compressed Bloom filter of
 * the Merkle tree of A's URLs (src/setdiff/), for machine B's `setdiff --against`.
 */
export async function summarizeCommand(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<SummarizeOptions>();
  if (options.out === undefined)
    throw new SeenStoreError('USAGE', 'setdiff summarize needs --out FILE (where the summary is written)');
  const normalize = parseChoice<NormalizeMode>('normalize', options.normalize, NORMALIZE_MODES) ?? 'none';
  const recallTarget = parseRecall(options.recall);
  const bUrls = parseCount('b-urls', options.bUrls);
  const trees = parseCount('boost', options.boost) ?? 1;
  if (trees > MAX_TREES) throw new SeenStoreError('USAGE', `--boost must be at most ${MAX_TREES}, got ${trees}`);
  const hash = await XxHash.load();
  const builder = new SetSummaryBuilder(hash, {
    normalize,
    trees,
    ...(recallTarget === undefined ? {} : { recallTarget }),
    ...(bUrls === undefined ? {} : { bUrls }),
  });
  const counts = await forEachBatch(
    openInputChunks(file),
    {
      ...batchOptions(options, normalize),
      signal: stopOnSignals(),
      progress: inputProgress('setdiff summarize', file, () => ''),
    },
    async (lines) => builder.add(lines),
  );
  const summary = builder.finish();
  const encoded = encodeSetSummary(hash, summary);
  writeSummaryFile(options.out, encoded.bytes);
  const tree = summary.header.trees[0]!;
  const elements = summary.header.elements;
  const report = {
    out: options.out,
    read: counts.read,
    invalid: counts.invalid,
    elements,
    trees: summary.header.trees.length,
    nodesPerTree: tree.nodes,
    mBits: tree.mBits,
    k: tree.k,
    fprTarget: summary.header.plan.fprTarget,
    fprEstimated: summary.fpr(0),
    recallTarget: summary.header.plan.recallTarget,
    compressedBytes: encoded.compressedBytes,
    uncompressedBytes: encoded.uncompressedBytes,
    bitsPerUrl: elements === 0 ? 0 : (8 * encoded.compressedBytes) / elements,
  };
  if (options.json) await writeAll(process.stdout, `${JSON.stringify(report)}\n`);
  else {
    process.stderr.write(
      `summary of ${formatCount(elements)} URLs in ${report.out}: ${formatCount(report.compressedBytes)} bytes (${formatCount(report.uncompressedBytes)} uncompressed), ` +
        `${report.bitsPerUrl.toFixed(2)} bits per URL; ${report.trees} tree${report.trees === 1 ? '' : 's'} of ${formatCount(tree.nodes)} nodes, ` +
        `m=${formatCount(tree.mBits)} k=${tree.k}, FPR ${report.fprEstimated.toExponential(2)} for ${(100 * report.recallTarget).toFixed(0)}% of B − A expected\n`,
    );
  }
}

/**
 * `setdiff [FILE] --against a.sum`, on machine B: prints the URLs of B judged not in A, in input
 * order. Two passes over the input (hashes only are kept): the first builds MT_B, the second prints
 * the lines the visit marked. Standard input and pipes are spooled to a temporary file first.
 */
export async function setdiffCommand(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<AgainstOptions>();
  if (options.against === undefined)
    throw new SeenStoreError(
      'USAGE',
      'setdiff needs --against SUMMARY (a file written by setdiff summarize on the other machine)',
    );
  const hash = await XxHash.load();
  const summary = await SetSummary.read(hash, options.against);
  const boost = parseCount('boost', options.boost);
  const difference = new SetDifference(hash, summary, boost === undefined ? {} : { boost });
  const signal = stopOnSignals();
  const input = await rereadable(file);
  try {
    const batch: BatchOptions = { ...batchOptions(options, difference.normalize), signal };
    const counts = await forEachBatch(
      createReadStream(input.path),
      { ...batch, progress: inputProgress('setdiff', input.path, () => '') },
      async (lines) => difference.add(lines),
    );
    const result = difference.finish();
    let line = 0;
    const marks = result.marks;
    // Pass 2 reads the same lines; its invalid ones were counted and reported by pass 1.
    await forEachBatch(createReadStream(input.path), { ...batch, warn: () => undefined }, async (lines) => {
      let out = '';
      for (const text of lines) if (marks[line++] === 1 && !options.json) out += `${text}\n`;
      await writeAll(process.stdout, out);
    });
    const report = {
      against: options.against,
      read: counts.read,
      invalid: counts.invalid,
      notInOther: result.reported,
      distinct: result.leaves,
      trees: result.trees,
      summaryBytes: summary.header.trees.reduce((n, tree) => n + tree.storedBytes, 0),
      visitedNodes: result.visitedNodes,
      buildMs: result.buildMs,
      reconcileMs: result.reconcileMs,
    };
    if (options.json) await writeAll(process.stdout, `${JSON.stringify(report)}\n`);
    else {
      process.stderr.write(
        `against ${report.against} (${formatCount(summary.header.elements)} URLs, ${formatCount(report.summaryBytes)} bytes, ${report.trees} tree${report.trees === 1 ? '' : 's'}): ` +
          `${formatCount(report.notInOther)} of ${formatCount(report.read)} judged not there; build ${report.buildMs.toFixed(1)} ms, ` +
          `reconciliation ${report.reconcileMs.toFixed(1)} ms over ${formatCount(report.visitedNodes)} nodes\n`,
      );
    }
  } finally {
    input.remove();
  }
}

export function parseRecall(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !(value > 0 && value < 1))
    throw new SeenStoreError(
      'USAGE',
      `--recall must be a fraction strictly between 0 and 1, got ${JSON.stringify(text)}`,
    );
  return value;
}

/** A path the input can be read from twice: FILE when it is a regular file, else a spooled copy. */
async function rereadable(file: string | undefined): Promise<{ path: string; remove(): void }> {
  if (file !== undefined && file !== '-') {
    let regular: boolean;
    try {
      regular = statSync(file).isFile();
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT')
        throw new SeenStoreError('NOT_FOUND', `no such input file: ${file}`, { cause: error });
      throw error;
    }
    if (regular) return { path: file, remove: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), 'seenstore-setdiff-'));
  const path = join(dir, 'input');
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    await pipeline(openInput(file), createWriteStream(path));
  } catch (error) {
    remove();
    throw error;
  }
  return { path, remove };
}
