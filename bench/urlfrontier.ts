/**
 * The URLFrontier gRPC service (issue 28, docs/frontier.md "URLFrontier"): PutURLs ingest of
 * discovered URLs and GetURLs hand-out in URLs/s, and memory per queued URL, against the published
 * figures of URLFrontier's RocksDB reference service (56-63k URLs/s ingest). `seenstore serve
 * --urlfrontier-port 0` runs in a process of its own over each store; this process is the gRPC
 * client (@grpc/grpc-js), as a crawler would be. Beside it, the same URLs through Scope.enqueue in
 * process: what the engine costs without gRPC. Markdown on stdout (docs/benchmarks.md).
 *
 *   npm run build && tsc -p bench/tsconfig.json && node dist/bench/urlfrontier.js
 *
 * The URLs: the shared real lists (../shared/data, ~50k distinct URLs of ~3,500 hosts), put as
 * PASSES crawls of their own (crawl IDs) to make the run long enough to time, once on one stream and
 * once spread over STREAMS streams into each crawl; without the shared
 * data the bench says so and stops.
 *
 * Issue 44 rows (`--only issue44` runs them alone): PutDiscovered from ONE Python grpcio client
 * (bench/urlfrontier-grpcio.py) in batches of 1,000 real URLs of all-the-package-repos, on LMDB and
 * on a local Redis Cluster (3 masters, test/helpers/redis-cluster.ts), and GetURLs, one URL per
 * host, over 50,000 hosts synthesized from the shared lists' URLs, on LMDB.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeenStore } from '../src/index.js';
import { NEEDS_SHARED_DATA, ROOT } from '../test/helpers/data.js';
import { redisMissing, startRedisCluster } from '../test/helpers/redis-cluster.js';
import { URLFRONTIER_PROTO_PATH } from '../src/urlfrontier/proto.js';
import { discovered, FrontierClient, type Ack } from '../test/helpers/urlfrontier.js';
import { BENCH_DIR, cliOf, packageReposDataset, readUrls, sharedDataset } from './data.js';
import { recordTargets, type TargetRow } from './targets.js';

const PASSES = 4;
/** Streams at once in the concurrent ingest row. */
const STREAMS = 4;
const TARGET_INGEST_URLS_PER_S = 200_000;
const PUBLISHED_ROCKSDB = '56-63k';

if (NEEDS_SHARED_DATA !== false) {
  process.stdout.write(`URLFrontier bench skipped: ${NEEDS_SHARED_DATA}\n`);
  process.exit(0);
}

const urls = readUrls(sharedDataset().path);
const hosts = new Set(
  urls.map((url) => {
    try {
      return new URL(url).host;
    } catch {
      return '';
    }
  }),
).size;

const CLI = cliOf(ROOT);

