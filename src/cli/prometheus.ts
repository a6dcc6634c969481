import type { DiskUsage, ScopeStats } from '../index.js';
import { pastCapacity } from './health.js';
import type { EpochStats } from '../epochs/scope.js';

/*
 * `stats --format prometheus`: the Prometheus text exposition format (version 0.0.4) that
 * node_exporter's textfile collector reads. Every value is a gauge: an epoch's counts are the
 * state of a thing that may be pruned, not a counter of this process.
 */

interface Metric {
  readonly name: string;
  readonly help: string;
  readonly value: (e: EpochStats) => number;
}

const EPOCH_METRICS: readonly Metric[] = [
  { name: 'seenstore_epoch_adds', help: 'Adds: URLs submitted to the epoch, repeats included.', value: (e) => e.adds },
  {
    name: 'seenstore_epoch_new_urls',
    help: 'URLs the epoch answered as new (the adds without repeats).',
    value: (e) => e.new,
  },
  {
    name: 'seenstore_epoch_estimated_distinct_urls',
    help: 'Distinct URLs estimated from the fill.',
    value: (e) => e.estimatedDistinct,
  },
  { name: 'seenstore_epoch_capacity_urls', help: 'URLs the epoch was planned for.', value: (e) => e.capacityUrls },
  {
    name: 'seenstore_epoch_fill_ratio',
    help: "Share of the epoch's bits set (all slices).",
    value: (e) => e.fillRatio,
  },
  {
    name: 'seenstore_epoch_estimated_fpr',
    help: 'False-positive rate of a query now, estimated from the fill.',
    value: (e) => e.estimatedFpr,
  },
  {
    name: 'seenstore_epoch_fpr_target',
    help: 'The false-positive rate the epoch promises.',
    value: (e) => e.fprTarget,
  },
  {
    name: 'seenstore_epoch_slices',
    help: 'Filter slices: 1, plus one per growth past the capacity.',
    value: (e) => e.slices,
  },
  {
    name: 'seenstore_epoch_bytes',
    help: 'Bytes the epoch holds: LMDB pages of its chunks and journal, or on Redis the MEMORY USAGE of its keys.',
    value: (e) => e.bytesOnDisk,
  },
  {
    name: 'seenstore_epoch_open',
    help: '1 for the open epoch of its scope, 0 for a sealed one.',
    value: (e) => (e.state === 'open' ? 1 : 0),
  },
  {
    name: 'seenstore_epoch_created_timestamp_seconds',
    help: 'When the epoch was created (Unix time).',
    value: (e) => e.createdAtMs / 1000,
  },
  {
    name: 'seenstore_epoch_past_capacity',
    help: '1 when the epoch grew a slice or its estimated distinct URLs exceed the capacity.',
    value: (e) => (pastCapacity(e) ? 1 : 0),
  },
  {
    name: 'seenstore_epoch_fpr_above_target',
    help: '1 when the estimated false-positive rate is above the target.',
    value: (e) => (e.estimatedFpr > e.fprTarget ? 1 : 0),
  },
];

/** A label value, escaped as the format asks (backslash, double quote, newline). */
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function sample(name: string, labels: Readonly<Record<string, string>>, value: number): string {
  const text = Object.entries(labels)
    .map(([k, v]) => `${k}="${label(v)}"`)
    .join(',');
  return `${name}{${text}} ${Number.isFinite(value) ? value : 'NaN'}`;
}

function family(name: string, help: string, samples: readonly string[]): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...samples];
}

/** `usage`: the LMDB file's figures; undefined for a store that has no file (Redis), whose store metrics are left out. */
export function renderPrometheus(store: string, scopes: readonly ScopeStats[], usage: DiskUsage | undefined): string {
  const lines: string[] = [];
  for (const metric of EPOCH_METRICS) {
    const samples = scopes.flatMap((s) =>
      s.epochs.map((e) => sample(metric.name, { store, scope: s.scope, epoch: String(e.epoch) }, metric.value(e))),
    );
    lines.push(...family(metric.name, metric.help, samples));
  }
  lines.push(
    ...family(
      'seenstore_scope_epochs',
      'Epochs the scope keeps (pruned ones are gone).',
      scopes.map((s) => sample('seenstore_scope_epochs', { store, scope: s.scope }, s.epochs.length)),
    ),
  );
  if (usage === undefined) return `${lines.join('\n')}\n`;
  const storeMetrics: [string, string, number][] = [
    ['seenstore_store_file_bytes', 'Size of the LMDB data file.', usage.fileBytes],
    ['seenstore_store_used_bytes', 'LMDB pages handed out so far (the file grows to this).', usage.usedBytes],
    [
      'seenstore_store_map_size_bytes',
      'The LMDB map: the most the file can grow to (STORE_FULL past it).',
      usage.mapSizeBytes,
    ],
    [
      'seenstore_store_reclaimable_bytes',
      "Of the used bytes, pages on LMDB's free list: reused by new writes, left out by a snapshot.",
      usage.reclaimableBytes,
    ],
  ];
  for (const [name, help, value] of storeMetrics) lines.push(...family(name, help, [sample(name, { store }, value)]));
  return `${lines.join('\n')}\n`;
}
