import { SeenStore } from '../src/index.js';
import { memoryDriver } from '../src/store/memory/driver.js';
import { contractSuite } from './contract/suite.js';

// The storage contract on the memory driver: a store is a fresh name.
let stores = 0;
contractSuite({
  name: 'memory',
  capabilities: memoryDriver.capabilities,
  open: async (options) => SeenStore.open(`memory://contract-${process.pid}-${++stores}`, options),
});
