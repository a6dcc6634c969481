import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * The URLFrontier service's Prometheus metrics, in serve's registry (`--metrics-port`): calls,
 * errors by gRPC status, URLs in (by the status they were acked with) and out, and latency, each
 * per RPC. The reference service's `frontier_<rpc>_calls_total`, `frontier_putURLs_total`,
 * `frontier_getURLs_total` and `frontier_getURLs_latency_seconds` are these with an `rpc` label
 * (docs/frontier.md "URLFrontier" has the mapping).
 */
export class UrlFrontierMetrics {
  readonly #calls: Counter<'rpc'>;
  readonly #errors: Counter<'rpc' | 'code'>;
  readonly #urlsIn: Counter<'rpc' | 'status'>;
  readonly #urlsOut: Counter<'rpc'>;
  readonly #seconds: Histogram<'rpc'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#calls = new Counter({
      name: 'seenstore_urlfrontier_calls_total',
      help: 'URLFrontier calls received, by RPC',
      labelNames: ['rpc'],
      registers,
    });
    this.#errors = new Counter({
      name: 'seenstore_urlfrontier_errors_total',
      help: 'URLFrontier calls ended with an error status, by RPC and gRPC status code',
      labelNames: ['rpc', 'code'],
      registers,
    });
    this.#urlsIn = new Counter({
      name: 'seenstore_urlfrontier_urls_in_total',
      help: 'URLs put (PutURLs, PutDiscovered), by the status they were acked with (OK, SKIPPED, FAIL)',
      labelNames: ['rpc', 'status'],
      registers,
    });
    this.#urlsOut = new Counter({
      name: 'seenstore_urlfrontier_urls_out_total',
      help: 'URLs sent to clients (GetURLs, ListURLs)',
      labelNames: ['rpc'],
      registers,
    });
    this.#seconds = new Histogram({
      name: 'seenstore_urlfrontier_seconds',
      help: "Time to answer a unary call or GetURLs, or from a put stream's batch starting to commit to its acks",
      labelNames: ['rpc'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    });
  }

  call(rpc: string): void {
    this.#calls.inc({ rpc });
  }

  error(rpc: string, code: number): void {
    this.#errors.inc({ rpc, code: String(code) });
  }

  urlsIn(rpc: string, status: string, count = 1): void {
    if (count > 0) this.#urlsIn.inc({ rpc, status }, count);
  }

  urlsOut(rpc: string, count: number): void {
    if (count > 0) this.#urlsOut.inc({ rpc }, count);
  }

  /** Observes the seconds since `startNs` (process.hrtime.bigint()). */
  elapsed(rpc: string, startNs: bigint): void {
    this.#seconds.observe({ rpc }, Number(process.hrtime.bigint() - startNs) / 1e9);
  }
}
