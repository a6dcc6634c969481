import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXACT, type ContractContext } from './context.js';
import { expectCode } from '../helpers/errors.js';
import { tempDir } from '../helpers/tmp.js';

/** Errors: every backend-independent code reachable (a closed store: closing.ts). */
export function errorsContract(ctx: ContractContext): void {
  test('every documented error code that does not depend on the backend is reachable', async () => {
    const { store } = await ctx.open();
    const dir = tempDir('seenstore-contract-');
    try {
      const scope = store.scope('s', EXACT);
      await expectCode('USAGE', () => scope.has(['x'], { mode: 'some' as 'any' }));
      await expectCode('USAGE', () => store.scope('-bad'));
      await expectCode('NOT_FOUND', () => scope.epoch(1));
      await expectCode('INVALID_URL', () => scope.addIfAbsent([ctx.urls[0]!, '']));
      assert.deepEqual(await store.scopeNames(), [], 'a refused batch created its scope');
      assert.deepEqual(await scope.has([ctx.urls[0]!]), [false], 'a refused batch recorded a URL');
      await scope.add(ctx.urls.slice(0, 10));
      await expectCode('NOT_FOUND', () => scope.epoch(7));
      await scope.rotate();
      await expectCode('EPOCH_SEALED', () => scope.add(ctx.urls.slice(10, 20), { epoch: 1 }));
      await expectCode('EPOCH_SEALED', () => scope.merge([join(dir, 'none.ssx')], 1));
      await expectCode('CAPACITY_EXCEEDED', () =>
        store.scope('huge', { capacityUrls: 1e13, fprTarget: 1e-12 }).add(['https://a.example/']),
      );
      const file = join(dir, 'e.ssx');
      await scope.export(file);
      const bytes = readFileSync(file);
      bytes[bytes.length - 3]! ^= 0xff;
      writeFileSync(join(dir, 'damaged.ssx'), bytes);
      await expectCode('STORE_CORRUPT', () => store.import(join(dir, 'damaged.ssx'), { scope: 'damaged' }));
      assert.deepEqual((await store.scopeNames()).includes('damaged'), false, 'a damaged file imported something');
      const aborted = new AbortController();
      aborted.abort();
      await expectCode('INTERRUPTED', () => store.import(file, { scope: 'stopped', signal: aborted.signal }));
      assert.deepEqual((await store.scopeNames()).includes('stopped'), false, 'an interrupted import left a scope');
    } finally {
      await store.close();
    }
  });
}
