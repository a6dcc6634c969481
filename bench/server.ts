/**
 * The server benchmark (issue 20), part of `npm run bench`: `seenstore serve` (LMDB) against Redis 7
 * (Debian's redis-server, started here on a free loopback port in a temporary directory with
 * `appendonly yes`, `appendfsync always`: durable SADD, exact), in one run, on the same machine.
 *
 *   (a) 64 connections each sending single adds: BF.ADD vs SADD, load from redis-benchmark
 *       (redis-tools), random 12-digit members (`__rand_int__`).
 *   (b) 1,000 real URLs per BF.MADD from 8 connections, against SADD of single URLs pipelined 100
 *       deep from 8 connections: a load generator here sends prebuilt requests on raw sockets.
 *
 *   node dist/bench/server.js [--quick] [--runs N]
 *
 * Prints a table, then one JSON line (the last line of stdout) that bench/run.ts collects. Every
 * server is started fresh per run and stopped by its pid.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { BENCH_DIR, type Dataset } from './data.js';
import { redisBenchmark, startRedis, startSeenstore, type Running } from './servers.js';
import { median } from './stats.js';

const ROOT = resolve(BENCH_DIR, '..');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const runsArg = args.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : quick ? 1 : 3;

const SINGLE_CONNECTIONS = 64;
const SINGLE_REQUESTS = quick ? 50_000 : 200_000;
const BULK_CONNECTIONS = 8;
const MADD_URLS = 1_000;
const SADD_PIPELINE = 100;

export interface Row {
  readonly scenario: string;
  readonly contender: string;
  readonly urlsPerSec: number;
  readonly requestsPerSec: number;
  /** Latency of one request (a), of one BF.MADD or one pipeline of 100 SADDs (b), in ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

function progress(text: string): void {
  process.stderr.write(`bench server: ${text}\n`);
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function encode(args: readonly string[]): Buffer {
  let text = `*${args.length}\r\n`;
  for (const arg of args) text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return Buffer.from(text);
}

/**
 * (b) A closed-loop load generator: `connections` sockets, each sending its prebuilt requests one
 * round at a time (a round: one request, or a pipeline) and waiting for the round's reply bytes,
 * known in advance (integer replies of 4 bytes: `:0` or `:1`). Returns rounds' latencies.
 */
async function closedLoop(
  port: number,
  rounds: Buffer[][],
  replyBytes: number,
): Promise<{ seconds: number; latenciesMs: Float64Array }> {
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  await Promise.all(
    rounds.map(
      (mine) =>
        new Promise<void>((done, fail) => {
          const socket: Socket = connect(port, '127.0.0.1');
          socket.setNoDelay(true);
          let next = 0;
          let received = 0;
          let sentAt = 0n;
          const send = (): void => {
            if (next === mine.length) {
              socket.end();
              done();
              return;
            }
            received = 0;
            sentAt = process.hrtime.bigint();
            socket.write(mine[next++]!);
          };
          socket.on('connect', send);
          socket.on('data', (chunk: Buffer) => {
            if (received === 0 && chunk[0] === 45) fail(new Error(`error reply: ${chunk.toString('utf8', 0, 200)}`));
            received += chunk.length;
            if (received >= replyBytes) {
              latencies.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
              send();
            }
          });
          socket.on('error', fail);
        }),
    ),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, latenciesMs: Float64Array.from(latencies).sort() };
}

/** Splits `urls` over the connections into rounds of `perRound`, each built by `build`. */
function roundsOf(urls: readonly string[], perRound: number, build: (part: readonly string[]) => Buffer): Buffer[][] {
  const rounds: Buffer[][] = Array.from({ length: BULK_CONNECTIONS }, () => []);
  let c = 0;
  for (let at = 0; at + perRound <= urls.length; at += perRound) {
    rounds[c]!.push(build(urls.slice(at, at + perRound)));
    c = (c + 1) % BULK_CONNECTIONS;
  }
  return rounds;
}

async function bulk(urls: readonly string[]): Promise<Row[]> {
  const rows: Row[] = [];
  const scenario = `(b) ${BULK_CONNECTIONS} connections, real URLs`;
  const madd = roundsOf(urls, MADD_URLS, (part) => encode(['BF.MADD', 'bench', ...part]));
  const maddReply = `*${MADD_URLS}\r\n`.length + 4 * MADD_URLS;
  const sadd = roundsOf(urls, SADD_PIPELINE, (part) =>
    Buffer.concat(part.map((url) => encode(['SADD', 'bench', url]))),
  );
  const measure = async (
    contender: string,
    start: () => Promise<Running>,
    rounds: Buffer[][],
    replyBytes: number,
    urlsPerRound: number,
  ): Promise<void> => {
    const runs: Row[] = [];
    for (let r = 0; r < RUNS; r++) {
      progress(`${contender} run ${r + 1}/${RUNS}`);
      const server = await start();
      try {
        const { seconds, latenciesMs } = await closedLoop(server.port, rounds, replyBytes);
        const total = rounds.reduce((sum, mine) => sum + mine.length, 0);
        runs.push({
          scenario,
          contender,
          urlsPerSec: (total * urlsPerRound) / seconds,
          requestsPerSec: total / seconds,
          p50Ms: percentile(latenciesMs, 0.5),
          p99Ms: percentile(latenciesMs, 0.99),
        });
      } finally {
        await server.stop();
      }
    }
    rows.push(medianRow(runs));
  };
  await measure(`seenstore BF.MADD × ${MADD_URLS}`, () => startSeenstore(), madd, maddReply, MADD_URLS);
  await measure(`redis SADD pipelined ${SADD_PIPELINE} deep`, startRedis, sadd, 4 * SADD_PIPELINE, SADD_PIPELINE);
  return rows;
}