/** `seenstore serve --urlfrontier-port 0` over `location`, and the port it logged. */
function serve(location: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      '--store',
      location,
      'serve',
      '--port',
      '0',
      '--urlfrontier-port',
      '0',
      '--log-json',
      '--default-capacity',
      '1000000',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let log = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      log += chunk;
      const line = log.split('\n').find((l) => l.includes('"event":"urlfrontier"'));
      if (line !== undefined) resolve({ child, port: (JSON.parse(line) as { port: number }).port });
    });
    child.on('exit', (code) => reject(new Error(`serve exited (${code}): ${log}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? dirBytes(path) : statSync(path).size;
  }
  return total;
}

/** Sends `items` on one PutURLs stream, honouring backpressure; resolves with the acks once every one is in. */
function putAll(client: FrontierClient, items: readonly object[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = client.putStream();
    let acked = 0;
    let failed = 0;
    stream.on('data', (ack: Ack) => {
      acked++;
      if (ack.status !== 'OK') failed++;
    });
    stream.on('end', () => (failed === 0 ? resolve(acked) : reject(new Error(`${failed} items not acked OK`))));
    stream.on('error', reject);
    let i = 0;
    const pump = (): void => {
      while (i < items.length) if (!stream.write(items[i++])) return void stream.once('drain', pump);
      stream.end();
    };
    pump();
  });
}

interface Row {
  readonly store: string;
  readonly ingest1: number;
  readonly ingestN: number;
  readonly handOut: number;
  readonly rssPerUrl: number;
  readonly diskPerUrl: number | undefined;
}

async function measure(name: string, location: string, dir: string | undefined): Promise<Row> {
  const server = await serve(location);
  const port = server.port;
  const client = new FrontierClient(port);
  try {
    const crawlItems = (crawl: string): object[] => urls.map((url) => discovered(url, { crawlID: crawl }));
    const rssBefore = rssBytes(server.child.pid!);
    const diskBefore = dir === undefined ? 0 : dirBytes(dir);
    // One stream, PASSES crawls in turn.
    let started = process.hrtime.bigint();
    for (let pass = 0; pass < PASSES; pass++) await putAll(client, crawlItems(`one${pass}`));
    const ingest1 = (PASSES * urls.length) / (Number(process.hrtime.bigint() - started) / 1e9);
    // STREAMS streams at once into one crawl (a crawler's fetcher threads), each a share of the URLs.
    const clients = Array.from({ length: STREAMS }, () => new FrontierClient(port));
    started = process.hrtime.bigint();
    for (let pass = 0; pass < PASSES; pass++) {
      const items = crawlItems(`many${pass}`);
      await Promise.all(
        clients.map((c, k) =>
          putAll(
            c,
            items.filter((_, i) => i % STREAMS === k),
          ),
        ),
      );
    }
    const ingestN = (PASSES * urls.length) / (Number(process.hrtime.bigint() - started) / 1e9);
    clients.forEach((c) => c.close());
    const queued = 2 * PASSES * urls.length;
    const rssPerUrl = (rssBytes(server.child.pid!) - rssBefore) / queued;
    const diskPerUrl = dir === undefined ? undefined : (dirBytes(dir) - diskBefore) / queued;
    // Hand-out: every URL of one crawl, no delay between takes of a queue (politeness off), 100 per queue per call.
    // LMDB's interim frontier (before its v2 driver) answers UNIMPLEMENTED here, and has no delays to turn off.
    await client.call('SetDelay', { key: '', delay_requestable: 0, crawlID: 'one0' }).catch(() => undefined);
    started = process.hrtime.bigint();
    let handed = 0;
    for (;;) {
      const got = await client.get({ crawlID: 'one0', max_urls_per_queue: 100, delay_requestable: 600 });
      if (got.length === 0) break;
      handed += got.length;
    }
    const handOut = handed / (Number(process.hrtime.bigint() - started) / 1e9);
    if (handed !== urls.length) throw new Error(`GetURLs handed out ${handed} of ${urls.length} URLs`);
    return { store: name, ingest1, ingestN, handOut, rssPerUrl, diskPerUrl };
  } finally {
    client.close();
    await stop(server.child);
  }
}

/** The same URLs through Scope.enqueue and take in this process: the engine without gRPC. */
async function engine(location: string): Promise<{ enqueue: number; take: number }> {
  const store = await SeenStore.open(location, { onWarning: () => {} });
  try {
    const scope = store.scope('engine', { capacityUrls: urls.length * 2, keys: 'raw' });
    let started = process.hrtime.bigint();
    for (let i = 0; i < urls.length; i += 8_192) await scope.enqueue(urls.slice(i, i + 8_192));
    const enqueue = urls.length / (Number(process.hrtime.bigint() - started) / 1e9);
    const frontier = scope.frontier();
    await frontier.configure({ delayMs: 0 }).catch(() => undefined);
    started = process.hrtime.bigint();
    let taken = 0;
    for (;;) {
      const got = await frontier.take(65_536, { perQueue: 100, leaseMs: 600_000 });
      if (got.length === 0) break;
      taken += got.length;
    }
    return { enqueue, take: taken / (Number(process.hrtime.bigint() - started) / 1e9) };
  } finally {
    await store.close();
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en');

/** URLs of the PutDiscovered rows: the first of all-the-package-repos, in file order. */
const PUT_DISCOVERED_URLS = 300_000;
const PUT_DISCOVERED_BATCH = 1_000;
/** Hosts of the GetURLs row, one URL each. */
const GET_URLS_HOSTS = 50_000;
const TARGET_PUT_DISCOVERED_LMDB = 150_000;
const TARGET_PUT_DISCOVERED_REDIS = 50_000;
const TARGET_GET_URLS_LMDB = 100_000;
const PYTHON = '/usr/bin/python3';

interface GrpcioRun {
  readonly urls: number;
  readonly seconds: number;
  readonly OK?: number;
  readonly SKIPPED?: number;
}

/** Runs the Python grpcio client (bench/urlfrontier-grpcio.py) against `port`. */
function grpcio(pbDir: string, port: number, args: readonly string[]): GrpcioRun {
  const out = execFileSync(PYTHON, [join(BENCH_DIR, 'urlfrontier-grpcio.py'), pbDir, String(port), ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out) as GrpcioRun;
}

/** One URL per host, GET_URLS_HOSTS hosts: the shared lists' paths under hosts of their own. */
function perHostUrls(): string[] {
  return Array.from({ length: GET_URLS_HOSTS }, (_, i) => {
    const source = new URL(urls[i % urls.length]!);
    return `https://h${i}.${source.hostname}${source.pathname}`;
  });
}

