import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { SeenStoreError } from '../src/index.js';
import type { ServedStore } from '../src/server/served-store.js';
import { openServedStore, runsOnStoreThread } from '../src/server/store-spec.js';
import { unpackError, type PackedError } from '../src/server/thread-error.js';
import { PartlyDecided } from '../src/store/backend.js';
import type { DriverManifest } from '../src/store/driver.js';
import { driverFor } from '../src/store/open.js';
import { tempDir } from './helpers/tmp.js';

/**
 * serve's store thread (src/server/store-thread.ts): which stores run on one, chosen from the
 * driver's manifest, and errors that come back from it as the library threw them.
 */

/** What a caller can see of an error: its classes, fields, text, the top of its stack, its causes. */
function shape(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return { value: error };
  return {
    seenStoreError: error instanceof SeenStoreError,
    partlyDecided: error instanceof PartlyDecided,
    typeError: error instanceof TypeError,
    exitCode: error instanceof SeenStoreError ? error.exitCode : undefined,
    name: error.name,
    message: error.message,
    fields: { ...error },
    // The frame that threw: the store thread's, not the frame that revived the error.
    thrownAt: error.stack?.split('\n')[1]?.trim(),
    cause: 'cause' in error && depth < 20 ? shape(error.cause, depth + 1) : 'none',
  };
}

async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  assert.fail('the call did not fail');
}

/** Each failing call, made on a fresh handle of the same store. */
const FAILURES: ReadonlyArray<[string, (store: ServedStore) => Promise<unknown>]> = [
  ['USAGE from the frontier', async (store) => (await store.scope('s', {})).frontier().take(1, { perQueue: 0 })],
  ['NOT_FOUND from a scope', async (store) => (await store.scope('absent', {})).epoch(1)],
  ['a TypeError (misuse)', async (store) => (await store.scope('s', {})).rotate({ ifEpoch: 0 })],
  ['a scope name that is refused', async (store) => store.scope('', {})],
  // snapshots/ is a file: IO_ERROR, caused by the file system's own error (code, errno, syscall, path).
  ['the file system refusing a snapshot', async (store) => store.snapshot('nightly')],
];

