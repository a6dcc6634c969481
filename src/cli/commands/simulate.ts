import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { SeenStoreError } from '../../errors.js';
import {
  SIMULATION_MODES,
  simulate,
  type SimulationConfig,
  type SimulationMode,
  type SimulationResult,
} from '../../filters/experiment.js';
import { MAX_HASHES } from '../../filters/sizing.js';
import { parseStrategy } from '../../filters/strategy.js';
import { XxHash } from '../../hash/xxhash.js';
import { MAX_KEY_BYTES } from '../../url/normalize.js';
import { parseCount, parseFpr, warn, type GlobalOptions } from '../context.js';
import { LineSplitter } from '../lines.js';
import { formatCount, writeAll } from '../output.js';

interface SimulateOptions extends GlobalOptions {
  readonly urls?: string;
  readonly insert?: string;
  readonly query?: string;
  readonly mode?: string;
  readonly strategy?: string;
  readonly hashes?: string;
  readonly bitsPerHash?: string;
  readonly fpr?: string;
  readonly runs?: string;
}

/**
 * `simulate`: the thesis's false-positive experiments on the caller's own URLs, in memory, with the
 * store's filters and hash scheme, measured next to the closed-form theory (src/filters/experiment.ts).
 */
export async function simulateCommand(command: Command): Promise<void> {
  const options = command.optsWithGlobals<SimulateOptions>();
  if (options.mode === 'setdiff') return (await import('./simulate-setdiff.js')).simulateSetdiff(command);
  const config = simulationConfig(options);
  if (options.urls === undefined) throw new SeenStoreError('USAGE', 'simulate needs --urls FILE (one URL per line)');
  const incremental = config.mode === 'incremental' || config.mode === 'revisit-incremental';
  const insertWanted = parseCount('insert', options.insert);
  const queryWanted = parseCount('query', options.query);
  if (incremental && queryWanted !== undefined)
    throw new SeenStoreError(
      'USAGE',
      `--query has no meaning in ${config.mode} mode: every inserted URL is queried first`,
    );
  // Without counts: every distinct URL (incremental) or the first half inserted, the rest queried.
  const wanted =
    insertWanted === undefined || (!incremental && queryWanted === undefined)
      ? Infinity
      : insertWanted + (queryWanted ?? 0);
  const urls = await readDistinct(options.urls, wanted);
  const insertCount = insertWanted ?? (incremental ? urls.length : Math.floor(urls.length / 2));
  const queryCount = incremental ? 0 : (queryWanted ?? urls.length - insertCount);
  if (insertCount + queryCount > urls.length || insertCount === 0 || (!incremental && queryCount === 0)) {
    throw new SeenStoreError(
      'USAGE',
      `${options.urls} has ${formatCount(urls.length)} distinct URLs; ${config.mode} needs ${formatCount(insertCount)} to insert${incremental ? '' : ` and ${formatCount(queryCount)} others to query`}`,
    );
  }
  const insert = urls.slice(0, insertCount);
  const query = urls.slice(insertCount, insertCount + queryCount);
  const hash = await XxHash.load();
  let result: SimulationResult;
  try {
    result = simulate(hash, insert, query, config, (run) => warn(`simulate: run ${run}/${config.runs} done`));
  } catch (error) {
    if (error instanceof RangeError) throw new SeenStoreError('USAGE', error.message, { cause: error });
    throw error;
  }
  await writeAll(process.stdout, options.json ? `${JSON.stringify(result)}\n` : render(result));
}

