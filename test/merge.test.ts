import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { runCli } from './helpers/cli.js';
import { binomialUpper, sharedUrls } from './helpers/data.js';
import { expectCode } from './helpers/errors.js';
import { tempDir } from './helpers/tmp.js';

const SITELIST = sharedUrls('crawl-sitelist-15k.txt');
const BENIGN = sharedUrls('crawl-benign-35k.txt');
const SITELIST_SET = new Set(SITELIST);
/** Benign URLs that are not in the sitelist: never added in these tests, so any hit is a false positive. */
const NEVER_ADDED = BENIGN.filter((url) => !SITELIST_SET.has(url));
const PLAN = { capacityUrls: 40_000, fprTarget: 0.01 };

/** A crawler's store whose scope `crawl` was created with `seeds` and holds `urls`; returns its export. */
async function crawler(urls: readonly string[], seeds: readonly string[]): Promise<string> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  const scope = store.scope('crawl', { ...PLAN, seeds });
  await scope.add(urls);
  const file = join(tempDir(), 'part.ssx');
  await scope.export(file);
  await store.close();
  return file;
}

/** The coordinator: scope `crawl` with `urls`, and the seeds of its open epoch. */
async function coordinator(urls: readonly string[]): Promise<{ dir: string; seeds: string[] }> {
  const dir = tempDir();
  const store = await SeenStore.open(dir);
  const scope = store.scope('crawl', PLAN);
  await scope.add(urls);
  const seeds = [...(await scope.epoch(1)).sliceDetails[0]!.seeds];
  await store.close();
  return { dir, seeds };
}

