import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXACT, runChild, type ContractContext } from './context.js';
import { tempDir } from '../helpers/tmp.js';

/** Adds: add-if-absent answers, and one answer per URL across processes. */
export function addsContract(ctx: ContractContext): void {
  test('add-if-absent: new exactly once, duplicates within a call new once, never a false negative', async () => {
    const { store } = await ctx.open();
    try {
      const scope = store.scope('s', EXACT);
      const input = [...ctx.urls.slice(0, 5_000), ...ctx.urls.slice(0, 100)];
      const first = await scope.addIfAbsent(input);
      assert.equal(first.filter(Boolean).length, 5_000);
      assert.ok(
        first.slice(5_000).every((fresh) => !fresh),
        'a duplicate within the call was new twice',
      );
      const again = await scope.addIfAbsent(ctx.urls.slice(0, 6_000));
      assert.equal(again.slice(0, 5_000).filter(Boolean).length, 0, 'a URL was new twice');
      assert.equal(again.slice(5_000).filter(Boolean).length, 1_000);
      assert.ok((await scope.has(ctx.urls.slice(0, 6_000))).every(Boolean), 'a false negative');
      assert.equal((await scope.stats()).epochs[0]!.added, 6_000);
    } finally {
      await store.close();
    }
  });

  const shared = ctx.capabilities.sharedAcrossProcesses
    ? false
    : `the ${ctx.factory.name} driver's stores live in one process`;
  test('several processes on overlapping inputs: every URL reported new by exactly one of them', {
    skip: shared,
  }, async () => {
    const { store: first, location } = await ctx.open();
    await first.close();
    const dir = tempDir('seenstore-contract-');
    const all = ctx.urls.slice(0, 9_000);
    // Three processes, each with two thirds of the URLs in an order of its own: every URL is offered twice.
    const thirds = [0, 1, 2].map((p) => all.filter((_, i) => i % 3 !== p));
    const inputs = [
      thirds[0]!,
      [...thirds[1]!].reverse(),
      [...thirds[2]!.filter((_, i) => i % 2 === 1), ...thirds[2]!.filter((_, i) => i % 2 === 0)],
    ];
    const files = inputs.map((input, p) => {
      const file = join(dir, `input-${p}.txt`);
      writeFileSync(file, `${input.join('\n')}\n`);
      return file;
    });
    const printed = await Promise.all(files.map((file) => runChild(location, file, ctx.factory.options ?? {})));
    const seen = new Map<string, number>();
    for (const lines of printed) for (const url of lines) seen.set(url, (seen.get(url) ?? 0) + 1);
    assert.equal(seen.size, all.length, 'some URL was never reported new');
    const twice = [...seen].filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], 'URLs reported new by more than one process');
  });
}
