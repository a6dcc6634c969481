import type { Command } from 'commander';
import { ExportedEpoch } from '../../epochs/exported.js';
import type { NormalizeMode } from '../../url/normalize.js';
import { batchOptions, inputProgress, type GlobalOptions, type InputOptions } from '../context.js';
import { forEachBatch, openInputChunks } from '../input.js';
import { formatCount, writeAll } from '../output.js';
import { stopOnSignals } from '../interrupt.js';

interface AgainstOptions extends GlobalOptions, InputOptions {
  readonly against: string;
}

/**
 * `diff --against FILE [URLS]`: set reconciliation with another machine (seed 004). The other
 * side's export file is a Bloom filter of what it has seen; every input URL the filter does not
 * hold is printed. Those the other side has certainly not seen (a Bloom filter has no false
 * negatives); the ones it wrongly claims are the filter's false positives, so about
 * estimatedFpr of the truly unseen URLs are missed. Counts go to stderr (stdout with --json).
 */
export async function diffAgainst(file: string | undefined, command: Command): Promise<void> {
  const options = command.optsWithGlobals<AgainstOptions>();
  const other = await ExportedEpoch.open(options.against, { signal: stopOnSignals() });
  const summary = other.summary();
  let missing = 0;
  let held = 0;
  const counts = await forEachBatch(
    openInputChunks(file),
    {
      ...batchOptions(options, other.epoch.normalize as NormalizeMode),
      signal: stopOnSignals(),
      progress: inputProgress('diff --against', file, () => `${formatCount(missing)} not seen there`),
    },
    async (lines) => {
      const answers = other.has(lines);
      let out = '';
      for (let i = 0; i < lines.length; i++) {
        if (answers[i]) held++;
        else {
          missing++;
          if (!options.json) out += `${lines[i]}\n`;
        }
      }
      await writeAll(process.stdout, out);
    },
  );
  // Of the URLs the other side truly lacks, a fraction fpr is claimed held: expected misses.
  const fpr = summary.estimatedFpr;
  const expectedMissed = fpr >= 1 ? held : (missing * fpr) / (1 - fpr);
  const report = {
    against: {
      scope: other.epoch.scope,
      epoch: other.epoch.epoch,
      exportedAtMs: other.header.exportedAtMs,
      estimatedDistinct: summary.estimatedDistinct,
    },
    read: counts.read,
    invalid: counts.invalid,
    notSeenByOther: missing,
    probablySeenByOther: held,
    falsePositiveRateOfPrinted: 0,
    falseNegativeRate: fpr,
    expectedMissed,
  };
  if (options.json) await writeAll(process.stdout, `${JSON.stringify(report)}\n`);
  else {
    process.stderr.write(
      `against ${report.against.scope}/${report.against.epoch}: ${formatCount(missing)} not seen there (certain), ${formatCount(held)} probably seen; ` +
        `the filter's FPR ${fpr.toExponential(2)} means about ${expectedMissed.toFixed(1)} unseen URLs were wrongly held back\n`,
    );
  }
}