describe('merge', () => {
  test('parallel crawlers sharing seeds: the merged epoch holds the union, other handles see it, FPR stays at theory', async () => {
    const parts = [SITELIST.slice(0, 5000), SITELIST.slice(5000, 10_000), SITELIST.slice(10_000)];
    const { dir, seeds } = await coordinator(parts[0]!);
    const files = [await crawler(parts[1]!, seeds), await crawler(parts[2]!, seeds)];

    const watcher = await SeenStore.open(dir);
    assert.equal(
      (await watcher.scope('crawl').has(parts[1]!)).filter(Boolean).length < 200,
      true,
      'before the merge the watcher lacks part 1',
    );
    const store = await SeenStore.open(dir);
    const result = await store.scope('crawl').merge(files, 1);
    assert.equal(result.files, 2);
    assert.ok(Math.abs(result.estimatedNewUrls - 10_000) < 300, `estimated new URLs ${result.estimatedNewUrls}`);
    // No false negatives for either side, in this handle and in one loaded before the merge.
    assert.ok((await store.scope('crawl').has(SITELIST)).every(Boolean));
    assert.ok(
      (await watcher.scope('crawl').has(SITELIST)).every(Boolean),
      'a handle loaded before the merge reloads the merged chunks',
    );
    assert.deepEqual((await watcher.scope('crawl').addIfAbsent(parts[2]!.slice(0, 100))).filter(Boolean), []);
    const falsePositives = (await store.scope('crawl').has(NEVER_ADDED)).filter(Boolean).length;
    const fpr = (await store.scope('crawl').epoch(1)).estimatedFpr;
    assert.ok(
      falsePositives <= binomialUpper(NEVER_ADDED.length, fpr),
      `${falsePositives} false positives at estimated FPR ${fpr}`,
    );
    await watcher.close();
    await store.close();
    // Survives reopen, and the merged URLs count toward the epoch's capacity.
    const reopened = await SeenStore.open(dir);
    assert.ok((await reopened.scope('crawl').has(SITELIST)).every(Boolean));
    assert.ok((await reopened.scope('crawl').epoch(1)).sliceDetails[0]!.added > 14_000);
    assert.ok((await reopened.verify()).ok);
    await reopened.close();
  });

  test('merge FILE... --out writes the union; imported, it has no false negatives for any side', async () => {
    const { dir, seeds } = await coordinator(['https://coordinator.example/']);
    const parts = [SITELIST.slice(0, 7000), SITELIST.slice(7000), NEVER_ADDED.slice(0, 10_000)];
    const files = await Promise.all(parts.map((part) => crawler(part, seeds)));
    const out = join(tempDir(), 'union.ssx');
    const merged = await runCli(['merge', ...files, '--out', out, '--json']);
    assert.equal(merged.code, 0, merged.stderr);
    const result = JSON.parse(merged.stdout);
    assert.equal(result.files, 3);
    assert.ok(Math.abs(result.estimatedDistinct - 25_000) < 500, String(result.estimatedDistinct));
    const imported = await runCli(['import', out, '--store', dir, '--scope', 'union']);
    assert.equal(imported.code, 0, imported.stderr);
    const store = await SeenStore.open(dir);
    assert.ok(
      (await store.scope('union').has([...SITELIST, ...NEVER_ADDED.slice(0, 10_000)], { epochs: 1 })).every(Boolean),
    );
    await store.close();
    assert.equal((await runCli(['verify', out])).code, 0);
  });

  test('incompatible inputs are refused with INCOMPATIBLE naming the mismatch, and nothing changes', async () => {
    const { dir, seeds } = await coordinator(SITELIST.slice(0, 1000));
    const otherSeeds = await crawler(SITELIST.slice(1000, 2000), ['0123456789abcdef']);
    const otherSize = await (async () => {
      const d = tempDir();
      const s = await SeenStore.open(d);
      const scope = s.scope('crawl', { capacityUrls: 80_000, fprTarget: 0.01, seeds });
      await scope.add(SITELIST.slice(1000, 2000));
      const file = join(tempDir(), 'size.ssx');
      await scope.export(file);
      await s.close();
      return file;
    })();
    const good = await crawler(SITELIST.slice(2000, 3000), seeds);
    const store = await SeenStore.open(dir);
    const scope = store.scope('crawl');
    const before = await scope.has(SITELIST);
    assert.match((await expectCode('INCOMPATIBLE', () => scope.merge([good, otherSeeds]))).message, /slice 0 seeds/);
    assert.match((await expectCode('INCOMPATIBLE', () => scope.merge([otherSize]))).message, /slice 0 geometry/);
    assert.deepEqual(await scope.has(SITELIST), before, 'a refused merge writes nothing, not even the compatible file');
    await store.close();
    const cli = await runCli(['merge', good, otherSeeds, '--into-epoch', '1', '--store', dir, '--scope', 'crawl']);
    assert.equal(cli.code, 13);
    assert.match(cli.stderr, /^seenstore: error INCOMPATIBLE: cannot merge .*seeds/);
    const files = await runCli(['merge', good, otherSeeds, '--out', join(tempDir(), 'x.ssx')]);
    assert.equal(files.code, 13);
  });

  test('a sealed epoch never changes: merging into it is refused with EPOCH_SEALED', async () => {
    const { dir, seeds } = await coordinator(SITELIST.slice(0, 1000));
    const file = await crawler(SITELIST.slice(1000, 2000), seeds);
    const store = await SeenStore.open(dir);
    await store.scope('crawl').rotate();
    await expectCode('EPOCH_SEALED', () => store.scope('crawl').merge([file], 1));
    await expectCode('NOT_FOUND', () => store.scope('crawl').merge([file], 9));
    // The new open epoch has fresh seeds: the old epoch's export no longer fits it.
    await expectCode('INCOMPATIBLE', () => store.scope('crawl').merge([file]));
    await store.close();
  });

  test('a crash before the merge commits leaves the epoch as it was', async () => {
    const { dir, seeds } = await coordinator(SITELIST.slice(0, 1000));
    const file = await crawler(SITELIST.slice(1000, 6000), seeds);
    const script = `
      import { SeenStore } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
      import { setFaultHook } from ${JSON.stringify(new URL('../src/store/faults.js', import.meta.url).href)};
      setFaultHook((point) => { if (point === 'merge:before-commit') process.kill(process.pid, 'SIGKILL'); });
      const store = await SeenStore.open(process.argv[1]);
      await store.scope('crawl').merge([process.argv[2]]);`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir, file], { encoding: 'utf8' });
    assert.equal(child.signal, 'SIGKILL', child.stderr);
    const store = await SeenStore.open(dir);
    assert.ok((await store.scope('crawl').has(SITELIST.slice(1000, 6000))).filter(Boolean).length < 100);
    await store.scope('crawl').merge([file]);
    assert.ok((await store.scope('crawl').has(SITELIST.slice(0, 6000))).every(Boolean));
    await store.close();
  });
});

