import { describe } from 'node:test';
import { addsContract } from './adds.js';
import { closingContract } from './closing.js';
import { contractContext, type StoreFactory } from './context.js';
import { countingContract } from './counting.js';
import { errorsContract } from './errors.js';
import { frontierContract } from './frontier.js';
import { growthContract } from './growth.js';
import { keysContract } from './keys.js';
import { nodesContract } from './nodes.js';
import { politenessContract } from './politeness.js';
import { queuesContract } from './queues.js';
import { revisitsContract } from './revisits.js';
import { rotationContract } from './rotation.js';
import { scopesContract } from './scopes.js';
import { transferContract } from './transfer.js';

export type { StoreFactory } from './context.js';

/**
 * The behaviour of SeenStore and Scope that does not depend on where the bits live, written once
 * and run against every driver (in the manner of abstract-level's test suite), one module per
 * group of operations. A driver's test file calls `contractSuite` with a factory of fresh, opened
 * stores and its capabilities, which select and shape the tests (a store that lives in one process
 * skips the test of several processes; a frontier ordered per partition is checked as such). What
 * only one backend does (kill -9 at named points, snapshots, migrations, frozen fixtures, verify)
 * is tested beside it.
 */
export function contractSuite(factory: StoreFactory): void {
  const ctx = contractContext(factory);
  describe(`storage contract: ${factory.name}`, () => {
    describe('adds', () => addsContract(ctx));
    describe('rotation', () => rotationContract(ctx));
    describe('growth', () => growthContract(ctx));
    describe('transfer', () => transferContract(ctx));
    describe('counting', () => countingContract(ctx));
    describe('keys', () => keysContract(ctx));
    describe('frontier', () => frontierContract(ctx));
    describe('queues', () => queuesContract(ctx));
    describe('politeness', () => politenessContract(ctx));
    describe('revisits', () => revisitsContract(ctx));
    describe('scopes', () => scopesContract(ctx));
    describe('nodes', () => nodesContract(ctx));
    describe('errors', () => errorsContract(ctx));
    describe('closing', () => closingContract(ctx));
  });
}
