import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { open } from 'lmdb';
import { SeenStore } from '../src/index.js';
import { expectCode } from './helpers/errors.js';
import { runCli } from './helpers/cli.js';
import { ROOT, sharedUrls } from './helpers/data.js';
import { runChild, type ChildOut } from './helpers/child-run.js';
import { tempDir } from './helpers/tmp.js';

const CHILD = join(ROOT, 'dist', 'test', 'helpers', 'frontier-child.js');

/** Runs the child script; resolves with its output lines and whether it was killed -9. */
function child(args: readonly string[]): Promise<ChildOut> {
  return runChild(CHILD, args, 'frontier child');
}

/** Everything queued in scope `f` of `dir`, taken with a short lease (ids and URLs), and the stats before. */
async function drain(dir: string): Promise<{ urls: string[]; pending: number; leased: number; done: number }> {
  const store = await SeenStore.open(dir);
  try {
    const frontier = store.scope('f').frontier();
    const stats = await frontier.stats();
    await frontier.configure({ delayMs: 0 });
    const urls: string[] = [];
    for (;;) {
      const taken = await frontier.take(1_000, { leaseMs: 60_000, perQueue: 1_000 });
      if (taken.length === 0) break;
      urls.push(...taken.map((entry) => entry.url));
    }
    return { urls, ...stats };
  } finally {
    await store.close();
  }
}

describe('frontier: kill -9 at every named point loses nothing acknowledged', () => {
  const urls = sharedUrls('crawl-sitelist-15k.txt').slice(0, 2_000);

  for (const point of ['add:before-commit', 'add:after-commit']) {
    test(`enqueue killed at ${point}: every acknowledged URL queued once, the killed batch queued exactly when it was recorded`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      writeFileSync(file, `${urls.join('\n')}\n`);
      const run = await child([dir, file, '500', point, 'enqueue']);
      assert.ok(run.killed, 'the child was not killed at the fault point');
      const acked = run.lines.filter((line) => line.startsWith('ack ')).length;
      const { urls: queued, pending } = await drain(dir);
      assert.equal(new Set(queued).size, queued.length, 'a URL was queued twice');
      assert.equal(pending, queued.length);
      const ackedUrls = urls.slice(0, acked * 500);
      const queuedSet = new Set(queued);
      assert.ok(
        ackedUrls.every((url) => queuedSet.has(url)),
        'an acknowledged URL is missing from the frontier',
      );
      // Queued exactly when recorded as seen: the queue and the bits commit together.
      const store = await SeenStore.open(dir);
      try {
        const seen = await store.scope('f').has(urls);
        urls.forEach((url, i) =>
          assert.equal(queuedSet.has(url), seen[i], `URL ${i}: queued ${queuedSet.has(url)}, seen ${seen[i]}`),
        );
      } finally {
        await store.close();
      }
      if (point === 'add:before-commit')
        assert.equal(queued.length, acked * 500, 'the killed batch reached the frontier');
      else assert.equal(queued.length, (acked + 1) * 500, 'the committed batch is missing from the frontier');
    });
  }

  for (const point of ['frontier:take-before-commit', 'frontier:take-after-commit', 'frontier:change-before-commit']) {
    test(`take/done killed at ${point}: no URL lost, leases run out, nothing finished twice`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      writeFileSync(file, `${urls.join('\n')}\n`);
      assert.equal((await child([dir, file, '500', 'none', 'enqueue'])).lines.at(-1), 'finished');
      // Leases of 10 s: they must still be live when the stats below are read (a slow, loaded machine
      // took more than 400 ms from the kill to the stats), and run out for the handle whose clock is ahead.
      const run = await child([dir, file, '300', point, point.includes('change') ? 'done' : 'take', '10000']);
      assert.ok(run.killed, 'the child was not killed at the fault point');
      const store = await SeenStore.open(dir);
      try {
        const frontier = store.scope('f').frontier();
        const stats = await frontier.stats();
        assert.equal(
          stats.pending + stats.leased + stats.done,
          urls.length,
          `${JSON.stringify(stats)}: URLs went missing`,
        );
        // take-after-commit and change-before-commit: the take committed, the done (if any) did not.
        const tookCommitted = point !== 'frontier:take-before-commit';
        assert.equal(stats.done, 0, `${JSON.stringify(stats)}: an uncommitted done took effect`);
        assert.equal(
          stats.leased,
          tookCommitted ? 300 : 0,
          `${JSON.stringify(stats)}: leases are not what was committed`,
        );
        // A second handle whose clock is past the dead taker's 10 s leases: they have run out for it.
        const later = await SeenStore.open(dir, { clock: () => Date.now() + 11_000 });
        let again;
        try {
          again = await later.scope('f').frontier().take(65_536, { leaseMs: 60_000, perQueue: 65_536 });
        } finally {
          await later.close();
        }
        assert.equal(again.length, urls.length, 'URLs of a dead taker did not come back after the lease');
        assert.equal(again.filter((entry) => entry.attempts === 2).length, tookCommitted ? 300 : 0);
        assert.equal(new Set(again.map((entry) => entry.url)).size, urls.length);
      } finally {
        await store.close();
      }
    });
  }
});

