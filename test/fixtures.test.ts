import assert from 'node:assert/strict';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SeenStore } from '../src/index.js';
import { ROOT } from './helpers/data.js';
import { tempDir } from './helpers/tmp.js';

interface Expected {
  formatVersion: number;
  scope: string;
  epochs: { epoch: number; state: string; capacityUrls: number; fprTarget: number; submitted: number; added: number; slices: number; journalRecords: number }[];
  urls: Record<string, [string, number]>;
  neverSeenInAnyEpoch: number;
}

/** Regenerates the URL lists the fixture script used (synthetic, deterministic). */
function urls([tag, n]: [string, number]): string[] {
  return Array.from({ length: n }, (_, i) => `https://fixture.example/${tag}/${i}?q=${(i * 7919) % 1000}`);
}

/** Every released on-disk format keeps a frozen store; the tests open a copy, never the original. */
for (const format of ['format-1']) {
  describe(`frozen fixture ${format}`, () => {
    const fixture = join(ROOT, 'test', 'fixtures', format);
    const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as Expected;

    test('opens through a copy and answers as recorded', async () => {
      const dir = tempDir();
      cpSync(join(fixture, 'store'), dir, { recursive: true });
      const store = await SeenStore.open(dir);
      const scope = store.scope(expected.scope);
      const stats = scope.stats();
      for (const want of expected.epochs) {
        const got = stats.epochs.find((e) => e.epoch === want.epoch);
        assert.ok(got, `epoch ${want.epoch} missing`);
        for (const field of ['state', 'capacityUrls', 'fprTarget', 'submitted', 'added', 'slices', 'journalRecords'] as const) {
          assert.equal(got[field], want[field], `epoch ${want.epoch} ${field}`);
        }
      }
      const byEpoch: [number, string][] = [[1, 'epoch1'], [2, 'epoch2'], [3, 'epoch3']];
      for (const [epoch, list] of byEpoch) {
        assert.ok(scope.has(urls(expected.urls[list]!), { epochs: epoch }).every(Boolean), `epoch ${epoch} lost URLs`);
      }
      assert.equal(scope.has(urls(expected.urls.never!), { epochs: 'all' }).filter(Boolean).length, expected.neverSeenInAnyEpoch);
      // Still writable: new adds, a rotation, and the journal tail checkpointed on close.
      assert.deepEqual(await scope.addIfAbsent(['https://fixture.example/after-upgrade']), [true]);
      await scope.rotate();
      await store.close();
      const reopened = await SeenStore.open(dir);
      assert.ok(reopened.scope(expected.scope).has(['https://fixture.example/after-upgrade'], { epochs: 'previous' })[0]);
      await reopened.close();
    });
  });
}
