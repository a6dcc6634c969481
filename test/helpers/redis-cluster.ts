import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { replyText } from './resp.js';

/** One redis-server the harness started: its port, pid and directory. */
export interface RedisNode {
  readonly port: number;
  readonly dir: string;
  process: ChildProcess;
}

export interface RedisCluster {
  readonly nodes: RedisNode[];
  /** A store location for a fresh, empty store on this cluster (its own key prefix). */
  location(): string;
  /** `redis-cli -p PORT ARGS...` on one node: its stdout, trimmed. */
  cli(port: number, ...args: string[]): string;
  /** Kills a node with SIGKILL (a crash) and waits until it is gone. */
  kill(node: RedisNode): Promise<void>;
  /** Starts a killed node again with its own directory (its AOF and nodes.conf). */
  restart(node: RedisNode): Promise<void>;
  /** Ports of the current masters (from CLUSTER NODES on a live node). */
  masters(): number[];
  stop(): Promise<void>;
}

/**
 * Why Redis tests cannot run here, or undefined when they can: Debian's redis-server and
 * redis-cli must be on PATH (.ci/run installs them).
 */
export function redisMissing(): string | undefined {
  for (const tool of ['redis-server', 'redis-cli']) {
    if (spawnSync(tool, ['--version'], { encoding: 'utf8' }).status !== 0)
      return `${tool} is not installed (apt-get install redis-server redis-tools)`;
  }
  return undefined;
}

/** A free loopback port: the kernel's choice (port 0), or `port` when it is free (else 0). */
export async function freePort(port = 0): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(0));
    server.listen(port, '127.0.0.1', () => {
      const chosen = (server.address() as { port: number }).port;
      server.close(() => resolve(chosen));
    });
  });
}

/** A free port whose cluster bus port (port + 10000, below 65536) is free too. */
async function freeNodePort(cluster: boolean): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (!cluster) return port;
    if (port + 10_000 <= 65_535 && (await freePort(port + 10_000)) !== 0) return port;
  }
}

let prefixes = 0;

/**
 * Starts `masters` masters with `replicas` replicas each of Debian's redis-server on free loopback
 * ports, in a temporary directory, with AOF on and fsynced before every reply (appendfsync always),
 * makes them one cluster (redis-cli --cluster create) and waits for cluster_state:ok. Every node is
 * killed by its own pid and the directory removed when the test process exits, however it ends
 * (a process 'exit' handler: synchronous, so it runs after a failure too); `stop()` does it sooner.
 * `cluster: false` starts one plain (non-cluster) server instead.
 */
