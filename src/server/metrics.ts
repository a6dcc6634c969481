import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ScopeStats } from '../index.js';

/**
 * The server's Prometheus metrics (prom-client), in a registry of its own: commands and URLs as
 * counters (rates are Prometheus's `rate()`), batch size and commit latency as histograms,
 * connections, and per-scope figures of each open epoch read from the store at scrape time.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly commands: Counter<'command'>;
  readonly urls: Counter<'op'>;
  readonly errors: Counter<'kind'>;
  readonly batchUrls: Histogram;
  readonly commitSeconds: Histogram;
  readonly connections: Gauge;
  readonly connectionsTotal: Counter;
  readonly #commandCounters = new Map<string, { inc(): void }>();

  /** `scopeStats` is read at each scrape: the open epochs' figures. */
  constructor(scopeStats: () => Promise<readonly ScopeStats[]>) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'seenstore_' });
    this.commands = new Counter({
      name: 'seenstore_commands_total',
      help: 'Commands executed, by name',
      labelNames: ['command'],
      registers,
    });
    this.urls = new Counter({
      name: 'seenstore_urls_total',
      help: 'URLs by operation: adds (submitted, repeats included) and new (without repeats), queried (reads), enqueued (frontier)',
      labelNames: ['op'],
      registers,
    });
    this.errors = new Counter({
      name: 'seenstore_errors_total',
      help: 'Error replies and protocol errors, by kind',
      labelNames: ['kind'],
      registers,
    });
    this.batchUrls = new Histogram({
      name: 'seenstore_batch_urls',
      help: 'URLs per group commit (one journal commit of a scope)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536],
      registers,
    });
    this.commitSeconds = new Histogram({
      name: 'seenstore_commit_seconds',
      help: 'Time from a group commit starting to its batch being durable',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.connections = new Gauge({ name: 'seenstore_connections', help: 'Open client connections', registers });
    this.connectionsTotal = new Counter({
      name: 'seenstore_connections_total',
      help: 'Connections accepted',
      registers,
    });
    const epochGauge = (name: string, help: string, pick: (epoch: ScopeStats['epochs'][number]) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['scope', 'epoch'],
        registers,
        async collect() {
          this.reset();
          for (const scope of await scopeStats()) {
            const open = scope.epochs.find((epoch) => epoch.epoch === scope.openEpoch);
            if (open !== undefined) this.set({ scope: scope.scope, epoch: String(open.epoch) }, pick(open));
          }
        },
      });
    };
    epochGauge('seenstore_epoch_adds', 'Adds: URLs submitted to the open epoch, repeats included', (e) => e.adds);
    epochGauge(
      'seenstore_epoch_new_urls',
      'URLs the open epoch answered as new (the adds without repeats)',
      (e) => e.new,
    );
    // The names before issue 45, kept for one release so that alerts on them do not go silent.
    epochGauge(
      'seenstore_epoch_submitted_urls',
      'Deprecated: the same as seenstore_epoch_adds (removed in the next release)',
      (e) => e.adds,
    );
    epochGauge(
      'seenstore_epoch_added_urls',
      'Deprecated: the same as seenstore_epoch_new_urls (removed in the next release)',
      (e) => e.new,
    );
    epochGauge(
      'seenstore_epoch_estimated_distinct_urls',
      'Distinct URLs in the open epoch, estimated from the fill',
      (e) => e.estimatedDistinct,
    );
    epochGauge('seenstore_epoch_fill_ratio', 'Set bits over all bits of the open epoch', (e) => e.fillRatio);
    epochGauge(
      'seenstore_epoch_estimated_fpr',
      'False-positive rate of a query now, from the fill',
      (e) => e.estimatedFpr,
    );
    epochGauge('seenstore_epoch_fpr_target', 'Target false-positive rate of the open epoch', (e) => e.fprTarget);
    epochGauge('seenstore_epoch_capacity_urls', 'URLs the open epoch is sized for', (e) => e.capacityUrls);
    epochGauge(
      'seenstore_epoch_slices',
      'Slices of the open epoch (more than 1: it grew past its capacity)',
      (e) => e.slices,
    );
  }

  /** Counts one command (the labelled child is looked up once per name). */
  countCommand(name: string): void {
    let counter = this.#commandCounters.get(name);
    if (counter === undefined) {
      counter = this.commands.labels({ command: name });
      this.#commandCounters.set(name, counter);
    }
    counter.inc();
  }
}
