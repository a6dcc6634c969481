import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore, SeenStoreError } from '../src/index.js';
import { CHUNK_PAYLOAD_BYTES } from '../src/store/chunks.js';
import { decodeGaps, decodeRice, encodeGaps, encodeRice } from '../src/store/gap-codes.js';
import { runCli } from './helpers/cli.js';
import { sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const SITELIST = sharedUrls('crawl-sitelist-15k.txt');
const BENIGN = sharedUrls('crawl-benign-35k.txt');

/** A store whose scope `src` has a sealed epoch 1 (the sitelist) and an open epoch 2 (part of benign). */
async function sourceStore(capacityUrls = 1_000_000): Promise<{ dir: string; exportPath: string }> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  const scope = store.scope('src', { capacityUrls, fprTarget: 0.01 });
  await scope.add(SITELIST);
  await scope.rotate();
  await scope.add(BENIGN.slice(0, 10_000));
  const exportPath = join(tempDir(), 'epoch1.ssx');
  await scope.export(exportPath, 1);
  await store.close();
  return { dir, exportPath };
}

describe('chunk codes of export files', () => {
  test('Rice and LEB128 gap codes round-trip any fill, and reject damaged blocks', () => {
    let state = 12345;
    const random = (): number => (state = (state * 1103515245 + 12345) >>> 0) / 2 ** 32;
    for (const fill of [0.0001, 0.001, 0.01, 0.05, 0.2, 0.35]) {
      const bytes = new Uint8Array(CHUNK_PAYLOAD_BYTES);
      for (let bit = 0; bit < bytes.length * 8; bit++) if (random() < fill) bytes[bit >>> 3]! |= 1 << (bit & 7);
      bytes[bytes.length - 1]! |= 0x80; // the very last bit, the edge case of both codes
      const rice = encodeRice(bytes);
      assert.ok(rice !== undefined, `Rice should beat raw at fill ${fill}`);
      assert.deepEqual(decodeRice(rice, bytes.length, 'test'), bytes, `Rice round trip at fill ${fill}`);
      const entropy = -(fill * Math.log2(fill) + (1 - fill) * Math.log2(1 - fill));
      assert.ok(
        rice.length < bytes.length * entropy * 1.1 + 64,
        `Rice ${rice.length} bytes vs entropy ${Math.round(bytes.length * entropy)} at fill ${fill}`,
      );
      const gaps = encodeGaps(bytes);
      if (gaps !== undefined) assert.deepEqual(decodeGaps(gaps, bytes.length, 'test'), bytes);
      assert.throws(
        () => decodeRice(rice.subarray(0, rice.length - 8), bytes.length, 'test'),
        (error: unknown) => error instanceof SeenStoreError && error.code === 'STORE_CORRUPT',
      );
    }
  });
});

