import assert from 'node:assert/strict';
import { SeenStoreError } from '../../src/index.js';

/** Runs `action` (sync or async) and returns its SeenStoreError, failing unless it throws one with `code`. */
export async function expectCode(code: string, action: () => unknown): Promise<SeenStoreError> {
  try {
    await action();
  } catch (error) {
    assert.ok(error instanceof SeenStoreError, `expected a SeenStoreError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected ${code}`);
}