function simulationConfig(options: SimulateOptions): SimulationConfig {
  const mode = (options.mode ?? 'non-incremental') as SimulationMode;
  if (!SIMULATION_MODES.includes(mode))
    throw new SeenStoreError(
      'USAGE',
      `--mode must be one of ${SIMULATION_MODES.join(', ')}, got ${JSON.stringify(options.mode)}`,
    );
  const strategy = parseStrategy(options.strategy ?? 'classic');
  const hashes = parseCount('hashes', options.hashes);
  if (hashes !== undefined && hashes > MAX_HASHES)
    throw new SeenStoreError('USAGE', `--hashes must be at most ${MAX_HASHES}, got ${hashes}`);
  const runs = parseCount('runs', options.runs) ?? 1;
  if (options.bitsPerHash !== undefined && options.fpr !== undefined)
    throw new SeenStoreError('USAGE', 'give --bits-per-hash or --fpr, not both');
  if (options.bitsPerHash !== undefined) {
    const bitsPerHash = Number(options.bitsPerHash);
    if (options.bitsPerHash.trim() === '' || !(bitsPerHash > 0 && bitsPerHash <= 1024)) {
      throw new SeenStoreError(
        'USAGE',
        `--bits-per-hash must be a number in (0, 1024], got ${JSON.stringify(options.bitsPerHash)}`,
      );
    }
    if (hashes === undefined)
      throw new SeenStoreError('USAGE', '--bits-per-hash M sizes each filter as N·K·M bits, so it needs --hashes K');
    return { mode, strategy, hashes, sizing: { bitsPerHash }, runs };
  }
  const fpr = parseFpr(options.fpr) ?? 0.01;
  return { mode, strategy, ...(hashes === undefined ? {} : { hashes }), sizing: { fpr }, runs };
}

/** Reads distinct non-empty lines of FILE (exact bytes, CR and BOM removed) until `wanted` are found. */
export async function readDistinct(file: string, wanted: number): Promise<string[]> {
  const seen = new Set<string>();
  let invalid = 0;
  const splitter = new LineSplitter(
    {
      line: (text) => {
        if (seen.size < wanted) seen.add(text);
      },
      invalid: () => invalid++,
    },
    MAX_KEY_BYTES,
  );
  const stream = createReadStream(file, { highWaterMark: 1024 * 1024 });
  try {
    for await (const chunk of stream) {
      splitter.push(chunk as Buffer);
      if (seen.size >= wanted) break;
    }
    splitter.end();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES')
      throw new SeenStoreError('USAGE', `cannot read --urls ${file}: ${code}`, { cause: error });
    throw error;
  } finally {
    stream.destroy();
  }
  if (invalid > 0)
    warn(
      `simulate: skipped ${formatCount(invalid)} lines that are not valid UTF-8 or longer than ${MAX_KEY_BYTES} bytes`,
    );
  return [...seen];
}

export function percent(x: number): string {
  if (x === 0) return '0%';
  const digits = Math.max(2, 2 - Math.floor(Math.log10(x * 100)) + 1);
  return `${(x * 100).toFixed(Math.min(digits, 8))}%`;
}

function describeFilters(r: SimulationResult): string {
  const first = r.geometries[0]!;
  const same = r.geometries.every((g) => g.mBits === first.mBits && g.k === first.k && g.layout === first.layout);
  const one = (g: SimulationResult['geometries'][number]): string =>
    `${g.layout} m=${formatCount(g.mBits)} bits k=${g.k}`;
  return same ? `each ${one(first)}` : r.geometries.map(one).join(', ');
}

function render(r: SimulationResult): string {
  const perSecond = (x: number): string => `${(x / 1e6).toFixed(2)} M/s`;
  const z = Number.isFinite(r.z) ? `${r.z >= 0 ? '+' : ''}${r.z.toFixed(2)}` : 'inf';
  return (
    [
      `simulate   ${r.mode}, ${r.strategy}: ${r.geometries.length} filter${r.geometries.length === 1 ? '' : 's'} (${describeFilters(r)}; ${r.sizingRule})`,
      `urls       ${formatCount(r.inserted)} inserted, ${formatCount(r.queried)} queried per run, ${r.runs.length} run${r.runs.length === 1 ? '' : 's'} with fresh seeds`,
      `measured   FPR ${percent(r.mean)} (sd ${percent(r.sd)}, min ${percent(r.min)}, max ${percent(r.max)}); false positives per run ${r.runs.map((run) => run.falsePositives).join(' ')}`,
      `theory     FPR ${percent(r.theory)}; z = ${z} standard errors`,
      `memory     ${r.bitsPerUrl.toFixed(2)} bits per URL`,
      `speed      adds ${perSecond(r.addsPerSecond)}, queries ${perSecond(r.queriesPerSecond)} (median run, in memory)`,
    ].join('\n') + '\n'
  );
}