describe('serve: the store thread', () => {
  it('returns every error as the library threw it on the server thread: class, code, fields, message, stack, causes', async () => {
    const dir = join(tempDir(), 'store');
    const inline = await openServedStore(dir, {}, false);
    await (await inline.scope('s', {})).enqueue(['http://a.test/1']);
    writeFileSync(join(dir, 'snapshots'), 'not a directory');
    const expected = [];
    for (const [, call] of FAILURES) expected.push(shape(await failure(() => call(inline))));
    await inline.close();
    const thread = await openServedStore(dir, {}, true);
    try {
      for (const [i, [what, call]] of FAILURES.entries()) {
        assert.deepEqual(
          shape(await failure(() => call(thread))),
          expected[i],
          `${what}: the error changed crossing the thread`,
        );
      }
    } finally {
      await thread.close();
    }
    assert.equal(
      (expected[2] as { typeError: boolean }).typeError,
      true,
      'the misuse case is not a TypeError: the table tests something else',
    );
    const snapshotFailure = expected[4] as {
      fields: { code?: string };
      cause: { fields: { code?: string; syscall?: string } };
    };
    assert.equal(snapshotFailure.fields.code, 'IO_ERROR', 'the snapshot case is not the store error it means to test');
    assert.deepEqual(
      [snapshotFailure.cause.fields.code, snapshotFailure.cause.fields.syscall],
      ['ENOTDIR', 'mkdir'],
      'the snapshot case is not caused by the file system error it means to test',
    );
  });

  it("carries cause chains, SeenStoreError subclasses and their fields across a thread, each revived as this thread's class", async () => {
    // Errors made and packed on another thread, with that thread's own copies of the classes.
    const module = (path: string): string => JSON.stringify(new URL(path, import.meta.url).href);
    const worker = new Worker(
      `(async () => {
        const { parentPort } = require('node:worker_threads');
        const { packError } = await import(${module('../src/server/thread-error.js')});
        const { SeenStoreError } = await import(${module('../src/errors.js')});
        const { PartlyDecided } = await import(${module('../src/store/backend.js')});
        const system = Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync', cause: new TypeError('inner') });
        const io = new SeenStoreError('IO_ERROR', 'committing a batch: EIO', { cause: system });
        const partly = new PartlyDecided('epoch 3 was sealed', Uint8Array.of(1, 0, 1), 2);
        const loop = new SeenStoreError('INTERNAL', 'its own cause');
        Object.defineProperty(loop, 'cause', { value: loop });
        const odd = Object.assign(new RangeError('odd fields'), { callback: () => 1, when: new Date(0), cause: { plain: true } });
        parentPort.postMessage([io, partly, loop, odd, 'a thrown string'].map((error) => packError(error)));
      })();`,
      { eval: true },
    );
    const packed = await new Promise<PackedError[]>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    const [io, partly, loop, odd, text] = packed.map(unpackError) as [
      SeenStoreError,
      PartlyDecided,
      SeenStoreError,
      RangeError,
      Error,
    ];

    assert.ok(io instanceof SeenStoreError);
    assert.equal(io.code, 'IO_ERROR');
    assert.equal(io.exitCode, 10);
    assert.equal(io.message, 'committing a batch: EIO');
    const system = io.cause as Error & { code: string; errno: number; syscall: string };
    assert.ok(system instanceof Error && !(system instanceof SeenStoreError));
    assert.deepEqual(
      [system.message, system.code, system.errno, system.syscall],
      ['EIO: i/o error, fsync', 'EIO', -5, 'fsync'],
    );
    assert.ok(system.cause instanceof TypeError && system.cause.message === 'inner', 'the cause of the cause was lost');

    assert.ok(partly instanceof PartlyDecided, 'the subclass was lost');
    assert.ok(partly instanceof SeenStoreError);
    assert.equal(partly.code, 'EPOCH_SEALED');
    assert.deepEqual([...partly.decided], [1, 0, 1]);
    assert.equal(partly.added, 2);
    assert.equal('cause' in partly, false, 'a cause appeared that the error did not have');

    let depth = 0;
    for (let at: unknown = loop; at instanceof Error && 'cause' in at; at = at.cause) depth++;
    assert.ok(depth >= 2 && depth <= 20, `an error that is its own cause crossed as a chain ${depth} long`);

    assert.ok(odd instanceof RangeError);
    assert.equal(
      (odd as unknown as { callback: unknown }).callback,
      '() => 1',
      'a field no clone carries crosses as its text',
    );
    assert.deepEqual((odd as unknown as { when: unknown }).when, new Date(0));
    assert.deepEqual(odd.cause, { plain: true });

    assert.ok(text instanceof Error);
    assert.equal(text.message, 'a thrown string');
  });

  it("runs a store on its own thread when its driver's commits block the thread, read from the manifest and not the name", async () => {
    for (const location of [join(tempDir(), 'store'), 'redis://127.0.0.1:1', 'memory://m']) {
      const driver = driverFor(location);
      assert.equal(runsOnStoreThread(driver, true), driver.capabilities.commitsBlockThread, driver.name);
      assert.equal(runsOnStoreThread(driver, false), false, `${driver.name}: SEENSTORE_SERVE_INLINE=1 is not obeyed`);
      const flipped: DriverManifest = {
        ...driver,
        capabilities: { ...driver.capabilities, commitsBlockThread: !driver.capabilities.commitsBlockThread },
      };
      assert.equal(
        runsOnStoreThread(flipped, true),
        flipped.capabilities.commitsBlockThread,
        `${driver.name}: chosen by name, not by the manifest`,
      );
    }
    assert.deepEqual(
      ['lmdb', 'redis', 'memory'].map((name) => [
        name,
        driverFor(name === 'lmdb' ? 'dir' : `${name}://x`).capabilities.commitsBlockThread,
      ]),
      [
        ['lmdb', true],
        ['redis', false],
        ['memory', false],
      ],
    );

    // The choice as openServedStore makes it: a worker thread is started for LMDB only.
    let workers = 0;
    const count = (): void => {
      workers++;
    };
    process.on('worker', count);
    try {
      for (const [location, thread, expected] of [
        [join(tempDir(), 'store'), true, 1],
        [join(tempDir(), 'store'), false, 0],
        ['memory://served', true, 0],
      ] as const) {
        workers = 0;
        const store = await openServedStore(location, {}, thread);
        try {
          assert.deepEqual(
            await (await store.scope('s', {})).addIfAbsentUtf8({
              bytes: new TextEncoder().encode('http://a.test/'),
              ranges: Uint32Array.of(0, 14),
              count: 1,
            }),
            [true],
          );
        } finally {
          await store.close();
        }
        assert.equal(workers, expected, `${location} (thread allowed: ${thread}) started ${workers} threads`);
      }
    } finally {
      process.off('worker', count);
    }
  });
});