function medianRow(runs: readonly Row[]): Row {
  const pick = (field: 'urlsPerSec' | 'requestsPerSec' | 'p50Ms' | 'p99Ms'): number =>
    median(runs.map((run) => run[field]));
  return {
    ...runs[0]!,
    urlsPerSec: pick('urlsPerSec'),
    requestsPerSec: pick('requestsPerSec'),
    p50Ms: pick('p50Ms'),
    p99Ms: pick('p99Ms'),
  };
}

async function single(): Promise<Row[]> {
  const scenario = `(a) ${SINGLE_CONNECTIONS} connections, one add each at a time`;
  const rows: Row[] = [];
  for (const [contender, start, command] of [
    ['seenstore BF.ADD', () => startSeenstore(), ['BF.ADD', 'bench', '__rand_int__']],
    ['redis SADD', startRedis, ['SADD', 'bench', '__rand_int__']],
  ] as const) {
    const runs: Row[] = [];
    for (let r = 0; r < RUNS; r++) {
      progress(`${contender} run ${r + 1}/${RUNS}`);
      const server = await start();
      try {
        const figures = redisBenchmark(server.port, SINGLE_CONNECTIONS, SINGLE_REQUESTS, command);
        runs.push({ scenario, contender, urlsPerSec: figures.requestsPerSec, ...figures });
      } finally {
        await server.stop();
      }
    }
    rows.push(medianRow(runs));
  }
  return rows;
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export interface ServerTarget {
  readonly what: string;
  readonly measured: string;
  readonly target: string;
  readonly met: boolean;
}

function targets(rows: readonly Row[]): ServerTarget[] {
  const find = (prefix: string): Row => rows.find((row) => row.contender.startsWith(prefix))!;
  const singleRatio = find('seenstore BF.ADD').urlsPerSec / find('redis SADD').urlsPerSec;
  const madd = find('seenstore BF.MADD');
  const bulkRatio = madd.urlsPerSec / find('redis SADD pipelined').urlsPerSec;
  return [
    {
      what: '(a) single BF.ADD / single SADD, 64 connections',
      measured: `${fmt(singleRatio, 2)}×`,
      target: '≥ 2.00×',
      met: singleRatio >= 2,
    },
    {
      what: '(b) BF.MADD × 1,000 URLs/s, 8 connections',
      measured: fmt(madd.urlsPerSec),
      target: '≥ 500,000',
      met: madd.urlsPerSec >= 500_000,
    },
    {
      what: '(b) BF.MADD / SADD pipelined 100 deep',
      measured: `${fmt(bulkRatio, 2)}×`,
      target: '≥ 1.00×',
      met: bulkRatio >= 1,
    },
  ];
}

async function main(): Promise<void> {
  const redisVersion = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (redisVersion.status !== 0)
    throw new Error('redis-server is not installed (apt-get install redis-server redis-tools)');
  const datasets = JSON.parse(
    spawnSync(process.execPath, [join(ROOT, 'dist', 'bench', 'data.js'), ...(quick ? ['--quick'] : [])], {
      encoding: 'utf8',
      maxBuffer: 2 ** 26,
    }).stdout,
  ) as Dataset[];
  const dataset = datasets[datasets.length - 1]!;
  const limit = quick ? 200_000 : 1_000_000;
  const urls = readFileSync(dataset.path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .slice(0, limit);
  const rows = [...(await single()), ...(await bulk(urls))];
  const checked = targets(rows);
  const head = `seenstore serve vs Redis ${/v=([0-9.]+)/.exec(redisVersion.stdout)?.[1] ?? '?'} (appendonly yes, appendfsync always), median of ${RUNS} run(s); (b) on ${fmt(urls.length)} URLs of ${dataset.name}`;
  const lines = [
    head,
    '',
    '| scenario | contender | URLs/s | requests/s | p50 ms | p99 ms |',
    '|---|---|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.scenario} | ${row.contender} | ${fmt(row.urlsPerSec)} | ${fmt(row.requestsPerSec)} | ${fmt(row.p50Ms, 3)} | ${fmt(row.p99Ms, 3)} |`,
    ),
    '',
    '| target | measured | wanted | met |',
    '|---|---:|---:|---|',
    ...checked.map((t) => `| ${t.what} | ${t.measured} | ${t.target} | ${t.met ? 'yes' : 'MISSED'} |`),
  ];
  process.stdout.write(
    `${lines.join('\n')}\n${JSON.stringify({ text: lines.join('\n'), rows, targets: checked, dataset: dataset.name, urls: urls.length })}\n`,
  );
}

await main();
