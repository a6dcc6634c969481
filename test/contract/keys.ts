import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeenStore } from '../../src/index.js';
import { utf8Lines } from '../helpers/data.js';
import { expectCode } from '../helpers/errors.js';
import { EXACT, type ContractContext } from './context.js';

/** Keys: URLs by default (format 4), raw on request; the mode is the epoch's, kept by rotation and reopening. */
export function keysContract(ctx: ContractContext): void {
  test('keys: URLs by default (trimmed, others INVALID_URL), raw any string; recorded in the header, kept by rotation and reopening', async () => {
    const { store, location } = await ctx.open();
    const urls = ctx.urls;
    let again: SeenStore | undefined;
    try {
      const urlScope = store.scope('u', EXACT);
      await expectCode('INVALID_URL', () => urlScope.addIfAbsent([urls[0]!, 'not a url at all']));
      assert.deepEqual(await urlScope.addIfAbsent([urls[0]!, `  ${urls[0]!}\t`]), [true, false]);
      const raw = store.scope('r', { ...EXACT, keys: 'raw' });
      assert.deepEqual(await raw.addIfAbsent(['not a url at all', ' not a url at all']), [true, true]);
      await urlScope.rotate();
      await raw.rotate();
      // A second handle on the store: a reopening where the store outlives the process, else one
      // more handle on the same memory store.
      again = await SeenStore.open(location, ctx.factory.options ?? {});
      assert.deepEqual(
        (await again.scope('u').stats()).epochs.map((e) => e.normalize),
        ['url', 'url'],
      );
      assert.deepEqual(
        (await again.scope('r').stats()).epochs.map((e) => e.normalize),
        ['none', 'none'],
      );
      await expectCode('INVALID_URL', () => again!.scope('u').addIfAbsent(['/relative/path']));
      assert.deepEqual(await again.scope('r').addIfAbsent(['/relative/path']), [true]);
      assert.deepEqual(await again.scope('u').has([` ${urls[0]!}`], { epochs: 'all' }), [true]);
    } finally {
      await again?.close();
      await store.close();
    }
  });

  test('keys: a URL with a control character is INVALID_URL wherever it sits, on every path, and nothing of its call is written; raw keys take it', async () => {
    const { store } = await ctx.open();
    try {
      const scope = store.scope('c', EXACT);
      await scope.add([ctx.urls[0]!]);
      const filler = ctx.urls.slice(1, 2_001);
      // NUL, a tab and a CR inside, an ANSI escape (a real one of the package data set), DEL, an LF.
      const bad = [
        'https://a.example/\u0000x',
        'https://a.example/x\ty',
        'https://a.example/x\ry',
        'https://hithub.com\u001b[D\u001b[D/x',
        'https://a.example/x\u007f',
        'https://a.example/x\ny',
      ];
      for (const [b, url] of bad.entries()) {
        // First, in the middle, last: the kernel's pass finds it wherever it sits.
        const call = [...filler.slice(0, b * 400), url, ...filler.slice(b * 400)];
        await expectCode('INVALID_URL', () => scope.addIfAbsent(call));
        await expectCode('INVALID_URL', () => scope.add(call));
        await expectCode('INVALID_URL', () => scope.enqueue(call));
        await expectCode('INVALID_URL', () => scope.addIfAbsentUtf8(utf8Lines(call)));
        await expectCode('INVALID_URL', () => scope.has(call));
        await expectCode('INVALID_URL', () => scope.classify(call));
        await expectCode('INVALID_URL', () => scope.frontier().schedule([ctx.urls[1]!, url], 0));
      }
      // A call of several atomic steps is checked whole before its first step is written.
      const many = Array.from({ length: 70_000 }, (_, i) => `https://many.example/${i}`);
      await expectCode('INVALID_URL', () => scope.add([...many, bad[0]!]));
      await expectCode('INVALID_URL', () => scope.addIfAbsentUtf8(utf8Lines([...many, bad[1]!])));
      assert.ok(
        (await scope.has([...filler, many[0]!, many[69_999]!])).every((seen) => !seen),
        'a refused call recorded a URL',
      );
      assert.equal((await scope.stats()).epochs[0]!.submitted, 1);
      assert.equal((await scope.frontier().stats()).pending, 0, 'a refused enqueue or schedule queued a URL');
      // Whitespace around a URL is trimmed, as before; raw keys take any string.
      assert.deepEqual(await scope.addIfAbsent(['\thttps://trim.example/\r\n', 'https://trim.example/']), [
        true,
        false,
      ]);
      assert.deepEqual(
        await store.scope('raw', { ...EXACT, keys: 'raw' }).addIfAbsent(bad),
        bad.map(() => true),
      );
    } finally {
      await store.close();
    }
  });
}