export async function startRedisCluster(
  options: { masters?: number; replicas?: number; cluster?: boolean } = {},
): Promise<RedisCluster> {
  const clusterMode = options.cluster ?? true;
  const masterCount = clusterMode ? (options.masters ?? 3) : 1;
  const replicaCount = clusterMode ? (options.replicas ?? 1) : 0;
  const root = mkdtempSync(join(tmpdir(), 'seenstore-redis-'));
  const nodes: RedisNode[] = [];
  const cli = (port: number, ...args: string[]): string => {
    const result = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (result.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(' ')}: ${result.stderr}`);
    return result.stdout.trim();
  };
  const launch = (node: RedisNode): ChildProcess => {
    const child = spawn('redis-server', [join(node.dir, 'redis.conf')], {
      cwd: node.dir,
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    // The nodes never keep a test process alive: they are killed when it exits.
    child.unref();
    return child;
  };
  const killAll = (): void => {
    for (const node of nodes) {
      const pid = node.process.pid;
      if (pid !== undefined && node.process.exitCode === null && node.process.signalCode === null) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  };
  const removeAll = (): void => {
    killAll();
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', removeAll);
  // 'exit' does not run when a signal ends the process (a test runner's timeout sends SIGTERM).
  const onSignal = (signal: NodeJS.Signals): void => {
    removeAll();
    process.kill(process.pid, signal);
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const stopAll = async (): Promise<void> => {
    killAll();
    await Promise.all(nodes.map((node) => exited(node.process)));
    process.removeListener('exit', removeAll);
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
    rmSync(root, { recursive: true, force: true });
  };
  /**
   * A node on a free port, answering PING. A port found free can be taken before redis-server binds
   * it (another test run's node, or a client socket's ephemeral port on its bus port): a node that
   * exits before it answers is started again on another port.
   */
  const startNode = async (): Promise<RedisNode> => {
    for (let attempt = 1; ; attempt++) {
      const port = await freeNodePort(clusterMode);
      const dir = join(root, `node-${port}`);
      mkdirSync(dir, { recursive: true });
      const conf = [
        'bind 127.0.0.1',
        `port ${port}`,
        'protected-mode yes',
        `dir ${dir}`,
        'appendonly yes',
        'appendfsync always',
        'save ""',
        'daemonize no',
        'logfile ""',
        // A replica's first sync starts at once: by default a master waits 5 s for more replicas to
        // share one diskless transfer, which every cluster start and every rejoin would wait out.
        'repl-diskless-sync-delay 0',
        ...(clusterMode ? ['cluster-enabled yes', 'cluster-config-file nodes.conf', 'cluster-node-timeout 2000'] : []),
      ];
      writeFileSync(join(dir, 'redis.conf'), `${conf.join('\n')}\n`);
      const node: RedisNode = { port, dir, process: undefined as unknown as ChildProcess };
      node.process = launch(node);
      nodes.push(node);
      const gone = (): boolean => node.process.exitCode !== null || node.process.signalCode !== null;
      await until(async () => gone() || (await answers(node.port)), `redis-server on port ${node.port}`, START_MS);
      if (!gone()) return node;
      nodes.pop();
      if (attempt === 5) throw new Error(`redis-server exited at start 5 times (last on port ${port})`);
    }
  };
  for (let i = 0; i < masterCount * (1 + replicaCount); i++) await startNode();
  if (clusterMode) {
    cli(
      nodes[0]!.port,
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicaCount),
      '--cluster-yes',
    );
    for (const node of nodes)
      await until(
        async () => (await replyText(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
        `cluster_state:ok on ${node.port}`,
        START_MS,
      );
    // Replicas must have synced before a test counts on them.
    const inSync = async (node: RedisNode): Promise<boolean> =>
      !/master_link_status:down|^$/.test(await replyText(node.port, 'INFO', 'replication'));
    await until(async () => (await Promise.all(nodes.map(inSync))).every(Boolean), 'replicas in sync', START_MS);
  }
  const run = `${process.pid}-${Date.now().toString(36)}`;
  return {
    nodes,
    location: () => `redis://127.0.0.1:${nodes[0]!.port}/?prefix=t${run}-${++prefixes}`,
    cli,
    kill: async (node) => {
      process.kill(node.process.pid!, 'SIGKILL');
      await exited(node.process);
    },
    restart: async (node) => {
      node.process = launch(node);
      await until(() => answers(node.port), `redis-server on port ${node.port}`, START_MS);
    },
    masters: () => {
      const live = nodes.find((node) => node.process.exitCode === null && node.process.signalCode === null)!;
      return cli(live.port, 'CLUSTER', 'NODES')
        .split('\n')
        .filter((line) => / master /.test(line) || /,master /.test(line))
        .filter((line) => !line.includes('fail'))
        .map((line) => Number(line.split(' ')[1]!.split('@')[0]!.split(':')[1]));
    },
    stop: stopAll,
  };
}

/** How long a node or the cluster may take to start. */
const START_MS = 60_000;

/** Whether the node on `port` answers PING (over RESP: a poll spawns no redis-cli). */
async function answers(port: number): Promise<boolean> {
  return (await replyText(port, 'PING')) === 'PONG';
}

/** Polls `ok` every 50 ms until it holds, failing after `timeoutMs`. */
export async function until(ok: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Resolves when the child has exited (held referenced meanwhile, so the wait keeps the process alive). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.ref();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** The master that serves `key`'s slot now (a node flagged failing is not one). */
export function masterOf(cluster: RedisCluster, key: string): RedisNode {
  const anyPort = cluster.masters()[0]!;
  const slot = Number(cluster.cli(anyPort, 'CLUSTER', 'KEYSLOT', key));
  const lines = cluster.cli(anyPort, 'CLUSTER', 'NODES').split('\n');
  const node = cluster.nodes.find((candidate) => {
    const line = lines.find(
      (l) => l.includes(`:${candidate.port}@`) && / master|,master/.test(l) && !l.includes('fail'),
    );
    return line
      ?.split(' ')
      .slice(8)
      .some((range) => {
        const [from, to] = range.split('-').map(Number);
        return slot >= from! && slot <= (to ?? from)!;
      });
  });
  if (node === undefined) throw new Error(`no master serves the slot of ${key}`);
  return node;
}