describe('shared seeds from the CLI', () => {
  test('add --seeds creates the scope with them, epoch rotate --seeds opens the next with them; bad seeds exit 2', async () => {
    const dir = tempDir();
    const seed = '00112233445566ff';
    assert.equal(
      (await runCli(['add', '--store', dir, '--scope', 's', '--seeds', seed], 'https://a.example/\n')).code,
      0,
    );
    assert.match((await runCli(['epoch', 'show', '1', '--store', dir, '--scope', 's'])).stdout, new RegExp(seed));
    const rotated = await runCli([
      'epoch',
      'rotate',
      '--store',
      dir,
      '--scope',
      's',
      '--seeds',
      'ffeeddccbbaa9988',
      '--json',
    ]);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.deepEqual(JSON.parse(rotated.stdout).opened.sliceDetails[0].seeds, ['ffeeddccbbaa9988']);
    for (const bad of ['xyz', '00112233445566FF', '0011223344556677,8899aabbccddeeff', '']) {
      const out = await runCli(['add', '--store', dir, '--scope', 't', '--seeds', bad], 'https://a.example/\n');
      assert.equal(out.code, 2, `${bad}: ${out.stderr}`);
    }
  });
});

describe('diff --against (reconciliation with another machine)', () => {
  test('prints every URL the other side lacks except about its FPR share, never one it has', async () => {
    const dir = tempDir();
    const store = await SeenStore.open(dir);
    const scope = store.scope('remote', { capacityUrls: 12_000, fprTarget: 0.01 });
    await scope.add(SITELIST.slice(0, 10_000));
    const file = join(tempDir(), 'remote.ssx');
    await scope.export(file);
    await store.close();

    const input = `${SITELIST.join('\n')}\n`;
    const out = await runCli(['diff', '--against', file], input);
    assert.equal(out.code, 0, out.stderr);
    const printed = out.stdout.split('\n').filter(Boolean);
    const held = new Set(SITELIST.slice(0, 10_000));
    assert.deepEqual(
      printed.filter((url) => held.has(url)),
      [],
      'a URL the other side has is never printed (no false negatives of the filter)',
    );
    const lacking = SITELIST.slice(10_000);
    const missed = lacking.length - printed.length;
    assert.ok(missed >= 0 && missed <= binomialUpper(lacking.length, 0.01), `${missed} unseen URLs held back`);
    assert.match(out.stderr, /not seen there \(certain\).*FPR/);

    const json = JSON.parse((await runCli(['diff', '--against', file, '--json'], input)).stdout);
    assert.equal(json.notSeenByOther, printed.length);
    assert.equal(json.probablySeenByOther, SITELIST.length - printed.length);
    assert.ok(json.falseNegativeRate > 0.001 && json.falseNegativeRate < 0.02, String(json.falseNegativeRate));
    assert.ok(Math.abs(json.expectedMissed - missed) < binomialUpper(lacking.length, 0.01));

    const bad = await runCli(['diff', '--against', file, '--from', '1'], input);
    assert.equal(bad.code, 2);
  });
});
