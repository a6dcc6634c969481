import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { SeenStore, SeenStoreOptions } from '../../src/index.js';
import type { Capabilities } from '../../src/store/driver.js';
import { ROOT, sharedUrls } from '../helpers/data.js';

/**
 * What a backend's test file gives the storage contract: its driver's capabilities (which select
 * and shape the contract's tests) and a factory of fresh, empty, opened stores.
 */
export interface StoreFactory {
  /** The backend's name, in the suite's title. */
  readonly name: string;
  readonly capabilities: Capabilities;
  /** A fresh, empty store, opened with `options` (and whatever the backend needs). */
  readonly open: (options?: SeenStoreOptions) => Promise<SeenStore>;
  /** Options of every open of this backend (child processes open with them too). */
  readonly options?: SeenStoreOptions;
}

/** What every group of the contract uses: the factory, the URLs, and checks shaped by the capabilities. */
export interface ContractContext {
  readonly factory: StoreFactory;
  readonly capabilities: Capabilities;
  /** A fresh store and its location (store.dir, for another handle or a child process). */
  readonly open: () => Promise<{ store: SeenStore; location: string }>;
  readonly urls: readonly string[];
  /** URLs none of `urls`: probes for false positives. */
  readonly others: readonly string[];
  /** `taken` are the first of `queued` to be handed out: exactly them in order (oldest first), else as many, all distinct, all queued. */
  readonly takenFirst: (taken: readonly string[], queued: readonly string[], message: string) => void;
  /** The same URLs, in order where the backend orders the whole frontier. */
  readonly sameTaken: (actual: readonly string[], expected: readonly string[], message: string) => void;
}

/**
 * Time as a store sees it, moved only by the test: a fake clock (SeenStoreOptions.clock) that
 * `advance` moves, so no test waits for time to pass and none depends on the machine's speed.
 * Stores that time leases in this process read it; a server that keeps time (Redis: `leaseClock`
 * 'server') takes its time as now in each call of a store opened with it (docs/redis.md, "Time").
 */
export interface TestTime {
  /** The options that give a store this clock (with the factory's own). */
  readonly options: SeenStoreOptions;
  /** One delay unit, in ms. */
  readonly unit: number;
  now(): number;
  advance(ms: number): void;
}

export function testTime(): TestTime {
  let nowMs = Date.UTC(2026, 10, 26, 12);
  return {
    options: { clock: () => nowMs },
    unit: 1_000,
    now: () => nowMs,
    advance: (ms) => void (nowMs += ms),
  };
}

/** A fresh store on its own test clock. */
export async function openTimed(factory: StoreFactory): Promise<{ store: SeenStore; time: TestTime }> {
  const time = testTime();
  return { store: await factory.open({ ...factory.options, ...time.options }), time };
}

/** Sized so that a false positive is all but impossible: answers can be compared exactly. */
export const EXACT = { capacityUrls: 200_000, fprTarget: 1e-9 } as const;

export function contractContext(factory: StoreFactory): ContractContext {
  const oldestFirst = factory.capabilities.frontierOrder === 'oldest-first';
  return {
    factory,
    capabilities: factory.capabilities,
    open: async () => {
      const store = await factory.open();
      return { store, location: store.dir };
    },
    urls: sharedUrls('crawl-sitelist-15k.txt'),
    others: sharedUrls('crawl-benign-35k.txt'),
    takenFirst: (taken, queued, message) => {
      if (oldestFirst) {
        assert.deepEqual(taken, queued.slice(0, taken.length), message);
        return;
      }
      assert.equal(new Set(taken).size, taken.length, message);
      assert.ok(
        taken.every((url) => queued.includes(url)),
        message,
      );
    },
    sameTaken: (actual, expected, message) => {
      assert.deepEqual(
        oldestFirst ? actual : [...actual].sort(),
        oldestFirst ? expected : [...expected].sort(),
        message,
      );
    },
  };
}

/** The library's own entry, for child processes. */
const CHILD = join(ROOT, 'dist', 'test', 'contract', 'child.js');

/** Runs the contract's child process: adds FILE's URLs to scope `s` in batches, prints the new ones. */
export function runChild(location: string, file: string, options: SeenStoreOptions): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, location, file, JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out.split('\n').filter((line) => line.length > 0))
        : reject(new Error(`contract child exited ${code}: ${err}`)),
    );
  });
}
