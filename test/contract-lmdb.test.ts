import { SeenStore } from '../src/index.js';
import { lmdbDriver } from '../src/store/lmdb/driver.js';
import { contractSuite } from './contract/suite.js';
import { tempDir } from './helpers/tmp.js';

// The storage contract on the LMDB driver: a store is a fresh temporary directory.
contractSuite({
  name: 'lmdb',
  capabilities: lmdbDriver.capabilities,
  open: async (options) => SeenStore.open(tempDir('seenstore-contract-lmdb-'), options),
});