describe('frontier: kill -9 of a schedule before it commits', () => {
  test('the batches acknowledged wait for their time, the killed one and the rest as they were', async () => {
    const urls = sharedUrls('crawl-sitelist-15k.txt').slice(0, 1_000);
    const dir = tempDir();
    const file = join(dir, 'urls.txt');
    writeFileSync(file, `${urls.join('\n')}\n`);
    assert.equal((await child([dir, file, '500', 'none', 'enqueue'])).lines.at(-1), 'finished');
    const run = await child([dir, file, '200', 'frontier:change-before-commit', 'schedule', '0', '2']);
    assert.ok(run.killed, 'the child was not killed at the fault point');
    const acked = run.lines.filter((line) => line.startsWith('scheduled ')).length;
    assert.equal(acked, 2);
    const store = await SeenStore.open(dir);
    try {
      const frontier = store.scope('f').frontier();
      const states = await Promise.all(urls.map(async (url) => (await frontier.urlStatus(url))?.state));
      urls.forEach((_url, i) => assert.equal(states[i], i < acked * 200 ? 'scheduled' : 'waiting', `URL ${i}`));
      assert.deepEqual(await frontier.stats(), {
        pending: urls.length,
        leased: 0,
        done: 0,
        failed: 0,
        queues: (await frontier.listQueues({ limit: 65_536 })).length,
      });
    } finally {
      await store.close();
    }
  });
});

/** The seq of an LMDB frontier id (`SEQ-HASH`): the order the entry was queued in. */
const seqOf = (id: string): number => Number(id.split('-')[0]);

describe('frontier: kill -9 of a polite taker mid-stream', () => {
  const hosts = 20;
  const urls = Array.from({ length: hosts * 5 }, (_, i) => `https://h${i % hosts}.polite.example/p/${i}`);

  for (const [point, skip] of [
    ['frontier:change-before-commit', 2],
    ['frontier:take-after-commit', 3],
  ] as const) {
    test(`killed at ${point} after ${skip} passes: every acknowledged done holds, the rest is queued, its leases come back`, async () => {
      const dir = tempDir();
      const file = join(dir, 'urls.txt');
      writeFileSync(file, `${urls.join('\n')}\n`);
      assert.equal((await child([dir, file, '500', 'none', 'enqueue', '0', '0', '200'])).lines.at(-1), 'finished');
      const run = await child([dir, file, '1000', point, 'polite', '60000', String(skip)]);
      assert.ok(run.killed, 'the taker was not killed at the fault point');
      const acked = new Set(run.lines.filter((line) => line.startsWith('done ')).map((line) => seqOf(line.slice(5))));
      assert.ok(acked.size > 0 && acked.size < urls.length, `killed mid-stream: ${acked.size} done`);
      // Ids are given in the order queued: the id of seq i is urls[i - 1]'s.
      const store = await SeenStore.open(dir);
      let leasedAtKill: number;
      try {
        const frontier = store.scope('f').frontier();
        const stats = await frontier.stats();
        leasedAtKill = stats.leased;
        assert.ok(leasedAtKill > 0, `${JSON.stringify(stats)}: the dead taker held no lease`);
        assert.deepEqual(
          { pending: stats.pending + stats.leased, done: stats.done },
          { pending: urls.length - acked.size, done: acked.size },
          JSON.stringify(stats),
        );
        for (let id = 1; id <= urls.length; id++) {
          assert.equal(
            (await frontier.urlStatus(urls[id - 1]!)) === undefined,
            acked.has(id),
            `URL ${id}: acknowledged done ${acked.has(id)}`,
          );
        }
      } finally {
        await store.close();
      }
      // Past the dead taker's leases, everything not acknowledged comes back, its leased URLs on a second attempt.
      const later = await SeenStore.open(dir, { clock: () => Date.now() + 120_000 });
      try {
        const frontier = later.scope('f').frontier();
        await frontier.configure({ delayMs: 0 });
        const again = [];
        for (let taken; (taken = await frontier.take(1_000, { perQueue: 1_000, leaseMs: 60_000 })).length > 0; )
          again.push(...taken);
        assert.deepEqual(
          again.map((entry) => seqOf(entry.id)).sort((a, b) => a - b),
          urls.map((_, i) => i + 1).filter((id) => !acked.has(id)),
        );
        assert.equal(
          again.filter((entry) => entry.attempts === 2).length,
          leasedAtKill,
          "the dead taker's leases did not come back",
        );
      } finally {
        await later.close();
      }
    });
  }
});

