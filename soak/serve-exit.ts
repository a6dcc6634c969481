/**
 * serve's exit code under CPU load (not part of `npm test`): RUNS times, `seenstore serve` starts on
 * a store, answers a few commands of redis-cli (a connection each) and gets SIGTERM; it must exit 0
 * every time. Two busy processes load the machine meanwhile. Before the store thread's exit was
 * listened for from its start (src/server/store-thread.ts), about one stop in five ended with exit
 * code 13 (an unsettled top-level await) on this 2-core machine: the thread answered the close
 * and exited before the main thread listened for its exit. No deterministic test of that ordering
 * was found (a main thread held busy while the thread exits still gets the answer first).
 *
 *   npm run build && node dist/soak/serve-exit.js [RUNS] [memory|lmdb]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../test/helpers/data.js';

const CLI = join(ROOT, 'dist', 'src', 'cli', 'bin.cjs');
const runs = Number(process.argv[2] ?? 80);
const kind = process.argv[3] ?? 'memory';
const work = mkdtempSync(join(tmpdir(), 'seenstore-serve-exit-'));
const busy = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));
let failed = 0;
try {
  for (let i = 0; i < runs; i++) {
    const store = kind === 'lmdb' ? join(work, `store-${i}`) : `memory://exit-${process.pid}-${i}`;
    const child = spawn(process.execPath, [CLI, '--store', store, 'serve', '--port', '0', '--log-json'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    let log = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        log += chunk;
        const start = /"event":"start".*?"port":(\d+)/.exec(log);
        if (start !== null) resolve(Number(start[1]));
      });
      void exited.then(() => reject(new Error(`serve exited before starting: ${log}`)));
    });
    const cli = (...args: string[]): string =>
      execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
    cli('SEEN.QCONFIG', 'c', 'DELAY', '0');
    cli('SEEN.ENQUEUE', 'c', 'http://a.test/1', 'http://a.test/2', 'http://b.test/1');
    cli('SEEN.TAKE', 'c', '10', 'LEASE', '60000');
    cli('BF.ADD', 'f', 'http://a.test/1');
    cli('PING');
    child.kill('SIGTERM');
    const { code, signal } = await exited;
    if (code !== 0) {
      failed++;
      process.stdout.write(`run ${i}: exit ${code ?? signal}\n${log.split('\n').slice(-4).join('\n')}\n`);
    }
  }
} finally {
  for (const child of busy) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
process.stdout.write(`serve on ${kind}: ${runs - failed} of ${runs} stops exited 0\n`);
process.exitCode = failed === 0 ? 0 : 1;