describe('export / import', () => {
  test('round trip answers identically (false positives included), sealed, with a sized open epoch after it', async () => {
    // Sized for the URLs it holds, so the probe meets real false positives (at 1M capacity the
    // only "false positives" were the few URLs both lists share).
    const { dir, exportPath } = await sourceStore(SITELIST.length);
    const source = await SeenStore.open(dir);
    const probe = [...SITELIST, ...BENIGN];
    const before = await source.scope('src').has(probe, { epochs: 1 });
    const sourceDetails = await source.scope('src').epoch(1);
    await source.close();
    assert.ok(before.slice(0, SITELIST.length).every(Boolean));
    const falsePositives = before.slice(SITELIST.length).filter(Boolean).length;

    const target = await SeenStore.open(tempDir());
    const result = await target.import(exportPath, { scope: 'copy' });
    assert.deepEqual(result, { scope: 'copy', imported: 1, openEpoch: 2 });
    const copy = target.scope('copy');
    assert.deepEqual(
      await copy.has(probe, { epochs: 1 }),
      before,
      'every answer, false positives included, is the same',
    );
    assert.ok(
      falsePositives > 0,
      'the probe should include some false positives of epoch 1, or the comparison is weak',
    );
    const details = await copy.epoch(1);
    assert.equal(details.state, 'sealed');
    assert.deepEqual(
      details.sliceDetails.map((s) => s.seeds),
      sourceDetails.sliceDetails.map((s) => s.seeds),
    );
    assert.equal(details.submitted, SITELIST.length);
    const open = await copy.epoch(2);
    assert.equal(open.state, 'open');
    assert.equal(open.sizing.policy, 'history-v1');
    assert.notDeepEqual(
      open.sliceDetails[0]!.seeds,
      details.sliceDetails[0]!.seeds,
      'the next epoch hashes with fresh seeds',
    );
    assert.ok((await target.verify()).ok);
    await target.close();
  });

  test('a sparse filter costs a fraction of its size on the wire', async () => {
    const { exportPath } = await sourceStore(1_000_000);
    const fileBytes = readFileSync(exportPath).length;
    const target = await SeenStore.open(tempDir());
    await target.import(exportPath, { scope: 'x' });
    const mBits = (await target.scope('x').epoch(1)).sliceDetails[0]!.mBits;
    await target.close();
    // 15k URLs in a filter sized for 1M: ~1 % of the bits set; Rice coding nears the entropy, 8.1 %.
    assert.ok(fileBytes < 0.1 * (mBits / 8), `export ${fileBytes} bytes for a ${mBits / 8}-byte filter`);
    // A full filter is stored raw: never larger than the filter plus framing.
    const full = await sourceStore(15_000);
    const fullBytes = readFileSync(full.exportPath).length;
    const store = await SeenStore.open(full.dir);
    const fullFilterBytes = (await store.scope('src').epoch(1)).sliceDetails.reduce(
      (n, s) => n + (s.mBits / 8) * s.filters,
      0,
    );
    await store.close();
    assert.ok(fullBytes <= fullFilterBytes + 4096, `${fullBytes} vs ${fullFilterBytes}`);
  });

  test('CLI: export, import --open keeps the seeds open, so the crawl resumes on another machine', async () => {
    const dir = tempDir();
    const urls = SITELIST.slice(0, 3000).join('\n') + '\n';
    assert.equal((await runCli(['add', '--store', dir, '--scope', 'crawl'], urls)).code, 0);
    const file = join(tempDir(), 'crawl.ssx');
    const exported = await runCli(['export', '--store', dir, '--scope', 'crawl', '--out', file]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stdout, /^exported crawl\/1 to .*: [\d,]+ bytes \([\d.]+% of the [\d,]+ filter bytes\)\n$/);
    const other = tempDir();
    const imported = await runCli(['import', file, '--store', other, '--open', '--json']);
    assert.equal(imported.code, 0, imported.stderr);
    assert.deepEqual(JSON.parse(imported.stdout), { scope: 'crawl', imported: 1, openEpoch: 1 });
    const again = await runCli(
      ['filter-new', '--store', other, '--scope', 'crawl'],
      urls + 'https://new.example/only\n',
    );
    assert.equal(again.stdout, 'https://new.example/only\n');
    const twice = await runCli(['import', file, '--store', other]);
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /scope crawl exists/);
  });

  test('truncated or bit-flipped files are refused with a typed error, and nothing is imported', async () => {
    const { exportPath } = await sourceStore();
    const good = readFileSync(exportPath);
    const damaged: [string, Buffer][] = [
      ['empty', Buffer.alloc(0)],
      ['not an export', Buffer.from('https://a.example/\n')],
      ['truncated in the header', good.subarray(0, 40)],
      ['truncated mid-blocks', good.subarray(0, Math.floor(good.length / 2))],
      ['trailer missing', good.subarray(0, good.length - 8)],
    ];
    for (const at of [30, 200, Math.floor(good.length / 3), good.length - 30, good.length - 3]) {
      const copy = Buffer.from(good);
      copy[at]! ^= 0x10;
      damaged.push([`bit flipped at ${at}`, copy]);
    }
    const store = await SeenStore.open(tempDir());
    for (const [what, bytes] of damaged) {
      const path = join(tempDir(), 'bad.ssx');
      writeFileSync(path, bytes);
      const error = await expectCode('STORE_CORRUPT', () => store.import(path, { scope: 'bad' }));
      assert.match(error.message, /export file/, what);
      assert.deepEqual(await store.scopeNames(), [], `${what}: nothing may be imported`);
    }
    assert.equal((await expectCode('NOT_FOUND', () => store.import(join(tempDir(), 'missing.ssx')))).code, 'NOT_FOUND');
    await store.close();

    const path = join(tempDir(), 'bad.ssx');
    writeFileSync(path, good);
    truncateSync(path, good.length - 1);
    const out = await runCli(['import', path, '--store', tempDir(), '--quiet']);
    assert.equal(out.code, 6);
    assert.equal(out.stderr.trim().split('\n').length, 1, 'one error line');
    assert.match(out.stderr, /STORE_CORRUPT/);
  });

  test('a crash mid-import leaves no scope; importing again works and the store verifies', async () => {
    // Big enough to take more than one chunk transaction (256 chunks of 64 KiB).
    const { exportPath } = await sourceStore(25_000_000);
    const dir = tempDir();
    const script = `
      import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
      import { setFaultHook } from ${JSON.stringify(new URL('../src/store/faults.js', import.meta.url).href)};
      setFaultHook((point) => { if (point === 'import:mid-chunks') process.kill(process.pid, 'SIGKILL'); });
      const store = await SeenStore.open(process.argv[1]);
      await store.import(process.argv[2], { scope: 'half' });
      console.log('not killed');`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir, exportPath], {
      encoding: 'utf8',
    });
    assert.equal(child.signal, 'SIGKILL', child.stdout + child.stderr);
    const store = await SeenStore.open(dir);
    assert.deepEqual(await store.scopeNames(), []);
    await store.import(exportPath, { scope: 'half' });
    assert.ok((await store.scope('half').has(SITELIST, { epochs: 1 })).every(Boolean));
    const report = await store.verify();
    assert.ok(report.ok, JSON.stringify(report.damage));
    await store.close();
  });

  test('CLI verify checks export files: ok exits 0, a flipped byte exits 6 naming the file', async () => {
    const { exportPath } = await sourceStore();
    const ok = await runCli(['verify', exportPath]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /^ok .*: epoch src\/1\n$/);
    const bytes = readFileSync(exportPath);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
    const bad = join(tempDir(), 'flipped.ssx');
    writeFileSync(bad, bytes);
    const out = await runCli(['verify', exportPath, bad, '--json']);
    assert.equal(out.code, 6);
    const report = JSON.parse(out.stdout);
    assert.deepEqual(
      report.files.map((f: { ok: boolean; code?: string }) => [f.ok, f.code]),
      [
        [true, undefined],
        [false, 'STORE_CORRUPT'],
      ],
    );
    assert.equal((await runCli(['verify', join(tempDir(), 'missing.ssx')])).code, 11);
  });
});