describe('frontier records in verify', () => {
  test('a damaged frontier entry is reported with its place; take refuses it with STORE_CORRUPT', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    await store.scope('f').enqueue(['https://a.example/1', 'https://a.example/2']);
    await store.scope('f').frontier().configure({ delayMs: 0 });
    await store.close();
    const root = open({ path: dir, noSubdir: false, maxDbs: 8 });
    const db = root.openDB<Buffer, Buffer>({ name: 'queue', encoding: 'binary', keyEncoding: 'binary' });
    // The block of both waiting URLs: scope number 1, tag 'w', queue 1, their due time, block seq 1.
    const second = [...db.getKeys({})].find(
      (key) => key[0] === 1 && key[1] === 0x77 && key.readUIntBE(key.length - 5, 5) === 1,
    )!;
    await db.put(second, Buffer.from([0xc1]));
    await root.close();
    const report = await SeenStore.verify(dir);
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.damage.map((d) => d.where),
      [`frontier f ${second.toString('hex')}`],
    );
    const again = await SeenStore.open(dir);
    try {
      await expectCode('STORE_CORRUPT', () => again.scope('f').frontier().take(5, { perQueue: 5 }));
    } finally {
      await again.close();
    }
  });
});

describe('frontier CLI', () => {
  test('push | take | done compose in pipes; stats counts each state', async () => {
    const dir = tempDir();
    const input = `${sharedUrls('crawl-sitelist-15k.txt').slice(0, 50).join('\n')}\nhttps://a.example/x\nhttps://a.example/x\n`;
    const push = await runCli(['--store', dir, '--scope', 'c', 'frontier', 'push'], input);
    assert.equal(push.code, 0, push.stderr);
    assert.equal(push.stdout.split('\n').filter(Boolean).length, 51);
    assert.match(push.stderr, /queued 51/);
    const again = await runCli(['--store', dir, '--scope', 'c', 'frontier', 'push'], input);
    assert.equal(again.stdout, '', 'a URL was queued twice');
    const take = await runCli([
      '--store',
      dir,
      '--scope',
      'c',
      'frontier',
      'take',
      '--count',
      '20',
      '--per-queue',
      '20',
    ]);
    assert.equal(take.code, 0, take.stderr);
    const taken = take.stdout.split('\n').filter(Boolean);
    assert.equal(taken.length, 20);
    assert.ok(taken.every((line) => /^\d+-\d+\thttps?:\/\//.test(line)));
    const done = await runCli(['--store', dir, '--scope', 'c', 'frontier', 'done'], take.stdout);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stderr, /done 20 of 20/);
    const stats = await runCli(['--store', dir, '--scope', 'c', '--json', 'frontier', 'stats']);
    const takenUrls = new Set(taken.map((line) => line.split('\t')[1]));
    const queuesLeft = new Set(
      push.stdout
        .split('\n')
        .filter((url) => url !== '' && !takenUrls.has(url))
        .map((url) => new URL(url).host),
    ).size;
    assert.deepEqual(JSON.parse(stats.stdout), {
      scope: 'c',
      pending: 31,
      leased: 0,
      done: 20,
      failed: 0,
      queues: queuesLeft,
    });
    const bad = await runCli(['--store', dir, '--scope', 'c', 'frontier', 'done', 'abc']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /seenstore: error USAGE: not a frontier id/);
  });
});