/** PutDiscovered (and on LMDB GetURLs) through one grpcio client; rows of docs/benchmarks.md "Issue 44". */
async function issue44(work: string): Promise<void> {
  const missingGrpcio =
    execFileSync(PYTHON, ['-c', 'import grpc, google.protobuf; print("ok")'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim() !== 'ok';
  if (missingGrpcio)
    throw new Error('the issue 44 rows need Debian python3-grpcio, python3-protobuf and protobuf-compiler');
  const pbDir = join(work, 'pb');
  execFileSync('mkdir', ['-p', pbDir]);
  execFileSync('protoc', [
    `--proto_path=${join(URLFRONTIER_PROTO_PATH, '..')}`,
    `--python_out=${pbDir}`,
    URLFRONTIER_PROTO_PATH,
  ]);
  const putFile = join(work, 'put-discovered.txt');
  const repos = readUrls(packageReposDataset().path).slice(0, PUT_DISCOVERED_URLS);
  writeFileSync(putFile, `${repos.join('\n')}\n`);
  const hostFile = join(work, 'per-host.txt');
  writeFileSync(hostFile, `${perHostUrls().join('\n')}\n`);
  const rows: string[] = [];
  const targets: TargetRow[] = [];
  const putRow = (store: string, run: GrpcioRun, target: number): number => {
    const rate = run.urls / run.seconds;
    rows.push(
      `| ${store} | PutDiscovered, 1 grpcio client, batches of ${fmt(PUT_DISCOVERED_BATCH)} | ${fmt(run.urls)} (${fmt(run.OK ?? 0)} new) | ${fmt(rate)} URLs/s | ≥ ${fmt(target)} |`,
    );
    return rate;
  };

  const lmdbDir = join(work, 'issue44-lmdb');
  const lmdb = await serve(lmdbDir);
  try {
    const put = putRow(
      'LMDB',
      grpcio(pbDir, lmdb.port, ['put', putFile, 'put', String(PUT_DISCOVERED_BATCH)]),
      TARGET_PUT_DISCOVERED_LMDB,
    );
    targets.push({
      issue: 44,
      order: 1,
      figure: 'PutDiscovered ingest on LMDB, 1 grpcio client',
      measured: `${fmt(put)} URLs/s`,
      target: `≥ ${fmt(TARGET_PUT_DISCOVERED_LMDB)} URLs/s`,
      met: put >= TARGET_PUT_DISCOVERED_LMDB,
    });
    grpcio(pbDir, lmdb.port, ['put', hostFile, 'hosts', String(PUT_DISCOVERED_BATCH)]);
    const client = new FrontierClient(lmdb.port);
    await client.call('SetDelay', { key: '', delay_requestable: 0, crawlID: 'hosts' });
    client.close();
    const got = grpcio(pbDir, lmdb.port, ['get', '-', 'hosts']);
    if (got.urls !== GET_URLS_HOSTS) throw new Error(`GetURLs handed out ${got.urls} of ${GET_URLS_HOSTS} URLs`);
    const rate = got.urls / got.seconds;
    rows.push(
      `| LMDB | GetURLs, 1 grpcio client, 1 URL per queue over ${fmt(GET_URLS_HOSTS)} hosts | ${fmt(got.urls)} | ${fmt(rate)} URLs/s | ≥ ${fmt(TARGET_GET_URLS_LMDB)} |`,
    );
    targets.push({
      issue: 44,
      order: 3,
      figure: 'GetURLs on LMDB, 1 per host, 1 grpcio client',
      measured: `${fmt(rate)} URLs/s`,
      target: `≥ ${fmt(TARGET_GET_URLS_LMDB)} URLs/s`,
      met: rate >= TARGET_GET_URLS_LMDB,
    });
  } finally {
    await stop(lmdb.child);
  }

  const noRedis = redisMissing();
  if (noRedis !== undefined) rows.push(`| Redis Cluster | PutDiscovered: not run (${noRedis}) | | | |`);
  else {
    const cluster = await startRedisCluster();
    try {
      const redis = await serve(cluster.location());
      try {
        const put = putRow(
          'Redis Cluster (3 masters, local)',
          grpcio(pbDir, redis.port, ['put', putFile, 'put', String(PUT_DISCOVERED_BATCH)]),
          TARGET_PUT_DISCOVERED_REDIS,
        );
        targets.push({
          issue: 44,
          order: 2,
          figure: 'PutDiscovered ingest on a local Redis Cluster, 1 grpcio client',
          measured: `${fmt(put)} URLs/s`,
          target: `≥ ${fmt(TARGET_PUT_DISCOVERED_REDIS)} URLs/s`,
          met: put >= TARGET_PUT_DISCOVERED_REDIS,
        });
      } finally {
        await stop(redis.child);
      }
    } finally {
      await cluster.stop();
    }
  }
  process.stdout.write(
    `Issue 44: ${fmt(PUT_DISCOVERED_URLS)} URLs of all-the-package-repos for PutDiscovered; ${fmt(GET_URLS_HOSTS)} one-URL hosts for GetURLs; client and serve in separate processes on this machine\n\n`,
  );
  process.stdout.write(
    `| store | what | URLs | rate | target (URLs/s) |\n|---|---|---:|---:|---:|\n${rows.join('\n')}\n`,
  );
  recordTargets('urlfrontier-issue44', targets);
}

const work = mkdtempSync(join(tmpdir(), 'seenstore-bench-urlfrontier-'));
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
try {
  if (only === undefined || only === 'issue28') await issue28(work);
  if (only === undefined || only === 'issue44') await issue44(work);
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** The issue 28 rows: PutURLs from grpc-js clients, GetURLs, memory and disk per URL. */
async function issue28(work: string): Promise<void> {
  const lmdbDir = join(work, 'lmdb');
  const rows = [
    await measure('LMDB', lmdbDir, lmdbDir),
    await measure('memory://', `memory://bench-${process.pid}`, undefined),
  ];
  const lmdbEngine = await engine(join(work, 'engine'));
  const memoryEngine = await engine(`memory://engine-${process.pid}`);
  process.stdout.write(
    `${urls.length.toLocaleString('en')} distinct real URLs of ${hosts.toLocaleString('en')} hosts (../shared/data), ${PASSES} crawls of them put on one stream, ${PASSES} more spread over ${STREAMS} streams, over gRPC; client and serve in separate processes on this machine\n\n`,
  );
  process.stdout.write(
    `| store | PutURLs ingest, 1 stream | PutURLs ingest, ${STREAMS} streams, one crawl | GetURLs hand-out | serve RSS per queued URL | disk per queued URL | in process: enqueue / take |\n|---|---:|---:|---:|---:|---:|---:|\n`,
  );
  const engines = [lmdbEngine, memoryEngine];
  rows.forEach((row, i) => {
    const disk = row.diskPerUrl === undefined ? '-' : `${row.diskPerUrl.toFixed(0)} B`;
    process.stdout.write(
      `| ${row.store} | ${fmt(row.ingest1)} URLs/s | ${fmt(row.ingestN)} URLs/s | ${fmt(row.handOut)} URLs/s | ${row.rssPerUrl.toFixed(0)} B | ${disk} | ${fmt(engines[i]!.enqueue)} / ${fmt(engines[i]!.take)} URLs/s |\n`,
    );
  });
  const best = Math.max(rows[0]!.ingest1, rows[0]!.ingestN);
  process.stdout.write(
    `\nTarget: ingest >= ${fmt(TARGET_INGEST_URLS_PER_S)} URLs/s over gRPC on LMDB: ${best >= TARGET_INGEST_URLS_PER_S ? 'met' : 'missed'} (${fmt(best)} URLs/s; URLFrontier's RocksDB service publishes ${PUBLISHED_ROCKSDB} URLs/s)\n`,
  );
  recordTargets('urlfrontier', [
    {
      issue: 28,
      order: 1,
      figure: 'gRPC PutURLs ingest on LMDB',
      measured: `${fmt(best)} URLs/s (1 stream ${fmt(rows[0]!.ingest1)}, ${STREAMS} streams ${fmt(rows[0]!.ingestN)})`,
      target: `≥ ${fmt(TARGET_INGEST_URLS_PER_S)} URLs/s`,
      met: best >= TARGET_INGEST_URLS_PER_S,
    },
  ]);
}
