import { contractSuite } from './contract/suite.js';
import { tempDir } from './helpers/tmp.js';

// The storage contract on the LMDB backend: a store is a fresh temporary directory.
contractSuite({ name: 'lmdb', location: async () => tempDir('seenstore-contract-lmdb-') });
