import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CALL_BYTES_MAX, callParts } from '../src/store/redis/call-parts.js';

test('Redis calls in parts of bounded items and bytes, in order, an oversized item alone', () => {
  const quarter = CALL_BYTES_MAX / 4;
  // 10 items of a quarter each: parts of 4 (the fifth would pass the bound), then 4, then 2.
  assert.deepEqual(
    callParts(10, () => quarter, 100),
    [
      { from: 0, to: 4 },
      { from: 4, to: 8 },
      { from: 8, to: 10 },
    ],
  );
  assert.deepEqual(
    callParts(5, () => 1, 2),
    [
      { from: 0, to: 2 },
      { from: 2, to: 4 },
      { from: 4, to: 5 },
    ],
  );
  const sizes = [1, 2 * CALL_BYTES_MAX, 1, 1];
  assert.deepEqual(
    callParts(sizes.length, (i) => sizes[i]!, 100),
    [
      { from: 0, to: 1 },
      { from: 1, to: 2 },
      { from: 2, to: 4 },
    ],
  );
  assert.deepEqual(
    callParts(0, () => 1, 10),
    [],
  );
});
