/**
 * A child process for the journal tests. Usage:
 *   node journal-child.js STORE power-cut BATCHES KILL_AT [SEED]
 *     Adds BATCHES batches of 50 URLs (https://power.example/B/I), four in flight at a time,
 *     printing "ack B" once batch B is acknowledged. When the KILL_AT-th batch reaches
 *     add:before-sync (written, not yet synced), it simulates a power cut of the page cache: of
 *     the 512-byte sectors written after the last fdatasync (journal:after-sync), the first is
 *     lost (zeros again) and the later ones kept, or with SEED each is kept or lost at random;
 *     then the process kills itself with SIGKILL.
 *   node journal-child.js STORE add|enqueue FILE
 *     Adds (or enqueues) FILE's URLs in batches of 100, then prints "new N": how many were new.
 *   node journal-child.js STORE add-and-die URL...
 *     Adds the URLs, prints "ack", and kills itself with SIGKILL (a journal tail no checkpoint folded).
 */
import { closeSync, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { mulberry32 } from '../../src/cli/commands/demo.js';
import { SeenStore } from '../../src/index.js';
import { setFaultHook } from '../../src/store/faults.js';
import { powerUrls } from './power-urls.js';

const NEVER = { checkpointJournalBytes: 2 ** 40, checkpointIntervalMs: 2 ** 40 };

/** Sectors a disk writes whole (the unit a power cut keeps or loses). */
const SECTOR_BYTES = 512;

/**
 * What a power cut leaves of the bytes written after the last fdatasync, [syncedEnd, end of
 * file): with `seed` undefined, the first sector lost (zeros again) and the later ones kept; with
 * a seed, each sector kept or lost at random.
 */
function cutPower(file: string, syncedEnd: number, seed: number | undefined): void {
  const fd = openSync(file, 'r+');
  const size = fstatSync(fd).size;
  const zeros = Buffer.alloc(SECTOR_BYTES);
  const random = mulberry32(seed ?? 0);
  const lost = (): boolean => random() < 0.5;
  for (let at = syncedEnd; at < size; at = (Math.floor(at / SECTOR_BYTES) + 1) * SECTOR_BYTES) {
    const sectorEnd = Math.min(size, (Math.floor(at / SECTOR_BYTES) + 1) * SECTOR_BYTES);
    if (seed === undefined ? at === syncedEnd : lost()) writeSync(fd, zeros, 0, sectorEnd - at, at);
    if (seed === undefined) break;
  }
  closeSync(fd);
}

async function powerCut(dir: string, batches: number, killAt: number, seed: number | undefined): Promise<void> {
  let syncedEnd = 0;
  let reached = 0;
  setFaultHook((point, detail) => {
    if (point === 'journal:after-sync') syncedEnd = Math.max(syncedEnd, detail!);
    if (point !== 'add:before-sync' || ++reached < killAt) return;
    cutPower(join(dir, 'journal.log'), syncedEnd, seed);
    process.kill(process.pid, 'SIGKILL');
  });
  const store = await SeenStore.open(dir, NEVER);
  const scope = store.scope('default', { capacityUrls: 100_000 });
  const lanes = Array.from({ length: 4 }, async (_, lane) => {
    for (let b = lane; b < batches; b += 4) {
      await scope.add(powerUrls(b));
      writeSync(1, `ack ${b}\n`);
    }
  });
  await Promise.all(lanes);
  await store.close();
}

async function addAll(dir: string, file: string, enqueue: boolean): Promise<void> {
  const urls = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  const store = await SeenStore.open(dir, NEVER);
  const scope = store.scope('default', { capacityUrls: 100_000 });
  let fresh = 0;
  for (let start = 0; start < urls.length; start += 100) {
    const part = urls.slice(start, start + 100);
    const answers = enqueue ? await scope.enqueue(part) : await scope.addIfAbsent(part);
    fresh += answers.filter(Boolean).length;
  }
  writeSync(1, `new ${fresh}\n`);
  await store.close();
}

const [dir, mode, ...rest] = process.argv.slice(2);
if (mode === 'power-cut')
  await powerCut(dir!, Number(rest[0]), Number(rest[1]), rest[2] === undefined ? undefined : Number(rest[2]));
else if (mode === 'add' || mode === 'enqueue') await addAll(dir!, rest[0]!, mode === 'enqueue');
else if (mode === 'add-and-die') {
  const store = await SeenStore.open(dir!, NEVER);
  await store.scope('default', { capacityUrls: 100_000 }).add(rest);
  writeSync(1, 'ack\n');
  process.kill(process.pid, 'SIGKILL');
} else throw new Error(`unknown mode ${mode}`);
