/**
 * `npm run results:setdiff`: seed 004's approximate set difference reproduced on held-out real URLs
 * (docs/results.md, "Approximate set difference"). |A| = |B| = 1M repository URLs from
 * all-the-package-repos, |B − A| ∈ {0.1 %, 1 %, 10 %} of |B|; per cell the seed's parameters
 * (ε = 1 / log2 |B|, with and without boosting) and seenstore's defaults (ε for 93 % recall, the
 * top half of B's tree descended without lookups), next
 * to the plain BF(A) of `diff --against` at the same recall. Markdown on stdout, JSON in
 * bench/results/setdiff.json.
 *
 *   node dist/bench/setdiff.js [--a-urls N] [--runs R]
 *   node dist/bench/setdiff.js --render bench/results/setdiff.json   (the table again, from a run's JSON)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { XxHash } from '../src/hash/xxhash.js';
import {
  runSetdiffExperiment,
  type SetdiffExperimentConfig,
  type SetdiffExperimentResult,
} from '../src/setdiff/experiment.js';
import { BENCH_DIR, packageReposDataset, readUrls } from './data.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const A_URLS = option('a-urls', 1_000_000);
const RUNS = option('runs', 1);
const DIFFERENCES = [0.001, 0.01, 0.1];

interface Row {
  readonly label: string;
  readonly difference: number;
  readonly runs: SetdiffExperimentResult[];
}

function configs(bUrls: number): { label: string; config: SetdiffExperimentConfig }[] {
  const seedFpr = 1 / Math.log2(bUrls);
  return [
    { label: 'seed: ε = 1/log2 |B|, R = 1', config: { trees: 1, fprTarget: seedFpr, skipDepth: 0 } },
    { label: 'seed: ε = 1/log2 |B|, R = 4', config: { trees: 4, fprTarget: seedFpr, skipDepth: 0 } },
    { label: "93 %, R = 1, seed's visit", config: { trees: 1, skipDepth: 0 } },
    { label: '90 %, R = 1, skip', config: { trees: 1, recallTarget: 0.9 } },
    { label: 'default: 93 %, R = 1, skip', config: { trees: 1 } },
  ];
}

/** A deterministic shuffle (xorshift), so that every run of the script draws the same sets. */
function shuffle(urls: string[]): string[] {
  let x = 0x9e3779b9;
  for (let i = urls.length - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = (x >>> 0) % (i + 1);
    [urls[i], urls[j]] = [urls[j]!, urls[i]!];
  }
  return urls;
}

function mean(rows: readonly SetdiffExperimentResult[], pick: (r: SetdiffExperimentResult) => number): number {
  return rows.reduce((sum, r) => sum + pick(r), 0) / rows.length;
}

/** Times: the median run (a run that meets a garbage collection or another job's burst is one of three). */
function median(rows: readonly SetdiffExperimentResult[], pick: (r: SetdiffExperimentResult) => number): number {
  const values = rows.map(pick).sort((x, y) => x - y);
  return values[Math.floor((values.length - 1) / 2)]!;
}

function render(rows: readonly Row[], source: string): string {
  const aUrls = rows[0]!.runs[0]!.aUrls;
  const runs = rows[0]!.runs.length;
  const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
  const lines = [
    `|A| = |B| = ${aUrls.toLocaleString('en')} (${source}), ${runs} run(s) per cell with fresh seeds: sizes and recall are means, times (ms, this machine) medians.`,
    '',
    '| \\|B − A\\| | parameters | summary bytes (uncompressed) | bits/URL of A | bits / (\\|A\\| log2 log2 \\|B\\|) | ε planned / measured | recall measured / theory | false reports | B hash + build (ms) | lookups per URL of B − A | reconcile (ms) | reconcile ns per \\|B − A\\| log2 \\|B\\| | plain BF(A) same recall: bits/URL (compressed) | plain BF(A): B hash + query (ms) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const r = row.runs;
    lines.push(
      `| ${pct(row.difference)} (${r[0]!.differenceUrls.toLocaleString('en')}) | ${row.label.replaceAll('|', '\\|')} | ${Math.round(mean(r, (x) => x.summaryBytes)).toLocaleString('en')} (${Math.round(mean(r, (x) => x.uncompressedBytes)).toLocaleString('en')}) ` +
        `| ${mean(r, (x) => x.bitsPerUrl).toFixed(2)} | ${mean(r, (x) => x.bitsOverLogLog).toFixed(2)} | ${mean(r, (x) => x.fprTarget).toExponential(2)} / ${mean(r, (x) => x.fprMeasured).toExponential(2)} ` +
        `| ${pct(mean(r, (x) => x.recall))} / ${pct(mean(r, (x) => x.recallTheory))} | ${mean(r, (x) => x.falseReports)} | ${median(r, (x) => x.bHashMs).toFixed(0)} + ${median(r, (x) => x.bBuildMs).toFixed(0)} | ${mean(r, (x) => x.visitedNodes / x.differenceUrls).toFixed(1)} ` +
        `| ${median(r, (x) => x.reconcileMs).toFixed(1)} | ${median(r, (x) => x.reconcileNsPerDiffLog).toFixed(0)} | ${mean(r, (x) => x.plain.bitsPerUrl).toFixed(2)} (${mean(r, (x) => x.plain.compressedBitsPerUrl).toFixed(2)}) | ${median(r, (x) => x.plain.queryMs).toFixed(0)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const rendering = args.indexOf('--render');
  if (rendering >= 0) {
    const saved = JSON.parse(readFileSync(args[rendering + 1]!, 'utf8')) as { rows: Row[]; source: string };
    process.stdout.write(render(saved.rows, saved.source));
    return;
  }
  const dataset = packageReposDataset();
  const pool = shuffle(readUrls(dataset.path));
  const needed = A_URLS + Math.ceil(A_URLS * Math.max(...DIFFERENCES));
  if (pool.length < needed) throw new Error(`${dataset.name} has ${pool.length} URLs; ${needed} are needed`);
  const hash = await XxHash.load();
  // One small run first, so that the table's first cell does not carry the compiler's warm-up.
  runSetdiffExperiment(
    hash,
    { common: pool.slice(0, 20_000), onlyA: pool.slice(20_000, 21_000), onlyB: pool.slice(21_000, 22_000) },
    { trees: 1 },
  );
  const rows: Row[] = [];
  for (const difference of DIFFERENCES) {
    const diffUrls = Math.round(A_URLS * difference);
    // Held out: A's own URLs (onlyA) and B's new ones (onlyB) are disjoint slices of one shuffled pool.
    const input = {
      common: pool.slice(0, A_URLS - diffUrls),
      onlyA: pool.slice(A_URLS - diffUrls, A_URLS),
      onlyB: pool.slice(A_URLS, A_URLS + diffUrls),
    };
    for (const { label, config } of configs(A_URLS)) {
      const runs: SetdiffExperimentResult[] = [];
      for (let run = 0; run < RUNS; run++) {
        runs.push(runSetdiffExperiment(hash, input, config));
        process.stderr.write(
          `setdiff ${difference} ${label} run ${run + 1}: recall ${runs.at(-1)!.recall.toFixed(4)}\n`,
        );
      }
      rows.push({ label, difference, runs });
    }
  }
  const dir = join(BENCH_DIR, 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'setdiff.json'),
    `${JSON.stringify({ dataset: dataset.name, source: dataset.source, aUrls: A_URLS, runs: RUNS, rows }, null, 1)}\n`,
  );
  process.stdout.write(render(rows, dataset.source));
}

await main();
