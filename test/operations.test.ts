import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { ERROR_CODES, SeenStore, type ScopeStats } from '../src/index.js';
import { checkScopes } from '../src/cli/health.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';

function urls(prefix: string, n: number): string {
  return `${Array.from({ length: n }, (_, i) => `https://${prefix}.example/${i}`).join('\n')}\n`;
}

async function cli(
  args: readonly string[],
  input = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, input);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Prometheus text format: `name{labels} value` lines, as a list of [name, labels, value]. */
function samples(text: string): [string, Record<string, string>, number][] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
      assert.ok(match, `a sample line: ${line}`);
      const labels = Object.fromEntries(
        [...match[2]!.matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
      );
      return [match[1]!, labels, Number(match[3])];
    });
}

describe('operations: snapshots', () => {
  test('snapshot create --out DIR writes a complete backup elsewhere, which restores', async () => {
    const store = tempDir();
    const backups = tempDir();
    assert.equal((await cli(['add', '--store', store], urls('before', 500))).code, 0);
    const out = join(backups, 'seen-2026-11-25');
    const made = await cli(['snapshot', 'create', '--store', store, '--out', out]);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /^snapshot seen-2026-11-25: [\d,]+ bytes at /);
    assert.deepEqual(readdirSync(out).sort(), ['data.mdb', 'snapshot.json']);
    assert.deepEqual(readdirSync(backups), ['seen-2026-11-25'], 'no temporary left beside it');
    assert.equal(
      (await cli(['snapshot', 'create', '--store', store, '--out', out])).code,
      ERROR_CODES.USAGE,
      'an existing DIR is refused',
    );
    assert.equal(
      (await cli(['snapshot', 'create', '--store', store, '--out', join(backups, 'no', 'such')])).code,
      ERROR_CODES.NOT_FOUND,
    );
    assert.equal(
      (await cli(['snapshot', 'create', 'name', '--store', store, '--out', join(backups, 'x')])).code,
      ERROR_CODES.USAGE,
    );

    assert.equal((await cli(['add', '--store', store], urls('after', 500))).code, 0);
    // Restoring the backup: copy it into the store's snapshots and restore it by name.
    cpSync(out, join(store, 'snapshots', 'seen-2026-11-25'), { recursive: true });
    const restored = await cli(['snapshot', 'restore', 'seen-2026-11-25', '--store', store]);
    assert.equal(restored.code, 0, restored.stderr);
    const counts = await cli(['has', '--count', '--store', store], urls('before', 500) + urls('after', 500));
    const seen = Number(/seen (\d+)/.exec(counts.stdout)![1]);
    assert.ok(
      seen >= 500 && seen < 510,
      `the URLs added before the backup, and (false positives aside) none after: ${seen}`,
    );
  });

  test('snapshot prune --keep-last N keeps the N newest, pre-restore snapshots counted', async () => {
    const store = tempDir();
    await cli(['add', '--store', store], urls('a', 10));
    for (const name of ['s1', 's2']) assert.equal((await cli(['snapshot', 'create', name, '--store', store])).code, 0);
    assert.equal((await cli(['snapshot', 'restore', 's1', '--store', store])).code, 0);
    assert.equal((await cli(['snapshot', 'create', 's3', '--store', store])).code, 0);
    const before = JSON.parse((await cli(['snapshot', 'list', '--json', '--store', store])).stdout) as {
      name: string;
      reason: string;
    }[];
    assert.equal(before.length, 4);
    const preRestore = before.find((s) => s.reason === 'pre-restore')!;
    const pruned = await cli(['snapshot', 'prune', '--keep-last', '2', '--store', store]);
    assert.equal(pruned.code, 0, pruned.stderr);
    assert.match(pruned.stdout, /^deleted snapshot s1 \(user, .*\ndeleted snapshot s2 \(user, .*\n2 snapshots kept\n$/);
    const after = JSON.parse((await cli(['snapshot', 'list', '--json', '--store', store])).stdout) as {
      name: string;
    }[];
    assert.deepEqual(
      after.map((s) => s.name),
      [preRestore.name, 's3'],
    );
    const again = await cli(['snapshot', 'prune', '--keep-last', '2', '--store', store]);
    assert.equal(again.stdout, '2 snapshots kept\n', 'idempotent');
    assert.equal(
      (await cli(['snapshot', 'prune', '--store', store])).code,
      ERROR_CODES.USAGE,
      '--keep-last is required',
    );
  });
});

describe('operations: scheduled rotation', () => {
  test('epoch rotate --if-older-than rotates only an epoch older than that, once across racing schedulers', async () => {
    const store = tempDir();
    // The epoch is made three hours old by the clock that creates it, rather than by waiting.
    const early = await SeenStore.open(store, { clock: () => Date.now() - 3 * 3_600_000 });
    await early.scope().add(urls('a', 10).trim().split('\n'));
    await early.close();
    const young = await cli(['epoch', 'rotate', '--store', store, '--if-older-than', '4h']);
    assert.equal(young.code, 0, young.stderr);
    assert.match(young.stdout, /^epoch 1 is 3h(?: \d+s)? old, not older than 4h: nothing rotated\n$/);
    // Two schedulers fire at once: the open epoch is old, each tries; one rotates.
    const both = await Promise.all(
      [1, 2].map(() => cli(['epoch', 'rotate', '--store', store, '--if-older-than', '2h'])),
    );
    for (const run of both) assert.equal(run.code, 0, run.stderr);
    const rotated = both.filter((run) => run.stdout.startsWith('sealed epoch 1'));
    assert.equal(rotated.length, 1, both.map((r) => r.stdout).join('\n---\n'));
    const list = JSON.parse((await cli(['epoch', 'list', '--json', '--store', store])).stdout) as {
      epochs: { epoch: number; state: string }[];
    };
    assert.deepEqual(
      list.epochs.map((e) => [e.epoch, e.state]),
      [
        [1, 'sealed'],
        [2, 'open'],
      ],
    );
    const json = await cli(['epoch', 'rotate', '--json', '--store', store, '--if-older-than', '1d']);
    assert.deepEqual(Object.keys(JSON.parse(json.stdout)), ['rotated', 'openEpoch', 'ageMs', 'ifOlderThanMs']);
  });
});

describe('operations: monitoring', () => {
  test('stats --format prometheus: per-epoch and store metrics, read by a real node_exporter', async () => {
    // A quote in the store's path: label values must be escaped.
    const store = join(tempDir(), 'st"ore');
    await cli(['add', '--store', store, '--scope', 'shop', '--capacity', '1000'], urls('shop', 2_500));
    await cli(['epoch', 'rotate', '--store', store, '--scope', 'shop']);
    await cli(['add', '--store', store, '--scope', 'shop'], urls('shop2', 100));
    await cli(['add', '--store', store, '--scope', 'news'], urls('w', 10));
    const out = await cli(['stats', '--format', 'prometheus', '--store', store]);
    assert.equal(out.code, 0, out.stderr);
    const all = samples(out.stdout);
    const value = (name: string, scope: string, epoch: string): number | undefined =>
      all.find(([n, l]) => n === name && l.scope === scope && l.epoch === epoch)?.[2];
    assert.equal(value('seenstore_epoch_adds', 'shop', '1'), 2_500);
    assert.equal(value('seenstore_epoch_slices', 'shop', '1'), 2);
    assert.equal(value('seenstore_epoch_past_capacity', 'shop', '1'), 1);
    assert.equal(value('seenstore_epoch_open', 'shop', '1'), 0);
    assert.equal(value('seenstore_epoch_open', 'shop', '2'), 1);
    assert.equal(value('seenstore_epoch_fpr_target', 'shop', '2'), 0.01);
    assert.ok(value('seenstore_epoch_estimated_fpr', 'shop', '1')! < 0.01);
    assert.equal(value('seenstore_epoch_fpr_above_target', 'shop', '1'), 0);
    assert.ok(Math.abs(value('seenstore_epoch_estimated_distinct_urls', 'shop', '1')! - 2_500) < 100);
    assert.equal(value('seenstore_epoch_adds', 'news', '1'), 10);
    assert.ok(out.stdout.includes(`store="${store.replace('"', '\\"')}"`), 'the quote in the store label is escaped');
    const storeValue = (name: string): number => all.find(([n]) => n === name)![2];
    assert.ok(storeValue('seenstore_store_used_bytes') > 0);
    assert.ok(storeValue('seenstore_store_reclaimable_bytes') < storeValue('seenstore_store_used_bytes'));
    assert.equal(storeValue('seenstore_store_map_size_bytes'), 64 * 2 ** 30);
    for (const line of out.stdout.split('\n').filter((l) => l.startsWith('# TYPE')))
      assert.match(line, /^# TYPE seenstore_[a-z_]+ gauge$/);

    if (!existsSync(NODE_EXPORTER)) return;
    const textfiles = tempDir();
    writeFileSync(join(textfiles, 'seenstore.prom'), out.stdout);
    const port = await freePort();
    const exporter = spawn(
      NODE_EXPORTER,
      [
        `--web.listen-address=127.0.0.1:${port}`,
        '--collector.disable-defaults',
        '--collector.textfile',
        `--collector.textfile.directory=${textfiles}`,
      ],
      { stdio: 'ignore' },
    );
    try {
      let scraped = '';
      for (let attempt = 0; attempt < 50 && scraped === ''; attempt++) {
        await sleep(100);
        scraped = await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (r) => r.text(),
          () => '',
        );
      }
      assert.match(scraped, /^node_textfile_scrape_error 0$/m, 'node_exporter read the file without error');
      assert.match(scraped, /^seenstore_epoch_slices\{epoch="1",scope="shop",store="(?:[^"\\]|\\.)+"\} 2$/m);
      assert.match(scraped, /^seenstore_store_used_bytes\{store="(?:[^"\\]|\\.)+"\} \d/m);
    } finally {
      exporter.kill();
    }
  });

  test('one vocabulary (issue 45): adds with repeats, new without, in stats --json, text stats, textfile metrics and the report', async () => {
    const store = join(tempDir(), 'store');
    const repeated = `${urls('v', 3)}${urls('v', 2)}`;
    assert.equal((await cli(['add', '--store', store, '--scope', 'v'], repeated)).code, 0);
    const json = JSON.parse((await cli(['stats', '--json', '--store', store])).stdout) as {
      scopes: { epochs: Record<string, unknown>[] }[];
    };
    const epoch = json.scopes[0]!.epochs[0]!;
    assert.deepEqual([epoch.adds, epoch.new], [5, 3]);
    assert.deepEqual(
      [epoch.submitted, epoch.added],
      [5, 3],
      'the names before issue 45, deprecated, readable for one release',
    );
    const text = (await cli(['stats', '--store', store])).stdout.split('\n');
    const head = text[0]!.trim().split(/\s+/);
    const row = text[1]!.trim().split(/\s+/);
    assert.deepEqual([row[head.indexOf('adds')], row[head.indexOf('new')]], ['5', '3']);
    assert.ok(!head.includes('added'));
    const all = samples((await cli(['stats', '--format', 'prometheus', '--store', store])).stdout);
    const value = (name: string): number | undefined => all.find(([n]) => n === name)?.[2];
    assert.deepEqual([value('seenstore_epoch_adds'), value('seenstore_epoch_new_urls')], [5, 3]);
    const html = (await cli(['report', '--store', store])).stdout;
    assert.match(html, /<th[^>]*>adds<\/th><th[^>]*>new<\/th>/);
    assert.match(html, /adds \(with repeats\)/);
    assert.match(html, /<td>5<\/td><td>3<\/td>/);
    assert.doesNotMatch(html, />added</);
  });

  test('stats --check: exit 1 naming an open epoch past its capacity; 0 once rotated', async () => {
    const store = tempDir();
    await cli(['add', '--store', store, '--capacity', '1000'], urls('a', 500));
    const ok = await cli(['stats', '--check', '--store', store]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, 'ok: 1 scope, 1 epoch checked\n');
    await cli(['add', '--store', store], urls('b', 1_000));
    const past = await cli(['stats', '--check', '--store', store]);
    assert.equal(past.code, 1);
    assert.match(
      past.stdout,
      /^CHECK FAILED scope default epoch 1 past-capacity: ~1[\d]{3} distinct URLs against a capacity of 1000 \(2 slices\): rotate with a larger --capacity\n$/,
    );
    const json = JSON.parse((await cli(['stats', '--check', '--json', '--store', store])).stdout) as {
      ok: boolean;
      findings: unknown[];
    };
    assert.equal(json.ok, false);
    assert.equal(json.findings.length, 1);
    await cli(['epoch', 'rotate', '--store', store]);
    assert.equal(
      (await cli(['stats', '--check', '--store', store])).code,
      0,
      'a sealed epoch past its capacity is history',
    );
    assert.equal((await cli(['stats', '--check', '--format', 'prometheus', '--store', store])).code, ERROR_CODES.USAGE);
  });

  test('the FPR check: an epoch whose estimated FPR is above its target, sealed or open, is a finding', () => {
    const epoch = {
      epoch: 4,
      state: 'sealed',
      createdAtMs: 0,
      sealedAtMs: 1,
      capacityUrls: 1000,
      fprTarget: 0.01,
      strategy: 'classic',
      normalize: 'none',
      adds: 900,
      new: 900,
      submitted: 900,
      added: 900,
      estimatedDistinct: 900,
      fillRatio: 0.6,
      estimatedFpr: 0.013,
      slices: 1,
      bytesOnDisk: 0,
      journalRecords: 0,
    } as const;
    const scopes: ScopeStats[] = [
      { scope: 'x', openEpoch: 5, epochs: [epoch, { ...epoch, epoch: 5, state: 'open', estimatedFpr: 0.002 }] },
    ];
    assert.deepEqual(
      checkScopes(scopes).map((f) => [f.epoch, f.problem]),
      [[4, 'fpr-above-target']],
    );
    assert.deepEqual(
      checkScopes([{ ...scopes[0]!, epochs: [{ ...epoch, estimatedFpr: 0.01 }] }]),
      [],
      'at the target is within it',
    );
  });

  test('diskUsage: a prune makes pages reclaimable; a snapshot copies the used pages, free ones included', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('s', { capacityUrls: 200_000 });
    for (let i = 0; i < 4; i++) {
      await scope.add(Array.from({ length: 50_000 }, (_, j) => `https://u.example/${i}/${j}`));
      await scope.rotate({ capacityUrls: 200_000 });
    }
    await store.checkpoint();
    const before = await store.diskUsage();
    await scope.prune({ keepLast: 1 });
    await store.checkpoint();
    const after = await store.diskUsage();
    assert.ok(
      after.reclaimableBytes > before.reclaimableBytes + (3 * 200_000 * 9) / 8,
      `pruning three ~240 kB epochs frees their pages: ${before.reclaimableBytes} -> ${after.reclaimableBytes}`,
    );
    const backup = join(tempDir(), 'b1');
    const snapshot = await store.snapshotTo(backup);
    // The whole file as a read transaction sees it (not LMDB's compacting copy: src/store/lmdb/env.ts, backup).
    assert.ok(
      Math.abs(snapshot.bytes - after.usedBytes) <= 16 * after.pageBytes,
      `snapshot ${snapshot.bytes} vs used ${after.usedBytes}`,
    );
    assert.equal(after.mapSizeBytes, 64 * 2 ** 30);
    assert.ok(after.fileBytes >= after.usedBytes - after.pageBytes);
    await store.close();
    mkdirSync(join(dir, 'unrelated'));
    assert.ok(readFileSync(join(backup, 'snapshot.json'), 'utf8').includes('"name": "b1"'));
  });
});
