import { assert } from '../../errors.js';
import type { Driver, OpenOptions, StoreSettings } from '../driver.js';

/** The memory driver's own options. */
export interface MemoryOptions {
  /** The clock of frontier leases and of record times (the `clock` store setting; default Date.now). */
  readonly clock: () => number;
}

/**
 * `memory://NAME`: a store held in this process's memory, gone when the process ends; every
 * handle on one NAME in the process shares it. The reference driver: the smallest complete
 * backend, and fast for tests of the engine (docs/architecture.md "Writing a driver").
 */
export const memoryDriver: Driver<MemoryOptions> = Object.freeze({
  name: 'memory',
  schemes: ['memory'],
  capabilities: Object.freeze({
    persistent: false,
    durability: 'none',
    sharedAcrossProcesses: false,
    maintenance: false,
    offline: false,
    checkpoints: false,
    commitsBlockThread: false,
    frontierOrder: 'oldest-first',
    leaseClock: 'options',
    defaultStrategy: 'classic',
    storedBytes: (mBits: number) => Math.ceil(mBits / 8),
  }),
  parseOptions(settings: StoreSettings): MemoryOptions {
    const clock = settings.clock;
    assert(clock === undefined || typeof clock === 'function', 'the clock is a function (SeenStore.open checks)');
    return Object.freeze({ clock: (clock as (() => number) | undefined) ?? Date.now });
  },
  async open(location: string, common: OpenOptions, options: MemoryOptions) {
    const { MemoryBackend } = await import('./backend.js');
    return MemoryBackend.open(location, common, options);
  },
  redact: (location: string) => location,
  resolve: (location: string) => location,
  knownAbsent: async () => false,
});
